package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/inmem"
)

func TestResponseCache(t *testing.T) {
	var calls atomic.Int64
	// Answers differ per call, so a repeat served from the wrong key shows.
	target := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		n := calls.Add(1)
		if it.ID == "q3" {
			return evalrun.Output{}, evalrun.Permanent(errors.New("bad request"))
		}
		return evalrun.Output{Value: evalrun.String(fmt.Sprintf("%s#%d", evalrun.Text(it.Input), n))}, nil
	})
	c := inmem.New() // its response cache
	run := func(key string) *evalrun.Summary {
		return mustRun(t, context.Background(), nil, engine.Spec{
			Items: items(10), Target: target, Scorers: []evalrun.Scorer{exact},
			Options: engine.Options{Repeat: 2, Cache: c, CacheKey: key},
		})
	}
	first := run("model=a")
	if calls.Load() != 20 || first.Failed != 2 {
		t.Fatalf("first run: %d calls, %+v", calls.Load(), first)
	}
	outputs := map[[2]int]string{}
	for _, r := range first.Results {
		if r.CacheHit {
			t.Fatalf("first run hit the cache on %s", r.ItemID)
		}
		outputs[[2]int{r.Index, r.Repeat}] = string(r.Output)
	}
	if outputs[[2]int{0, 0}] == outputs[[2]int{0, 1}] {
		t.Fatal("repeats got the same answer")
	}

	calls.Store(0)
	second := run("model=a")
	// Only the two failed (item, repeat) pairs call the target again:
	// errors are never cached.
	if calls.Load() != 2 || second.Succeeded != 18 {
		t.Fatalf("second run: %d calls, %+v", calls.Load(), second)
	}
	for _, r := range second.Results {
		if r.Failed() {
			continue
		}
		if !r.CacheHit || r.Attempts != 0 || string(r.Output) != outputs[[2]int{r.Index, r.Repeat}] {
			t.Fatalf("%s repeat %d: hit %v attempts %d output %s, want %s", r.ItemID, r.Repeat, r.CacheHit, r.Attempts, r.Output, outputs[[2]int{r.Index, r.Repeat}])
		}
		if r.Scores[0].Score == nil {
			t.Fatalf("cached output not scored: %+v", r.Scores)
		}
	}

	calls.Store(0)
	run("model=b") // a changed target parameter misses
	if calls.Load() != 20 {
		t.Fatalf("changed config: %d calls, want 20", calls.Load())
	}
}
