package engine_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
)

// Options beyond the bounds are refused with ErrInvalid and the bound, so a
// library user cannot make the engine allocate without limit or panic
// (an int64-max concurrency used to panic in makeslice; a repeat of 10⁹
// asked for gigabytes).
func TestOptionBounds(t *testing.T) {
	for _, tc := range []struct {
		opts engine.Options
		want string
	}{
		{engine.Options{Concurrency: math.MaxInt},
			"invalid: concurrency 9223372036854775807: must be at most 10000 (each slot is a goroutine and, for a network target, an open connection)"},
		{engine.Options{Concurrency: engine.MaxConcurrency + 1, FixedConcurrency: true},
			"invalid: concurrency 10001: must be at most 10000 (each slot is a goroutine and, for a network target, an open connection)"},
		{engine.Options{Repeat: 1_000_000_000},
			"invalid: repeat 1000000000: must be at most 1000 (the run holds every execution of every item)"},
		{engine.Options{MaxRetries: math.MaxInt},
			"invalid: max_retries 9223372036854775807: must be at most 100 (the back-off doubles at every retry)"},
		{engine.Options{ItemTimeout: math.MaxInt64, RetryDelay: 90 * time.Minute},
			"invalid: item_timeout 2562047h47m16.854775807s: must be at most 24h0m0s (an item running longer is stuck; 0 means none)\n" +
				"retry_delay 1h30m0s: must be at most 1h0m0s (it is the base of a doubling back-off)"},
	} {
		_, err := engine.NewPipeline(echo, nil, tc.opts)
		if !errors.Is(err, evalrun.ErrInvalid) || err.Error() != tc.want {
			t.Errorf("NewPipeline(%+v):\n got %v\nwant %s", tc.opts, err, tc.want)
		}
		store := newFakeStore()
		if s, err := engine.Run(context.Background(), store, engine.Spec{Items: items(1), Target: echo, Options: tc.opts}); err == nil || s != nil || len(store.runs) != 0 {
			t.Errorf("Run(%+v): err %v, summary %v, %d runs stored", tc.opts, err, s, len(store.runs))
		}
	}
	// At the bounds, a pipeline is made.
	at := engine.Options{Concurrency: engine.MaxConcurrency, Repeat: engine.MaxRepeat, MaxRetries: engine.MaxRetries,
		ItemTimeout: engine.MaxTimeout, AttemptTimeout: engine.MaxTimeout, RetryDelay: engine.MaxRetryDelay, CacheTTL: engine.MaxCacheTTL}
	if _, err := engine.NewPipeline(echo, nil, at); err != nil {
		t.Errorf("at the bounds: %v", err)
	}
}

// Items × repeat beyond MaxExecutions is refused before anything is
// stored or allocated.
func TestExecutionsBound(t *testing.T) {
	n := engine.MaxExecutions/engine.MaxRepeat + 1
	many := make([]*evalrun.Item, n)
	for i := range many {
		many[i] = &evalrun.Item{ID: "x", Input: evalrun.String("x")}
	}
	store := newFakeStore()
	s, err := engine.Run(context.Background(), store, engine.Spec{Items: many, Target: echo, Options: engine.Options{Repeat: engine.MaxRepeat}})
	want := "invalid: 10001 items × repeat 1000: more than 10000000 executions in one run (each holds memory until the run ends); select fewer items (--limit, --tag) or repeat less"
	if !errors.Is(err, evalrun.ErrInvalid) || err.Error() != want || s != nil || len(store.runs) != 0 {
		t.Errorf("err %v, summary %v, %d runs stored\nwant %s", err, s, len(store.runs), want)
	}
	if err := engine.CheckExecutions(n-1, engine.MaxRepeat); err != nil {
		t.Errorf("at the bound: %v", err)
	}
}
