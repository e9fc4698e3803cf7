package postgres

import (
	"context"
	"testing"

	"github.com/evalrun/evalrun/internal/sqlstore"
	"github.com/evalrun/evalrun/postgres/pgtest"
	"github.com/evalrun/evalrun/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestMigrateFromVersion1 opens a database left at schema version 1 with a
// run in it: Open applies the later migrations, the run reads back with
// concurrency 0, the new column, the response cache and the stored reports
// work.
func TestMigrateFromVersion1(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	all, err := sqlstore.LoadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Fatalf("%d migrations, want at least 2", len(all))
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, pool, all[:1]); err != nil {
		pool.Close()
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO runs (id, name, dataset, dataset_version, target, scorers, status, total,
		succeeded, failed, skipped, persist_errors, error, created_at)
		VALUES ('old', 'n', 'd', 1, '{}', '[]', 'completed', 1, 1, 0, 0, 0, '', now())`); err != nil {
		pool.Close()
		t.Fatal(err)
	}
	pool.Close()

	s, err := Open(ctx, url)
	if err != nil {
		t.Fatalf("Open of a version 1 database: %v", err)
	}
	defer s.Close()
	var version int
	if err := s.pool.QueryRow(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil || version != len(all) {
		t.Fatalf("schema version after Open = %d (%v), want %d", version, err, len(all))
	}
	storetest.MigratedRun(t, s, "old")
}
