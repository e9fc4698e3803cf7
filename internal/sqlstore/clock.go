package sqlstore

import (
	"sync/atomic"
	"time"

	"github.com/evalrun/evalrun"
)

// Clock is the clock a store's response cache decides expiry by: the
// client's, not the database server's, so that a fake clock reaches it.
// The zero value reads the system clock. It is safe for concurrent use.
type Clock struct {
	p atomic.Pointer[clockBox]
}

// clockBox lets an interface value live in an atomic.Pointer.
type clockBox struct{ evalrun.Clock }

// Set makes c read clock from now on; it is safe to call at any time.
func (c *Clock) Set(clock evalrun.Clock) { c.p.Store(&clockBox{clock}) }

// Now returns the time of the clock last set, or the system's.
func (c *Clock) Now() time.Time {
	if b := c.p.Load(); b != nil {
		return b.Now()
	}
	return time.Now()
}
