package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
)

// overloaded is a target that answers 429 when more than capacity calls
// are in flight, as a rate-limited API does.
type overloaded struct {
	capacity       int64
	inflight, n429 atomic.Int64
	calls          atomic.Int64
}

func (o *overloaded) Execute(ctx context.Context, it *evalrun.Item) (evalrun.Output, error) {
	o.calls.Add(1)
	n := o.inflight.Add(1)
	defer o.inflight.Add(-1)
	if n > o.capacity {
		o.n429.Add(1)
		return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorTransient, StatusCode: 429, Err: errors.New("too many requests")}
	}
	select {
	case <-time.After(time.Millisecond):
	case <-ctx.Done():
		return evalrun.Output{}, ctx.Err()
	}
	return evalrun.Output{Value: it.Input}, nil
}

// Against a server that takes 8 calls at once, adaptive concurrency
// settles at or below 8 and no item is lost; fixed concurrency keeps
// hammering it.
func TestAdaptiveConcurrencySettlesBelowCapacity(t *testing.T) {
	target := &overloaded{capacity: 8}
	var lowest atomic.Int64
	lowest.Store(100)
	s := mustRun(t, context.Background(), nil, engine.Spec{
		Items: items(1000), Target: target,
		Options: engine.Options{Concurrency: 20, MaxRetries: 50, RetryDelay: -1, Progress: func(p evalrun.Progress) {
			if int64(p.Concurrency) < lowest.Load() {
				lowest.Store(int64(p.Concurrency))
			}
		}},
	})
	if s.Succeeded != 1000 || s.Failed != 0 {
		t.Fatalf("adaptive: %d succeeded, %d failed; want every item to succeed", s.Succeeded, s.Failed)
	}
	if s.Concurrency > 8 || s.Concurrency < 1 {
		t.Fatalf("settled at concurrency %d; want 1..8", s.Concurrency)
	}
	if lowest.Load() > 8 {
		t.Fatalf("progress never showed a cut concurrency (lowest %d)", lowest.Load())
	}
	adaptive429 := target.n429.Load()
	t.Logf("adaptive: settled %d, %d calls, %d answered 429", s.Concurrency, target.calls.Load(), adaptive429)

	fixed := &overloaded{capacity: 8}
	s = mustRun(t, context.Background(), nil, engine.Spec{
		Items: items(1000), Target: fixed,
		Options: engine.Options{Concurrency: 20, MaxRetries: 100, RetryDelay: -1, FixedConcurrency: true},
	})
	t.Logf("fixed: %d calls, %d answered 429", fixed.calls.Load(), fixed.n429.Load())
	if s.Concurrency != 20 {
		t.Fatalf("fixed concurrency reported as %d", s.Concurrency)
	}
	if adaptive429*2 > fixed.n429.Load() {
		t.Fatalf("adaptive drew %d 429s, fixed %d: adapting did not spare the server", adaptive429, fixed.n429.Load())
	}
}

// randomRefusals answers 429 to one call in twenty whatever the load, as
// a flaky gateway does; capacity is not the problem.
type randomRefusals struct{ calls atomic.Int64 }

func (r *randomRefusals) Execute(ctx context.Context, it *evalrun.Item) (evalrun.Output, error) {
	if r.calls.Add(1)%20 == 7 {
		return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorTransient, StatusCode: 429, Err: errors.New("too many requests")}
	}
	select {
	case <-time.After(time.Millisecond):
	case <-ctx.Done():
		return evalrun.Output{}, ctx.Err()
	}
	return evalrun.Output{Value: it.Input}, nil
}

// 429s at a level where most calls succeed are noise: retries handle them
// and the concurrency stays up.
func TestAdaptiveConcurrencyIgnoresRandomRefusals(t *testing.T) {
	target := &randomRefusals{}
	s := mustRun(t, context.Background(), nil, engine.Spec{
		Items: items(2000), Target: target,
		Options: engine.Options{Concurrency: 20, MaxRetries: 10, RetryDelay: -1},
	})
	if s.Succeeded != 2000 {
		t.Fatalf("%d succeeded, %d failed; want all 2000", s.Succeeded, s.Failed)
	}
	if s.Concurrency < 15 {
		t.Fatalf("settled at concurrency %d under 5%% random 429s; want it to stay near 20", s.Concurrency)
	}
	t.Logf("random refusals: settled %d, %d calls", s.Concurrency, target.calls.Load())
}
