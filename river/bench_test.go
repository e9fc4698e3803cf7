package river

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// BenchmarkDistributed measures runs executed by worker processes on
// loopback (concurrency 10 each) against a target answering after 100 ms:
// items/s for 1, 2 and 4 workers (linear scaling would be 100 items/s per
// worker). Each iteration enqueues and waits for a run of 300 items per
// worker. Run with -benchtime=1x (or 3x); see docs/benchmarks.md.
func BenchmarkDistributed(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("latency=100ms/workers=%d", workers), func(b *testing.B) {
			benchRun(b, workers, 100*time.Millisecond, 300*workers, "")
		})
	}
}

// BenchmarkQueueOverhead measures the queue's own cost per item: one
// worker process (concurrency 10) against a target answering at once, so
// the time per item is fetch, status check, pipeline, result write and
// completion. Compared with River's default fetch cooldown (100 ms) and
// evalrun.s (10 ms) and a short one (2 ms).
func BenchmarkQueueOverhead(b *testing.B) {
	for _, cooldown := range []time.Duration{100 * time.Millisecond, DefaultFetchCooldown, 2 * time.Millisecond} {
		b.Run(fmt.Sprintf("latency=0/cooldown=%s", cooldown), func(b *testing.B) {
			benchRun(b, 1, 0, 2000, cooldown.String())
		})
	}
}

func benchRun(b *testing.B, workers int, latency time.Duration, n int, cooldown string) {
	bb := setup(b, latency)
	items := bb.importItems(b, "bench", inputs("q", n))
	var env []string
	if cooldown != "" {
		env = append(env, envCooldown+"="+cooldown)
	}
	if p := os.Getenv("BENCH_POLL"); p != "" {
		env = append(env, envPoll+"="+p)
	}
	for i := range workers {
		startWorkerProcess(b, bb.url, fmt.Sprintf("bench-%d", i), 10, env...)
	}
	ctx := context.Background()
	b.ResetTimer()
	var elapsed time.Duration
	for range b.N {
		start := time.Now()
		run := bb.enqueue(b, "bench", items, runConfig{})
		s, err := bb.coord.Wait(ctx, run.ID, WaitOptions{})
		if err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		if s.Status != evalrun.RunCompleted || s.Succeeded != n {
			b.Fatalf("summary = %+v", s)
		}
	}
	b.StopTimer()
	perItem := elapsed / time.Duration(b.N*n)
	b.ReportMetric(float64(b.N*n)/elapsed.Seconds(), "items/s")
	b.ReportMetric(float64(perItem.Microseconds()), "µs/item")
	b.ReportMetric(0, "ns/op")
}
