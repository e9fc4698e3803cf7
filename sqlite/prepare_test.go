package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// TestFullInsertsPreparedWhenNeeded: Open prepares nothing; a batch
// smaller than a full chunk prepares nothing either; the first batch with
// a full chunk of results (or of scores) prepares that statement, which
// later batches reuse, and Close closes.
func TestFullInsertsPreparedWhenNeeded(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.replaceResults != nil || s.insertScores != nil {
		t.Fatal("Open prepared the full-size inserts")
	}
	if err := s.CreateRun(ctx, &evalrun.Run{ID: "r", Status: evalrun.RunRunning, CreatedAt: time.Now(),
		Scorers: []evalrun.ScorerInfo{{Name: "a"}, {Name: "b"}}}); err != nil {
		t.Fatal(err)
	}
	next := 0
	write := func(n int) {
		t.Helper()
		batch := make([]*evalrun.ItemResult, n)
		for i := range batch {
			batch[i] = &evalrun.ItemResult{RunID: "r", Index: next, ItemID: fmt.Sprint(next), Output: evalrun.String("o"), Attempts: 1,
				Scores: []evalrun.ScorerResult{{Scorer: "a", Score: evalrun.Float64(1)}, {Scorer: "b", Score: evalrun.Float64(0)}}}
			next++
		}
		if err := s.WriteResults(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	write(resultChunk - 1) // 63 results, 126 scores: no full chunk
	if s.replaceResults != nil || s.insertScores != nil {
		t.Fatal("a batch without a full chunk prepared a full-size insert")
	}
	write(scoreChunk / 2) // 64 results, 128 scores: both full
	full := s.replaceResults
	if full == nil || s.insertScores == nil {
		t.Fatal("a batch with full chunks left a full-size insert unprepared")
	}
	write(2 * resultChunk)
	if s.replaceResults != full {
		t.Fatal("the full-size insert was prepared again")
	}
	n := 0
	if err := s.ScanResults(ctx, "r", evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
		if len(r.Scores) != 2 {
			t.Fatalf("result %d: %d scores", r.Index, len(r.Scores))
		}
		n++
		return nil
	}); err != nil || n != next {
		t.Fatalf("%d results read back (%v), want %d", n, err, next)
	}
}
