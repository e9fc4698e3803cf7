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

// BenchScanResults measures a full ScanResults of a finished run of n
// results the way a report reads it: every result has its item (with
// expected output and metadata) at the run's pinned version, a 200-byte
// output, usage, timestamps and three scores; 2 % of the results failed
// (no output, no scores). The setup (import and writes) is not timed. It
// reports ms/scan, results/s and cpu-ms/scan (the CPU time of the whole
// process per scan, garbage collection included: steadier than wall time
// on a shared machine). s must be empty; it is not closed.
func BenchScanResults(b *testing.B, s evalrun.Store, n int) {
	b.Helper()
	ctx := b.Context()
	items := make([]*evalrun.Item, n)
	tags := []string{"billing", "refund", "login", "shipping"}
	for i := range items {
		items[i] = &evalrun.Item{
			ID:       fmt.Sprintf("item-%06d", i),
			Input:    evalrun.String(fmt.Sprintf("question number %d, asked with some context", i)),
			Expected: evalrun.String("an answer"),
			Metadata: map[string]any{"tags": []any{tags[i%4]}, "difficulty": i % 3},
		}
	}
	if _, _, err := s.ImportDataset(ctx, "bench", items); err != nil {
		b.Fatal(err)
	}
	run := testRun("bench-run", "bench", 1, time.Now())
	run.Scorers = append(run.Scorers, evalrun.ScorerInfo{Name: "contains", Kind: "contains", Threshold: 1})
	run.Total = n
	if err := s.CreateRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	output := evalrun.String(strings.Repeat("o", 198))
	now := time.Now()
	batch := make([]*evalrun.ItemResult, 0, 1000)
	for i := range n {
		r := &evalrun.ItemResult{
			RunID: run.ID, Index: i, ItemID: items[i].ID, Attempts: 1, Latency: time.Duration(100+i%900) * time.Millisecond,
			Usage:     evalrun.Usage{InputTokens: evalrun.Int64(120), OutputTokens: evalrun.Int64(40), CostUSD: evalrun.Float64(0.0002)},
			StartedAt: now, CompletedAt: now.Add(time.Second),
		}
		if i%50 == 7 {
			r.Error, r.ErrorKind = "HTTP 503", evalrun.ErrorTransient
		} else {
			r.Output = output
			r.Scores = []evalrun.ScorerResult{
				{Scorer: "exact", Score: evalrun.Float64(float64(i % 2)), Passed: i%2 == 1},
				{Scorer: "judge", Score: evalrun.Float64(float64(i%10) / 10), Passed: i%10 >= 7, Reason: "a reason",
					Usage: evalrun.Usage{InputTokens: evalrun.Int64(300), OutputTokens: evalrun.Int64(20)}},
				{Scorer: "contains", Score: evalrun.Float64(1), Passed: true},
			}
		}
		if batch = append(batch, r); len(batch) == cap(batch) || i == n-1 {
			if err := s.WriteResults(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	run.Status = evalrun.RunCompleted
	if err := s.UpdateRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	scans := 0
	cpu0 := cpuTime()
	for b.Loop() {
		got, scores := 0, 0
		if err := s.ScanResults(ctx, run.ID, evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
			if r.Item == nil || r.Index != got {
				return fmt.Errorf("result %d/%d: item %v, want index %d with its item", r.Index, r.Repeat, r.Item, got)
			}
			got++
			scores += len(r.Scores)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if want := 3 * (n - (n+42)/50); got != n || scores != want {
			b.Fatalf("scanned %d results with %d scores, want %d with %d", got, scores, n, want)
		}
		scans++
	}
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(scans), "ms/scan")
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1000/float64(scans), "cpu-ms/scan")
	b.ReportMetric(float64(scans*n)/b.Elapsed().Seconds(), "results/s")
}
