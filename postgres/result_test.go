package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/postgres"
	"github.com/evalrun/evalrun/postgres/pgtest"
)

// WriteResults caches a run's scorers, so the run's existence is checked
// inside the write's transaction: a run deleted after a first write makes
// the next one fail with ErrNotFound, writing nothing, and the connection
// (the pool's only one) goes back usable, outside any transaction.
func TestWriteResultsRunDeletedAfterCaching(t *testing.T) {
	s, err := postgres.Open(t.Context(), pgtest.NewDatabase(t)+"&pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	for _, id := range []string{"gone", "kept"} {
		run := &evalrun.Run{ID: id, Status: evalrun.RunRunning, CreatedAt: time.Now(), Scorers: []evalrun.ScorerInfo{{Name: "exact"}}}
		if err := s.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	res := func(run string, idx int, score float64) *evalrun.ItemResult {
		return &evalrun.ItemResult{RunID: run, Index: idx, ItemID: "a", Output: evalrun.String("x"),
			Scores: []evalrun.ScorerResult{{Scorer: "exact", Score: evalrun.Float64(score)}}}
	}
	if err := s.WriteResults(ctx, []*evalrun.ItemResult{res("gone", 0, 1), res("kept", 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `DELETE FROM runs WHERE id = 'gone'`); err != nil {
		t.Fatal(err)
	}
	err = s.WriteResults(ctx, []*evalrun.ItemResult{res("kept", 1, 1), res("gone", 1, 1)})
	if !errors.Is(err, evalrun.ErrNotFound) {
		t.Fatalf("write for a deleted run: %v, want ErrNotFound", err)
	}
	var n int
	if err := s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM results WHERE idx = 1) + (SELECT count(*) FROM scores WHERE idx = 1)
		+ (SELECT count(*) FROM score_keys WHERE idx = 1)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d rows of the refused batch were written", n)
	}
	// The same connection takes the next write, which replaces a result:
	// its old score and score_keys row go.
	if err := s.WriteResults(ctx, []*evalrun.ItemResult{res("kept", 0, 0.25)}); err != nil {
		t.Fatal(err)
	}
	var scores, keys []float64
	rows, err := s.Pool().Query(ctx, `SELECT score, 's' FROM scores WHERE run_id = 'kept' UNION ALL SELECT score, 'k' FROM score_keys WHERE run_id = 'kept'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v float64
		var which string
		if err := rows.Scan(&v, &which); err != nil {
			t.Fatal(err)
		}
		if which == "s" {
			scores = append(scores, v)
		} else {
			keys = append(keys, v)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(scores) != 1 || scores[0] != 0.25 || len(keys) != 1 || keys[0] != 0.25 {
		t.Fatalf("after the rewrite: scores %v, score_keys %v, want [0.25] each", scores, keys)
	}
}
