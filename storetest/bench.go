package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// BenchWriteResults measures WriteResults the way the engine's writer uses
// it: batches of batch results, each with a 200-byte output and two scores,
// every key new. It reports results/s. s must be empty; it is not closed.
func BenchWriteResults(b *testing.B, s evalrun.Store, batch int) {
	b.Helper()
	ctx := b.Context()
	items := make([]*evalrun.Item, 1000)
	for i := range items {
		items[i] = item(fmt.Sprintf("item-%04d", i), fmt.Sprintf("question %d", i), "answer")
	}
	if _, _, err := s.ImportDataset(ctx, "bench", items); err != nil {
		b.Fatal(err)
	}
	run := testRun("bench-run", "bench", 1, time.Now())
	if err := s.CreateRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	output := evalrun.String(strings.Repeat("o", 198)) // 200 bytes with the quotes
	now := time.Now()
	results := make([]*evalrun.ItemResult, batch)
	for i := range results {
		results[i] = &evalrun.ItemResult{
			RunID: run.ID, Output: output, Attempts: 1, Latency: 1500 * time.Microsecond,
			Usage:     evalrun.Usage{InputTokens: evalrun.Int64(120), OutputTokens: evalrun.Int64(40), CostUSD: evalrun.Float64(0.0002)},
			StartedAt: now, CompletedAt: now,
			Scores: []evalrun.ScorerResult{
				{Scorer: "exact", Score: evalrun.Float64(1), Passed: true},
				{Scorer: "judge", Score: evalrun.Float64(0.8), Passed: true, Reason: "fine"},
			},
		}
	}
	next := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range results {
			r.Index = next
			r.ItemID = items[next%len(items)].ID
			next++
		}
		if err := s.WriteResults(ctx, results); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(next)/b.Elapsed().Seconds(), "results/s")
}
