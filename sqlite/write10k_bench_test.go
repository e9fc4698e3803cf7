package sqlite_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/sqlite"
)

// BenchmarkWriteResults10KB writes batches of 1,000 results with 10 KB
// outputs and three scores (W3's shape): what the result indexes of the
// viewer's queries cost a run.
//
//	go test -run '^$' -bench WriteResults10KB -count 3 ./sqlite/
func BenchmarkWriteResults10KB(b *testing.B) {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	items := make([]*evalrun.Item, 1000)
	for i := range items {
		items[i] = &evalrun.Item{ID: fmt.Sprintf("item-%04d", i), Input: evalrun.String("question"), Metadata: map[string]any{"tags": "t"}}
	}
	if _, _, err := s.ImportDataset(b.Context(), "bench", items); err != nil {
		b.Fatal(err)
	}
	run := &evalrun.Run{ID: "bench-run", Dataset: "bench", DatasetVersion: 1, Status: evalrun.RunRunning, CreatedAt: time.Now(),
		Scorers: []evalrun.ScorerInfo{{Name: "a", Threshold: 0.5}, {Name: "b", Threshold: 0.5}, {Name: "c", Threshold: 0.5}}}
	if err := s.CreateRun(b.Context(), run); err != nil {
		b.Fatal(err)
	}
	output := evalrun.String(strings.Repeat("lorem ipsum ", 850))
	results := make([]*evalrun.ItemResult, 1000)
	for i := range results {
		sc := float64(i%10) / 10
		results[i] = &evalrun.ItemResult{RunID: run.ID, Output: output, Attempts: 1, Latency: time.Duration(i) * time.Millisecond,
			Scores: []evalrun.ScorerResult{{Scorer: "a", Score: &sc}, {Scorer: "b", Score: &sc}, {Scorer: "c", Score: &sc}}}
	}
	next := 0
	for b.Loop() {
		for _, r := range results {
			r.Index, r.ItemID = next, items[next%len(items)].ID
			next++
		}
		if err := s.WriteResults(b.Context(), results); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(next)/b.Elapsed().Seconds(), "results/s")
}
