package river

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// steppedClock is a Clock the test moves: Now is what the test set, and
// each After sends its duration to asked and ends when the test fires.
type steppedClock struct {
	mu    sync.Mutex
	now   time.Time
	asked chan time.Duration
	fire  chan time.Time
}

func (c *steppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *steppedClock) After(d time.Duration) <-chan time.Time {
	c.asked <- d
	return c.fire
}

func (c *steppedClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Wait polls every PollInterval while the end is far, and sooner when the
// latest rate of results says the run ends before the next poll: it
// returns soon after the last result, not up to a PollInterval later.
func TestWaitPollsSoonerNearTheEnd(t *testing.T) {
	b := setup(t, 0)
	items := b.importItems(t, "pace", inputs("p", 8))
	run := b.enqueue(t, "pace", items, runConfig{}) // no worker: the test writes the results
	clock := &steppedClock{now: time.Unix(1e9, 0), asked: make(chan time.Duration), fire: make(chan time.Time)}
	coord, err := NewCoordinator(t.Context(), b.store, CoordinatorOptions{PollInterval: 10 * time.Second, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	write := func(from, to int) {
		t.Helper()
		var rs []*evalrun.ItemResult
		for i := from; i < to; i++ {
			out, _ := json.Marshal(items[i].ID)
			rs = append(rs, &evalrun.ItemResult{RunID: run.ID, Index: i, ItemID: items[i].ID, Output: out, Attempts: 1})
		}
		if err := b.store.WriteResults(t.Context(), rs); err != nil {
			t.Fatal(err)
		}
	}
	type waited struct {
		s   *evalrun.Summary
		err error
	}
	done := make(chan waited, 1)
	go func() {
		s, err := coord.Wait(context.Background(), run.ID, WaitOptions{})
		done <- waited{s, err}
	}()

	// The first poll sees nothing: no rate yet, the next poll is a whole
	// interval away.
	if d := <-clock.asked; d != 10*time.Second {
		t.Fatalf("after the first poll, wait %s; want the interval", d)
	}
	// 6 of 8 in 10 s: the last 2 are due in 3.33 s.
	write(0, 6)
	clock.advance(10 * time.Second)
	clock.fire <- clock.Now()
	if d := <-clock.asked; d < 3300*time.Millisecond || d > 3400*time.Millisecond {
		t.Fatalf("with 2 of 8 results left at 6 per 10 s, wait %s; want ~3.33 s", d)
	}
	// Slower than predicted (1 more in 3.33 s): the rest is due in 3.33 s
	// again.
	write(6, 7)
	clock.advance(3333 * time.Millisecond)
	clock.fire <- clock.Now()
	if d := <-clock.asked; d < 3300*time.Millisecond || d > 3400*time.Millisecond {
		t.Fatalf("with 1 result left at 1 per 3.33 s, wait %s; want ~3.33 s", d)
	}
	write(7, 8)
	clock.advance(time.Second)
	clock.fire <- clock.Now()
	w := <-done
	if w.err != nil {
		t.Fatal(w.err)
	}
	if w.s.Status != evalrun.RunCompleted || w.s.Succeeded != 8 {
		t.Fatalf("summary = %+v, want 8 succeeded", w.s)
	}
}

// The pace never polls sooner than PollInterval/20 nor than twice a
// poll's own duration, and keeps the interval while no result arrives.
func TestPollPaceBounds(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	for _, tc := range []struct {
		name     string
		done1    int
		at2      time.Duration
		done2    int
		took     time.Duration
		want     time.Duration
		total    int
		interval time.Duration
	}{
		{"far from the end", 100, time.Second, 200, 0, time.Second, 10000, time.Second},
		{"no progress", 100, time.Second, 100, 0, time.Second, 200, time.Second},
		{"due in 10 ms: the floor", 100, time.Second, 199, 0, 50 * time.Millisecond, 200, time.Second},
		{"due in 10 ms, a slow count", 100, time.Second, 199, 40 * time.Millisecond, 80 * time.Millisecond, 200, time.Second},
		{"a count slower than the interval", 100, time.Second, 199, 3 * time.Second, time.Second, 200, time.Second},
		{"due in half an interval", 0, time.Second, 100, 0, 500 * time.Millisecond, 150, time.Second},
	} {
		p := pollPace{interval: tc.interval, total: tc.total}
		if d := p.next(t0, tc.done1, 0); d != tc.interval {
			t.Errorf("%s: first poll: %s, want the interval", tc.name, d)
		}
		if d := p.next(t0.Add(tc.at2), tc.done2, tc.took); d != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, d, tc.want)
		}
	}
}
