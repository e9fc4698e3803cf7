package river

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/evalrun/evalrun"
)

// closingScorer counts its Close calls, as a persistent exec scorer's
// processes would be stopped.
type closingScorer struct {
	evalrun.Scorer
	closed atomic.Int32
}

func (s *closingScorer) Close() error { s.closed.Add(1); return nil }

// A run's scorers are closed once when the run is forgotten, after its
// last job released it, and by closeAll when the worker stops.
func TestRunCacheClosesScorers(t *testing.T) {
	scorers := map[string]*closingScorer{}
	c := newRunCache(4, func(_ context.Context, runID string) (*runState, error) {
		s := &closingScorer{Scorer: evalrun.ScorerFunc("s", nil)}
		scorers[runID] = s
		return &runState{scorers: []evalrun.Scorer{s}}, nil
	})
	ctx := context.Background()
	a, err := c.acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	c.forget("a") // a job still holds it
	if n := scorers["a"].closed.Load(); n != 0 {
		t.Fatalf("scorer closed %d times while a job holds the run", n)
	}
	c.release(a)
	if n := scorers["a"].closed.Load(); n != 1 {
		t.Errorf("after the last release of a forgotten run: closed %d times, want 1", n)
	}
	b, err := c.acquire(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	c.release(b)
	c.closeAll()
	c.closeAll()
	if n := scorers["b"].closed.Load(); n != 1 {
		t.Errorf("after closeAll twice: closed %d times, want 1", n)
	}
}
