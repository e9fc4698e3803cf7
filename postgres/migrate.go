package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/evalrun/evalrun/internal/sqlstore"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationFS holds the schema migrations, migrations/NNN_name.sql.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLock is the advisory lock key that serialises migrations.
const migrationLock = 0x6576616c72756e // "evalrun"

// migrate applies the pending migrations in one transaction, holding a
// transaction-scoped advisory lock so that processes opening the database
// at once take turns. It is the same small mechanism as the SQLite store's
// (see there why not goose), so both backends migrate alike.
func migrate(ctx context.Context, pool *pgxpool.Pool, migrations []sqlstore.Migration) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	var current int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if current > len(migrations) {
		return fmt.Errorf("migrate: the database has schema version %d, newer than this evalrun knows (%d): upgrade evalrun", current, len(migrations))
	}
	for _, m := range migrations[current:] {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate: apply %s: %w", m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("migrate: record %s: %w", m.Name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}
