package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/inmem"
)

// call is a recorded tool call of the fake agent below.
func call(name string) evalrun.ToolCall {
	return evalrun.ToolCall{Name: name, Args: json.RawMessage(`{}`), Mocked: true}
}

func TestTrajectoryReachesResultScorersAndCache(t *testing.T) {
	var calls atomic.Int64
	// An agent whose first attempt fails transiently after one tool call:
	// the retried attempt's trajectory alone is the result's.
	agent := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		if calls.Add(1) == 1 {
			return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorTransient, Err: errors.New("429"),
				Trajectory: &evalrun.Trajectory{Steps: 1, Calls: []evalrun.ToolCall{call("lost")}}}
		}
		return evalrun.Output{Value: evalrun.String("done"),
			Trajectory: &evalrun.Trajectory{Steps: 2, Calls: []evalrun.ToolCall{call("search")}}}, nil
	})
	var seen atomic.Pointer[evalrun.Trajectory]
	spy := evalrun.ScorerFunc("spy", func(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
		seen.Store(in.Trajectory)
		return evalrun.Score{Value: 1}, nil
	})
	c := inmem.New()
	run := func() *evalrun.Summary {
		return mustRun(t, context.Background(), nil, engine.Spec{
			Items: items(1), Target: agent, Scorers: []evalrun.Scorer{spy},
			Options: engine.Options{MaxRetries: 2, RetryDelay: time.Millisecond, Cache: c, CacheKey: "agent"},
		})
	}
	first := run()
	r := first.Results[0]
	if r.Failed() || r.Attempts != 2 || r.Trajectory == nil || r.Trajectory.Steps != 2 ||
		len(r.Trajectory.Calls) != 1 || r.Trajectory.Calls[0].Name != "search" {
		t.Fatalf("result = %+v, trajectory %+v", r, r.Trajectory)
	}
	if got := seen.Load(); got == nil || got.Calls[0].Name != "search" {
		t.Fatalf("the scorer saw trajectory %+v", got)
	}
	second := run()
	r = second.Results[0]
	if !r.CacheHit || r.Trajectory == nil || r.Trajectory.Calls[0].Name != "search" || calls.Load() != 2 {
		t.Fatalf("cached result = %+v, trajectory %+v, calls %d", r, r.Trajectory, calls.Load())
	}
}

func TestFailedAgentKeepsItsLastTrajectory(t *testing.T) {
	agent := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorPermanent, Err: errors.New("more than 2 model turns"),
			Trajectory: &evalrun.Trajectory{Steps: 2, Calls: []evalrun.ToolCall{call("loop"), call("loop")}}}
	})
	sum := mustRun(t, context.Background(), nil, engine.Spec{Items: items(1), Target: agent})
	r := sum.Results[0]
	if !r.Failed() || r.Trajectory == nil || len(r.Trajectory.Calls) != 2 {
		t.Fatalf("failed result = %+v, trajectory %+v", r, r.Trajectory)
	}
}
