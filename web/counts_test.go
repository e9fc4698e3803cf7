package web

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// TestItemsTotalCachedForFinishedRuns: the total of a finished run's
// sorted listing is counted once and served from memory (a result written
// behind the run record's back is not counted: the cache answered), until
// the run record changes (a resume: running, then completed again), which
// counts again; a running run is counted on every first page.
func TestItemsTotalCachedForFinishedRuns(t *testing.T) {
	for name, b := range keysetBundles(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			total := func(query string) int {
				t.Helper()
				p := decode[ItemsJSON](t, b.mustGet(t, "/api/runs/"+runB+"/items?"+query, http.StatusOK))
				if p.Total == nil {
					t.Fatalf("%s: no total", query)
				}
				return *p.Total
			}
			if n := total("sort=-latency"); n != 6 {
				t.Fatalf("total %d, want 6", n)
			}
			if n := total("sort=latency&failed=1"); n != 1 {
				t.Fatalf("failed: total %d, want 1", n)
			}
			extra := fixtureResult(runB, 6, 1, 0.9, time.Second)
			extra.ItemID = "q1"
			if err := b.store.WriteResults(ctx, []*evalrun.ItemResult{extra}); err != nil {
				t.Fatal(err)
			}
			if n := total("sort=score:judge"); n != 6 {
				t.Errorf("finished run, same record: total %d, want the cached 6", n)
			}
			run, err := b.store.GetRun(ctx, runB)
			if err != nil {
				t.Fatal(err)
			}
			run.Status, run.CompletedAt = evalrun.RunRunning, time.Time{}
			if err := b.store.UpdateRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			if n := total("sort=-latency"); n != 7 {
				t.Errorf("running run: total %d, want 7", n)
			}
			extra = fixtureResult(runB, 7, 1, 0.9, time.Second)
			extra.ItemID = "q2"
			if err := b.store.WriteResults(ctx, []*evalrun.ItemResult{extra}); err != nil {
				t.Fatal(err)
			}
			if n := total("sort=-latency"); n != 8 {
				t.Errorf("running run, one more result: total %d, want 8", n)
			}
			run.Status, run.CompletedAt = evalrun.RunCompleted, t0.Add(3*time.Hour)
			if err := b.store.UpdateRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			if n := total("sort=-latency"); n != 8 {
				t.Errorf("completed again: total %d, want 8", n)
			}
			if n := total("sort=latency&failed=1"); n != 1 {
				t.Errorf("completed again, failed: total %d, want 1", n)
			}
		})
	}
}
