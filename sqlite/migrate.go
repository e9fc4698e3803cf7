package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/evalrun/evalrun/internal/sqlstore"
)

// migrationFS holds the schema migrations, migrations/NNN_name.sql.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrate applies the pending migrations in one transaction. The writer's
// transactions begin IMMEDIATE, so two processes opening a new file at once
// take turns: the second finds the schema in place and applies nothing.
//
// This replaces goose (pressly/goose) for SQLite: goose has no lock for
// SQLite, so two processes opening a fresh file race on its version table
// (goose retries with one-second sleeps) and on the first migration (the
// second fails with "table already exists").
func migrate(ctx context.Context, db *sql.DB, migrations []sqlstore.Migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if current > len(migrations) {
		return fmt.Errorf("migrate: the database has schema version %d, newer than this evalrun knows (%d): upgrade evalrun", current, len(migrations))
	}
	// A file made from the template (freshDB) holds its migrations with
	// applied_at 0: they are applied now. Elsewhere this changes nothing.
	if _, err := tx.ExecContext(ctx, `UPDATE schema_migrations SET applied_at = ? WHERE applied_at = 0`, time.Now().UnixMicro()); err != nil {
		return fmt.Errorf("migrate: stamp the template's migrations: %w", err)
	}
	for _, m := range migrations[current:] {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate: apply %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, time.Now().UnixMicro()); err != nil {
			return fmt.Errorf("migrate: record %s: %w", m.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}
