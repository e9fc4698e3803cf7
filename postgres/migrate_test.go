package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/postgres/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestMigrateFromVersion1 opens a database left at schema version 1 with a
// run in it: Open applies the later migrations, the run reads back with
// concurrency 0, the new column, the response cache and the stored reports
// work.
func TestMigrateFromVersion1(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	all, err := loadMigrations(migrationFS)
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
	old, err := s.GetRun(ctx, "old")
	if err != nil || old.Concurrency != 0 || old.Status != evalrun.RunCompleted {
		t.Fatalf("run stored before the migration: %+v, %v", old, err)
	}
	old.Concurrency = 6
	if err := s.UpdateRun(ctx, old); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetRun(ctx, "old"); got == nil || got.Concurrency != 6 {
		t.Fatalf("concurrency after UpdateRun = %+v, want 6", got)
	}
	if err := s.PutCached(ctx, "k", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.GetCached(ctx, "k"); err != nil || !ok || string(v) != "v" {
		t.Fatalf("GetCached after the migration = %q, %v, %v", v, ok, err)
	}
	if err := s.PutReportJSON(ctx, "old", []byte(`{"run":{"id":"old"}}`)); err != nil {
		t.Fatalf("PutReportJSON of a run stored before the migration: %v", err)
	}
	if v, err := s.GetReportJSON(ctx, "old"); err != nil || string(v) != `{"run":{"id":"old"}}` {
		t.Fatalf("GetReportJSON after the migration = %q, %v", v, err)
	}
}
