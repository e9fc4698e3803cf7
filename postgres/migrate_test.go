package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/internal/sqlstore"
	"github.com/evalrun/evalrun/postgres/pgtest"
	"github.com/evalrun/evalrun/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// stmt is a statement and its arguments.
type stmt struct {
	sql  string
	args []any
}

// oldRun is a completed run 'old' of dataset d, as a schema of version 1
// to 5 stores it.
var oldRun = stmt{sql: `INSERT INTO runs (id, name, dataset, dataset_version, target, scorers, status, total,
	succeeded, failed, skipped, persist_errors, error, created_at)
	VALUES ('old', 'n', 'd', 1, '{}', '[]', 'completed', 1, 1, 0, 0, 0, '', now())`}

// openFromVersion makes a database left at schema version n, whose next
// migration is named next (any when ""), runs stmts in it and opens it
// with Open, which must bring it to the last version. The store is closed
// when the test ends.
func openFromVersion(t *testing.T, n int, next string, stmts ...stmt) *Store {
	t.Helper()
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	all, err := sqlstore.LoadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) <= n {
		t.Fatalf("%d migrations, want at least %d", len(all), n+1)
	}
	if next != "" && all[n].Name != next {
		t.Fatalf("migration %d is %s, want %s", n+1, all[n].Name, next)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, pool, all[:n]); err != nil {
		pool.Close()
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			pool.Close()
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	pool.Close()

	s, err := Open(ctx, url)
	if err != nil {
		t.Fatalf("Open of a version %d database: %v", n, err)
	}
	t.Cleanup(func() { s.Close() })
	var version int
	if err := s.pool.QueryRow(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil || version != len(all) {
		t.Fatalf("schema version after Open = %d (%v), want %d", version, err, len(all))
	}
	return s
}

// TestMigrateFromVersion1 opens a database left at schema version 1 with a
// run in it: Open applies the later migrations, the run reads back with
// concurrency 0, the new column, the response cache and the stored reports
// work.
func TestMigrateFromVersion1(t *testing.T) {
	storetest.MigratedRun(t, openFromVersion(t, 1, "", oldRun), "old")
}

// TestMigrateFromVersion4 opens a database left at schema version 4 (before
// agents) with a dataset, a run and a result in it: Open applies version 5,
// the old rows read back without mocks or trajectories, and the new columns
// take values.
func TestMigrateFromVersion4(t *testing.T) {
	it := &evalrun.Item{ID: "a", Input: evalrun.String("q"), Expected: evalrun.String("x")}
	plan, err := dataset.PlanVersion(false, nil, []*evalrun.Item{it})
	if err != nil {
		t.Fatal(err)
	}
	s := openFromVersion(t, 4, "005_agents.sql",
		stmt{`INSERT INTO datasets VALUES ('old', 1, 1, now(), now())`, nil},
		stmt{`INSERT INTO dataset_versions VALUES ('old', 1, now(), 1, 1, 0, 0)`, nil},
		stmt{`INSERT INTO dataset_items (dataset, item_id, valid_from, ord, hash, input, expected) VALUES ('old', 'a', 1, $1, $2, $3, $4)`,
			[]any{plan.Insert[0].Key, plan.Insert[0].Hash, []byte(it.Input), []byte(it.Expected)}},
		stmt{`INSERT INTO runs (id, name, dataset, dataset_version, target, scorers, status, total, succeeded, failed, skipped,
			persist_errors, error, created_at) VALUES ('old', 'n', 'old', 1, '{}', '[]', 'completed', 1, 1, 0, 0, 0, '', now())`, nil},
		stmt{`INSERT INTO results (run_id, idx, rep, item_id, output, error, error_kind, attempts, retry_count, latency_ns, trace_id, cache_hit)
			VALUES ('old', 0, 0, 'a', '"x"'::bytea, '', '', 1, 0, 5, '', false)`, nil})
	storetest.MigratedAgents(t, s, "old")
}

// TestMigrateFromVersion5 opens a database left at schema version 5 (before
// experiments) with a run in it: Open applies version 6, the run reads back
// as a run on its own, and runs of an experiment can be stored beside it.
func TestMigrateFromVersion5(t *testing.T) {
	storetest.MigratedExperimentFields(t, openFromVersion(t, 5, "006_experiments.sql", oldRun), "old")
}

// TestListRunsExperimentIndex checks that ListRuns of one experiment reads
// the partial index runs_experiment, and that of every experiment's runs
// runs_in_experiment, in the generic plan a prepared statement may get
// (made without the parameters' values): the query states the indexes'
// condition. Sequential scans are turned off, as the planner would pick
// one on a table this small.
func TestListRunsExperimentIndex(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for f, index := range map[evalrun.RunFilter]string{
		{Experiment: "exp-a"}:                          "runs_experiment",
		{Experiment: "exp-a", Limit: 3, Dataset: "qa"}: "runs_experiment",
		{InExperiment: true}:                           "runs_in_experiment",
		{InExperiment: true, Limit: 5}:                 "runs_in_experiment",
	} {
		query, args := listRunsQuery(f)
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		plan := ""
		for _, q := range []string{`DEALLOCATE ALL`, `SET LOCAL enable_seqscan = off`, `SET LOCAL plan_cache_mode = force_generic_plan`,
			`PREPARE list_runs AS ` + query} {
			if _, err := tx.Exec(ctx, q); err != nil {
				tx.Rollback(ctx)
				t.Fatalf("%s: %v", q, err)
			}
		}
		params := make([]string, len(args))
		for i, a := range args {
			params[i] = fmt.Sprintf("'%v'", a)
		}
		rows, err := tx.Query(ctx, `EXPLAIN EXECUTE list_runs`+paramList(params))
		if err != nil {
			tx.Rollback(ctx)
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan += line + "\n"
		}
		rows.Close()
		tx.Rollback(ctx)
		if !strings.Contains(plan, " "+index+" ") { // "Index Scan using X", "Bitmap Index Scan on X"
			t.Errorf("generic plan of ListRuns(%+v) does not use %s:\n%s", f, index, plan)
		}
	}
}

func paramList(params []string) string {
	if len(params) == 0 {
		return ""
	}
	return "(" + strings.Join(params, ", ") + ")"
}

// TestMigrateFromVersion6 opens a database left at schema version 6 (before
// the result queries) with a tagged dataset, a run and its results: Open
// applies version 7, whose tables are filled from the rows already there.
func TestMigrateFromVersion6(t *testing.T) {
	items := []*evalrun.Item{
		{ID: "a", Input: evalrun.String("q"), Metadata: map[string]any{"tags": []any{"x"}}},
		{ID: "b", Input: evalrun.String("r")},
	}
	plan, err := dataset.PlanVersion(false, nil, items)
	if err != nil {
		t.Fatal(err)
	}
	s := openFromVersion(t, 6, "007_result_queries.sql",
		stmt{`INSERT INTO datasets VALUES ('old', 1, 2, now(), now())`, nil},
		stmt{`INSERT INTO dataset_versions VALUES ('old', 1, now(), 2, 2, 0, 0)`, nil},
		stmt{`INSERT INTO dataset_items (dataset, item_id, valid_from, ord, hash, input, metadata) VALUES ('old', 'a', 1, $1, $2, $3, '{"tags":["x"]}'::bytea)`,
			[]any{plan.Insert[0].Key, plan.Insert[0].Hash, []byte(items[0].Input)}},
		stmt{`INSERT INTO dataset_items (dataset, item_id, valid_from, ord, hash, input) VALUES ('old', 'b', 1, $1, $2, $3)`,
			[]any{plan.Insert[1].Key, plan.Insert[1].Hash, []byte(items[1].Input)}},
		stmt{`INSERT INTO runs (id, name, dataset, dataset_version, target, scorers, status, total, succeeded, failed, skipped,
			persist_errors, error, created_at) VALUES ('old', 'n', 'old', 1, '{}', '[{"name":"judge","kind":"llm_judge","threshold":0.5}]',
			'completed', 2, 1, 1, 0, 0, '', now())`, nil},
		stmt{`INSERT INTO results (run_id, idx, rep, item_id, output, error, error_kind, attempts, retry_count, latency_ns, trace_id, cache_hit)
			VALUES ('old', 0, 0, 'a', '"x"'::bytea, '', '', 1, 0, 5, '', false), ('old', 1, 0, 'b', NULL, 'boom', 'transient', 1, 0, 5, '', false)`, nil},
		stmt{`INSERT INTO scores (run_id, idx, rep, pos, scorer, score, passed, reason, error, error_kind)
			VALUES ('old', 0, 0, 0, 'judge', 0.9, true, '', '', '')`, nil})
	storetest.MigratedResultPages(t, s, "old")
}
