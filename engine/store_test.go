package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/postgres"
	"github.com/evalrun/evalrun/postgres/pgtest"
	"github.com/evalrun/evalrun/sqlite"
)

// backends opens each real store: in-memory, SQLite in a temp dir, and
// PostgreSQL when TEST_DATABASE_URL is set (scripts/test sets it).
func backends() map[string]func(t testing.TB) evalrun.Store {
	return map[string]func(t testing.TB) evalrun.Store{
		"inmem": func(testing.TB) evalrun.Store { return inmem.New() },
		"sqlite": func(t testing.TB) evalrun.Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "e.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		"postgres": func(t testing.TB) evalrun.Store {
			s, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

// A run cancelled half-way, then resumed under the same id, ends with
// exactly one stored result per item and exact counts, on every backend.
func TestResumeOnEveryStore(t *testing.T) {
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			ctx := context.Background()
			its := items(200)
			if _, _, err := store.ImportDataset(ctx, "ds", its); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			calls := map[string]int{}
			target := evalrun.TargetFunc(func(c context.Context, it *evalrun.Item) (evalrun.Output, error) {
				mu.Lock()
				calls[it.ID]++
				mu.Unlock()
				return evalrun.Output{Value: it.Input}, c.Err()
			})
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			spec := engine.Spec{
				Run:   &evalrun.Run{Dataset: "ds", DatasetVersion: 1, Name: "resume"},
				Items: its, Target: target, Scorers: []evalrun.Scorer{exact},
				Options: engine.Options{Concurrency: 4, WriterBatch: 16, Progress: func(p evalrun.Progress) {
					if p.Done == 100 {
						cancel()
					}
				}},
			}
			first := mustRun(t, cctx, store, spec)
			if first.Status != evalrun.RunCanceled || first.Skipped == 0 {
				t.Fatalf("first run %+v", first)
			}
			rec, err := store.GetRun(ctx, first.RunID)
			if err != nil || rec.Status != evalrun.RunCanceled || rec.Succeeded != first.Succeeded {
				t.Fatalf("stored record %+v, %v", rec, err)
			}
			spec.Run, spec.Options.Resume, spec.Options.Progress = rec, true, nil
			second := mustRun(t, ctx, store, spec)
			if second.Status != evalrun.RunCompleted || second.Succeeded != 200 {
				t.Fatalf("resumed run %+v", second)
			}
			seen := map[int]int{}
			err = store.ScanResults(ctx, first.RunID, evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
				seen[r.Index]++
				if r.Item == nil || r.Item.ID != r.ItemID || len(r.Scores) != 1 {
					return fmt.Errorf("result %d: item %v scores %v", r.Index, r.Item, r.Scores)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				if seen[i] != 1 {
					t.Fatalf("item %d has %d stored results", i, seen[i])
				}
			}
			rec, _ = store.GetRun(ctx, first.RunID)
			if rec.Status != evalrun.RunCompleted || rec.Succeeded != 200 || rec.Failed != 0 || rec.Skipped != 0 {
				t.Fatalf("final record %+v", rec)
			}
			for id, n := range calls {
				if n > 2 {
					t.Fatalf("item %s executed %d times", id, n)
				}
			}
		})
	}
}

// BenchmarkPersist measures results persisted per second through the
// engine's writer (echo target, 200-byte outputs, one scorer) into each
// real store.
func BenchmarkPersist(b *testing.B) {
	out := make([]byte, 200)
	for i := range out {
		out[i] = 'x'
	}
	out[0], out[len(out)-1] = '"', '"'
	target := evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) {
		return evalrun.Output{Value: out}, nil
	})
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			store := backends()[name](b)
			its := items(b.N)
			b.ResetTimer()
			s, err := engine.Run(context.Background(), store, engine.Spec{
				Items: its, Target: target, Scorers: []evalrun.Scorer{exact},
				Options: engine.Options{Concurrency: 20, DiscardResults: true},
			})
			b.StopTimer()
			if err != nil || s.Succeeded != b.N || s.PersistErrors != 0 {
				b.Fatalf("err %v summary %+v", err, s)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "results/s")
		})
	}
}
