package postgres

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/evalrun/evalrun/postgres/pgtest"
)

// TestScanResultsGenericPlan: the generic plan of scanResults' statement
// (the one PostgreSQL keeps after five runs of a prepared statement) finds
// a page's results by index: the indexes are a condition of the index
// scan, not a filter over every result of the run, as they were when the
// statement tested "$8 IS NULL OR idx = ANY ($8)".
func TestScanResultsGenericPlan(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	// A run of 20,000 results (2% failed), analyzed: the planner sees a
	// big run, as the viewer's. Index scans are forced so that the plan
	// shows where the test of the indexes goes.
	for _, set := range []string{
		`INSERT INTO results (run_id, idx, rep, item_id, error, error_kind, attempts, retry_count, latency_ns, trace_id, cache_hit)
			SELECT 'run', i, 0, 'item-' || i, CASE WHEN i % 50 = 7 THEN 'HTTP 503' ELSE '' END, '', 1, 0, 1000000, '', false
			FROM generate_series(0, 19999) i`,
		"ANALYZE results",
		"SET plan_cache_mode = force_generic_plan", "SET enable_seqscan = off", "SET enable_bitmapscan = off",
	} {
		if _, err := conn.Exec(t.Context(), set); err != nil {
			t.Fatal(err)
		}
	}
	for _, failed := range []bool{false, true} {
		name := fmt.Sprintf("page_%v", failed)
		if _, err := conn.Exec(t.Context(), "PREPARE "+name+" AS "+scanResultsSQL(failed, true)); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(t.Context(), "EXPLAIN EXECUTE "+name+"('run', 0, NULL, 'ds', 1, false, false, '{3,5}')")
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		indexCond := false
		for _, line := range plan {
			if strings.Contains(line, "ANY") && strings.Contains(line, "Filter:") {
				t.Errorf("failed=%v: the indexes filter the scanned results:\n%s", failed, strings.Join(plan, "\n"))
			}
			indexCond = indexCond || strings.Contains(line, "Index Cond:") && strings.Contains(line, "idx = ANY ($8)")
		}
		if !indexCond {
			t.Errorf("failed=%v: no index condition on the indexes:\n%s", failed, strings.Join(plan, "\n"))
		}
	}
}
