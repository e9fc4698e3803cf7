package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/evalrun/evalrun"
)

// probeFactor: after probeFactor × limit successes in a row at the
// ceiling learnt from a 429, the ceiling is raised by one to find out
// whether the server now takes more.
const probeFactor = 50

// adaptiveLimit caps the target calls in flight and adapts the cap to the
// server's 429s (AIMD, as TCP does): a 429 halves it (at most once per
// window of limit completions, so one burst is one cut) and remembers the
// in-flight level that provoked it as a ceiling; every limit successes in
// a row add one, up to the ceiling and never above the configured
// concurrency; a long streak at the ceiling probes one higher.
//
// A nil *adaptiveLimit does nothing: adaptive concurrency is off.
type adaptiveLimit struct {
	mu        sync.Mutex
	cond      *sync.Cond
	max       int
	limit     int
	ceiling   int
	inflight  int
	streak    int // successes in a row since the last change
	sinceCut  int // completions since the last cut
	cuts      int
	atLimit   []int64 // attempts started at each limit, for the settled value
	lastLevel int
}

func newAdaptiveLimit(max int) *adaptiveLimit {
	a := &adaptiveLimit{max: max, limit: max, ceiling: max, sinceCut: max, atLimit: make([]int64, max+1)}
	a.cond = sync.NewCond(&a.mu)
	return a
}

// acquire waits for a free slot or for ctx to end. It returns the number
// of calls in flight including this one.
func (a *adaptiveLimit) acquire(ctx context.Context) (int, error) {
	if a == nil {
		return 0, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inflight >= a.limit {
		stop := context.AfterFunc(ctx, func() {
			a.mu.Lock()
			a.cond.Broadcast()
			a.mu.Unlock()
		})
		defer stop()
		for a.inflight >= a.limit {
			if ctx.Err() != nil {
				return 0, context.Cause(ctx)
			}
			a.cond.Wait()
		}
	}
	a.inflight++
	a.atLimit[a.limit]++
	return a.inflight, nil
}

// release frees a slot taken at the given in-flight level and learns from
// the call's error.
func (a *adaptiveLimit) release(level int, err error) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inflight--
	a.sinceCut++
	switch {
	case rateLimited(err):
		a.streak = 0
		if a.sinceCut >= a.limit {
			a.ceiling = max(1, level-1)
			a.limit = max(1, min(a.limit/2, a.ceiling))
			a.sinceCut = 0
			a.cuts++
		}
	case err == nil:
		a.streak++
		if a.limit < a.ceiling && a.streak >= a.limit {
			a.limit++
			a.streak = 0
		} else if a.limit == a.ceiling && a.ceiling < a.max && a.streak >= probeFactor*a.limit {
			a.ceiling++
			a.streak = 0
		}
	}
	a.cond.Broadcast()
}

// current returns the cap now.
func (a *adaptiveLimit) current() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.limit
}

// settled returns the cap under which most calls started.
func (a *adaptiveLimit) settled() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	best := a.limit
	for l, n := range a.atLimit {
		if n > a.atLimit[best] {
			best = l
		}
	}
	return best
}

func rateLimited(err error) bool {
	var e *evalrun.Error
	return errors.As(err, &e) && e.StatusCode == 429
}
