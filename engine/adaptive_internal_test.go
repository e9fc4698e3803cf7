package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/evalrun/evalrun"
)

var errTooMany = &evalrun.Error{Kind: evalrun.ErrorTransient, StatusCode: 429, Err: errors.New("too many requests")}

// TestAdaptiveSettledIsTheMedianCap replays, one call at a time, a run cut
// from 20 whose cap then climbs 11, 12, 13: the first burst of 20 attempts
// under cap 20 outnumbers the attempts under each later cap, yet most
// attempts started under 13 or less, and that is what the run settled at
// (the most frequent cap said 20).
func TestAdaptiveSettledIsTheMedianCap(t *testing.T) {
	ctx := context.Background()
	a := newAdaptiveLimit(20)
	if got := a.settled(); got != 20 {
		t.Fatalf("settled before any call = %d, want the configured 20", got)
	}
	// The first burst: 20 calls in flight, all started under cap 20.
	levels := make([]int, 20)
	for i := range levels {
		l, err := a.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		levels[i] = l
	}
	// The last two are refused, before any success: capacity, the cap is
	// halved to 10 (ceiling 18). The 18 successes then raise it by one
	// (10 successes at cap 10), leaving a streak of 8.
	a.release(levels[19], errTooMany)
	a.release(levels[18], errTooMany)
	if c := a.current(); c != 10 {
		t.Fatalf("cap after two refusals at capacity = %d, want 10 (20 halved)", c)
	}
	for i := 17; i >= 0; i-- {
		a.release(levels[i], nil)
	}
	if c := a.current(); c != 11 {
		t.Fatalf("cap after the burst = %d, want 11", c)
	}
	// Then calls one at a time, all succeeding: the cap climbs by one per
	// cap-many successes in a row.
	caps := map[int]int{}
	for range 3 + 12 + 13 {
		caps[a.current()]++
		l, err := a.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a.release(l, nil)
	}
	if len(caps) != 3 || caps[11] != 3 || caps[12] != 12 || caps[13] != 13 {
		t.Fatalf("attempts per cap after the burst = %v, want 3 under 11, 12 under 12, 13 under 13", caps)
	}
	// 48 attempts: 20 under cap 20, 3+12+13 = 28 under 11..13; the 24th
	// in cap order, the median, started under 13.
	if got := a.settled(); got != 13 {
		t.Fatalf("settled = %d, want 13: the median cap (cap 20 had the most attempts, %d)", got, a.atLimit[20])
	}
}
