package postgres

import (
	"context"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
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

// TestMigrateFromVersion4 opens a database left at schema version 4 (before
// agents) with a dataset, a run and a result in it: Open applies version 5,
// the old rows read back without mocks or trajectories, and the new columns
// take values.
func TestMigrateFromVersion4(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	all, err := sqlstore.LoadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 5 || all[4].Name != "005_agents.sql" {
		t.Fatalf("migrations %d, want 005_agents.sql as the fifth", len(all))
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, pool, all[:4]); err != nil {
		pool.Close()
		t.Fatal(err)
	}
	it := &evalrun.Item{ID: "a", Input: evalrun.String("q"), Expected: evalrun.String("x")}
	plan, err := dataset.PlanVersion(false, nil, []*evalrun.Item{it})
	if err != nil {
		pool.Close()
		t.Fatal(err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO datasets VALUES ('old', 1, 1, now(), now())`, nil},
		{`INSERT INTO dataset_versions VALUES ('old', 1, now(), 1, 1, 0, 0)`, nil},
		{`INSERT INTO dataset_items (dataset, item_id, valid_from, ord, hash, input, expected) VALUES ('old', 'a', 1, $1, $2, $3, $4)`,
			[]any{plan.Insert[0].Key, plan.Insert[0].Hash, []byte(it.Input), []byte(it.Expected)}},
		{`INSERT INTO runs (id, name, dataset, dataset_version, target, scorers, status, total, succeeded, failed, skipped,
			persist_errors, error, created_at) VALUES ('old', 'n', 'old', 1, '{}', '[]', 'completed', 1, 1, 0, 0, 0, '', now())`, nil},
		{`INSERT INTO results (run_id, idx, rep, item_id, output, error, error_kind, attempts, retry_count, latency_ns, trace_id, cache_hit)
			VALUES ('old', 0, 0, 'a', '"x"'::bytea, '', '', 1, 0, 5, '', false)`, nil},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			pool.Close()
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	pool.Close()

	s, err := Open(ctx, url)
	if err != nil {
		t.Fatalf("Open of a version 4 database: %v", err)
	}
	defer s.Close()
	var version int
	if err := s.pool.QueryRow(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil || version != len(all) {
		t.Fatalf("schema version after Open = %d (%v), want %d", version, err, len(all))
	}
	storetest.MigratedAgents(t, s, "old")
}

// TestMigrateFromVersion5 opens a database left at schema version 5 (before
// experiments) with a run in it: Open applies version 6, the run reads back
// as a run on its own, and runs of an experiment can be stored beside it.
func TestMigrateFromVersion5(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	all, err := sqlstore.LoadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 6 || all[5].Name != "006_experiments.sql" {
		t.Fatalf("migrations %d, want 006_experiments.sql as the sixth", len(all))
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, pool, all[:5]); err != nil {
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
		t.Fatalf("Open of a version 5 database: %v", err)
	}
	defer s.Close()
	var version int
	if err := s.pool.QueryRow(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil || version != len(all) {
		t.Fatalf("schema version after Open = %d (%v), want %d", version, err, len(all))
	}
	storetest.MigratedExperimentFields(t, s, "old")
}
