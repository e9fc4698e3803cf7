package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/evalrun/evalrun/internal/sqlstore"
	"github.com/evalrun/evalrun/storetest"
)

// TestMigrateFromVersion1 opens a database left at schema version 1 with a
// run in it: Open applies the later migrations, the run reads back with
// concurrency 0, the new columns, the response cache and the stored reports work.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	all, err := sqlstore.LoadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Fatalf("%d migrations, want at least 2", len(all))
	}
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, db, all[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO runs (id, name, dataset, dataset_version, target, scorers, status, total, succeeded,
		failed, skipped, persist_errors, error, created_at) VALUES ('old', 'n', 'd', 1, CAST('{}' AS BLOB), CAST('[]' AS BLOB), 'completed', 1, 1, 0, 0, 0, '', 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open of a version 1 database: %v", err)
	}
	defer s.Close()
	var version int
	if err := s.reader.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil || version != len(all) {
		t.Fatalf("schema version after Open = %d (%v), want %d", version, err, len(all))
	}
	storetest.MigratedRun(t, s, "old")
}
