package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/inmem"
)

// BenchmarkPipeline pushes b.N items through the whole engine: an
// in-process echo target, one exact-match scorer, the in-memory store.
// Report: items/s and allocations per item.
func BenchmarkPipeline(b *testing.B) {
	for _, conc := range []int{5, 20} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			its := items(b.N)
			store := inmem.New()
			b.ReportAllocs()
			b.ResetTimer()
			s, err := engine.Run(context.Background(), store, engine.Spec{
				Items: its, Target: echo, Scorers: []evalrun.Scorer{exact},
				Options: engine.Options{Concurrency: conc, DiscardResults: true},
			})
			b.StopTimer()
			if err != nil || s.Succeeded != b.N {
				b.Fatalf("err %v summary %+v", err, s)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkRetainOffMemory runs 100,000 items with 10 KB outputs and
// retain off through a store that forgets them, and reports the peak heap
// seen during the run: it must stay flat in the number of items.
func BenchmarkRetainOffMemory(b *testing.B) {
	const n = 100_000
	out := make([]byte, 10<<10)
	for i := range out {
		out[i] = 'x'
	}
	out[0], out[len(out)-1] = '"', '"'
	target := evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) {
		v := make([]byte, len(out)) // a fresh output per item, as a real target makes
		copy(v, out)
		return evalrun.Output{Value: v}, nil
	})
	its := items(n)
	for b.Loop() {
		var peak uint64
		var ms runtime.MemStats
		runtime.GC()
		s, err := engine.Run(context.Background(), discardStore{newFakeStore()}, engine.Spec{
			Items: its, Target: target, Scorers: []evalrun.Scorer{exact},
			Options: engine.Options{Concurrency: 20, DiscardResults: true, Progress: func(p evalrun.Progress) {
				if p.Done%5000 == 0 {
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapInuse)
				}
			}},
		})
		if err != nil || s.Succeeded != n {
			b.Fatalf("err %v summary %+v", err, s)
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	}
}
