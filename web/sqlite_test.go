package web

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/sqlite"
)

// TestSQLiteStore serves the fixture from a SQLite store: the pages and the
// API read the same data as from memory.
func TestSQLiteStore(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "evalrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, st)
	b := setupStore(t, st, Options{})

	contains(t, "runs page", b.mustGet(t, "/", http.StatusOK).body, "77.5%", "100.0%")
	contains(t, "run page", b.mustGet(t, "/runs/"+runB, http.StatusOK).body, "80.0%", "75.0%", "deadline exceeded after 30s")
	p := decode[ItemsJSON](t, b.mustGet(t, "/api/runs/"+runB+"/items?failed=1", http.StatusOK))
	if got := itemIDs(p); got != "q4" {
		t.Errorf("failed items = %q, want q4", got)
	}
	p = decode[ItemsJSON](t, b.mustGet(t, "/api/runs/"+runB+"/items?sort=latency&size=2&page=2", http.StatusOK))
	if got := itemIDs(p); got != "q3,q1" {
		t.Errorf("second sorted page = %q, want q3,q1", got)
	}
	contains(t, "item page", b.mustGet(t, "/runs/"+runB+"/items/1", http.StatusOK).body, "judge says 0.3", "output 2 of bbbb")
	b.mustGet(t, "/runs/"+runB+"/items/99", http.StatusNotFound)
	b.mustGet(t, "/api/runs/nope", http.StatusNotFound)
	c := decode[report.Comparison](t, b.mustGet(t, "/api/compare?a="+runA+"&b="+runB, http.StatusOK))
	if len(c.Regressed) != 5 || c.Paired != 6 {
		t.Errorf("comparison: %d regressed, %d paired; want 5, 6", len(c.Regressed), c.Paired)
	}
}
