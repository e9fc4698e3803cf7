package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
)

// steppedClock reads a fixed time that the test moves; waits are real.
type steppedClock struct{ now time.Time }

func (c *steppedClock) Now() time.Time                         { return c.now }
func (c *steppedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// A resumed run keeps its first start: its duration spans the pause. Only
// the completion time moves.
func TestResumeKeepsStartedAt(t *testing.T) {
	first := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	clock := &steppedClock{now: first}
	echo := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		return evalrun.Output{Value: it.Input}, nil
	})
	store := newFakeStore()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nothing runs: the run ends canceled at once
	spec := engine.Spec{Items: items(4), Target: echo, Options: engine.Options{Concurrency: 1, Clock: clock}}
	interrupted := mustRun(t, ctx, store, spec)
	if interrupted.Status != evalrun.RunCanceled || !interrupted.StartedAt.Equal(first) {
		t.Fatalf("interrupted run: %+v", interrupted)
	}

	clock.now = first.Add(time.Hour)
	rec, err := store.GetRun(context.Background(), interrupted.RunID)
	if err != nil {
		t.Fatal(err)
	}
	spec.Run, spec.Options.Resume = rec, true
	resumed := mustRun(t, context.Background(), store, spec)
	stored, _ := store.GetRun(context.Background(), interrupted.RunID)
	if resumed.Status != evalrun.RunCompleted || !resumed.StartedAt.Equal(first) || !stored.StartedAt.Equal(first) ||
		!stored.CompletedAt.Equal(first.Add(time.Hour)) {
		t.Fatalf("resumed run: summary started %v, stored started %v completed %v; want started %v (the first start), completed an hour later",
			resumed.StartedAt, stored.StartedAt, stored.CompletedAt, first)
	}
}
