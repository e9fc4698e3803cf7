package report

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/sqlite"
)

// seedLargePair stores, in a new SQLite database, two runs "a" and "b" of
// n items whose outputs are size bytes each (one scorer; every third item
// of b fails its target), as two large runs of real users are stored.
func seedLargePair(tb testing.TB, n, size int) evalrun.Store {
	tb.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "evalrun.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	items := make([]*evalrun.Item, n)
	for i := range items {
		items[i] = &evalrun.Item{ID: fmt.Sprintf("item-%06d", i), Input: evalrun.String("q")}
	}
	if _, _, err := st.ImportDataset(ctx, "large", items); err != nil {
		tb.Fatal(err)
	}
	output := evalrun.String(strings.Repeat("x", size))
	for _, id := range []string{"a", "b"} {
		run := &evalrun.Run{ID: id, Dataset: "large", DatasetVersion: 1, Status: evalrun.RunCompleted, Total: n,
			Scorers: []evalrun.ScorerInfo{{Name: "s", Threshold: 0.5}}}
		if err := st.CreateRun(ctx, run); err != nil {
			tb.Fatal(err)
		}
		const batch = 500
		for lo := 0; lo < n; lo += batch {
			var rs []*evalrun.ItemResult
			for i := lo; i < min(lo+batch, n); i++ {
				v := float64(i%10) / 10
				r := &evalrun.ItemResult{RunID: id, Index: i, ItemID: items[i].ID, Output: output,
					Scores: []evalrun.ScorerResult{{Scorer: "s", Score: &v, Passed: v >= 0.5}}}
				if id == "b" && i%3 == 0 {
					r.Output, r.Scores, r.Error, r.ErrorKind = nil, nil, "HTTP 500", evalrun.ErrorTransient
				}
				rs = append(rs, r)
			}
			if err := st.WriteResults(ctx, rs); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return st
}

// heapProbe is a RunStore that measures the live heap each time a scan of
// a run ends: the moment a comparison holds the most (all of A and all of
// B once the second scan ends).
type heapProbe struct {
	evalrun.RunStore
	base uint64
	peak uint64
}

func (p *heapProbe) ScanResults(ctx context.Context, runID string, q evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	err := p.RunStore.ScanResults(ctx, runID, q, fn)
	if live := liveHeap(); live > p.base {
		p.peak = max(p.peak, live-p.base)
	}
	return err
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// compareHeld returns the most heap compare held after a scan, above what
// was live before it started.
func compareHeld(tb testing.TB, st evalrun.RunStore, compare func(evalrun.RunStore) (*Comparison, error)) (uint64, *Comparison) {
	tb.Helper()
	probe := &heapProbe{RunStore: st, base: liveHeap()}
	c, err := compare(probe)
	if err != nil {
		tb.Fatal(err)
	}
	return probe.peak, c
}

func compareStreaming(st evalrun.RunStore) (*Comparison, error) {
	return CompareStore(context.Background(), st, "a", "b", CompareOptions{Resamples: 1000})
}

// compareReports is what compare did before it streamed: both full
// reports, outputs included, then Compare.
func compareReports(st evalrun.RunStore) (*Comparison, error) {
	ctx := context.Background()
	a, err := FromStore(ctx, st, "a")
	if err != nil {
		return nil, err
	}
	b, err := FromStore(ctx, st, "b")
	if err != nil {
		return nil, err
	}
	return Compare(a, b, CompareOptions{Resamples: 1000})
}

// TestCompareStoreHoldsNoOutputs compares two stored runs of 2,000 items
// with 10 KB outputs (40 MB of outputs): the comparison must not hold them,
// only per-item verdicts (well under 100 bytes of heap per result here).
func TestCompareStoreHoldsNoOutputs(t *testing.T) {
	const n, size = 2000, 10_000
	st := seedLargePair(t, n, size)
	held, c := compareHeld(t, st, compareStreaming)
	if c.Paired != n || c.CrashedB != (n+2)/3 {
		t.Fatalf("paired %d, crashed B %d", c.Paired, c.CrashedB)
	}
	// The outputs of one run alone are n·size = 20 MB; verdicts, ids and
	// the scan's transient buffers stay far below.
	if limit := uint64(n * size / 4); held > limit {
		t.Errorf("CompareStore held %d MB of heap after a scan, want < %d MB: it keeps outputs", held>>20, limit>>20)
	}
	t.Logf("held %.1f MB for 2 × %d results of %d bytes", float64(held)/(1<<20), n, size)
}

// BenchmarkCompareStoreLarge measures time and the heap held by a
// comparison of two stored runs of 20,000 results with 10 KB outputs,
// streaming (CompareStore) and, for reference, through full reports (what
// compare did before). docs/benchmarks.md records the figures.
//
//	go test -run '^$' -bench CompareStoreLarge -benchtime 1x ./report/
func BenchmarkCompareStoreLarge(b *testing.B) {
	const n, size = 20_000, 10_000
	st := seedLargePair(b, n, size)
	for _, bm := range []struct {
		name    string
		compare func(evalrun.RunStore) (*Comparison, error)
	}{{"streaming", compareStreaming}, {"reports", compareReports}} {
		b.Run(bm.name, func(b *testing.B) {
			var held uint64
			for b.Loop() {
				h, _ := compareHeld(b, st, bm.compare)
				held = max(held, h)
			}
			b.ReportMetric(float64(held)/(1<<20), "held-MB")
		})
	}
}
