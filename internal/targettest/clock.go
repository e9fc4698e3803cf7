package targettest

import (
	"sync"
	"time"

	"github.com/evalrun/evalrun"
)

var _ evalrun.Clock = (*Clock)(nil)

// Clock is an [evalrun.Clock] frozen at a time, whose After fires at once
// and records the durations asked for. Use [NewClock]; it is safe for
// concurrent use.
type Clock struct {
	now time.Time

	mu    sync.Mutex
	waits []time.Duration
}

// NewClock returns a clock frozen at now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the time the clock is frozen at.
func (c *Clock) Now() time.Time { return c.now }

// After records d and returns a channel that already holds the time d from
// now.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- c.now.Add(d)
	return ch
}

// Waits returns the durations After was called with, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}
