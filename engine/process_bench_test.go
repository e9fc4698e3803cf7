package engine_test

import (
	"context"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
)

// BenchmarkProcess is one item through Pipeline.Process on one goroutine
// (an in-process echo target, one exact-match scorer): the pipeline's own
// cost per item without the run's scheduling, to compare versions.
func BenchmarkProcess(b *testing.B) {
	p, err := engine.NewPipeline(echo, []evalrun.Scorer{exact}, engine.Options{Concurrency: 1})
	if err != nil {
		b.Fatal(err)
	}
	it := items(1)[0]
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Process(ctx, "r", it, 0, 0); res.Failed() {
			b.Fatal(res.Error)
		}
	}
}
