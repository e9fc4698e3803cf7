package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/evalrun/evalrun"
)

// probeFactor: after probeFactor × limit successes in a row at the
// ceiling learnt from 429s, the ceiling is raised by one to find out
// whether the server now takes more.
const probeFactor = 50

// decayEvery: the per-level outcome counts are halved every decayEvery ×
// Concurrency calls, so the limit follows a server whose capacity changes.
const decayEvery = 64

// adaptiveLimit caps the target calls in flight and adapts the cap to the
// server's 429s (AIMD, as TCP does), telling a server at capacity from one
// that refuses a share of calls at random:
//
//   - it counts, per in-flight level (how many calls were in flight when a
//     call started), the calls that succeeded and those answered 429;
//   - a 429 when most calls started at its level or above were refused
//     (two refusals at least) means capacity: the
//     cap is halved (at most once per window of limit completions, so one
//     burst is one cut), and the ceiling becomes the highest lower level
//     where most calls succeeded;
//   - a 429 at a level where most calls succeed is noise (a per-minute
//     quota's edge, a server refusing a few calls at random) and cuts
//     nothing: retries handle it;
//   - every limit successes in a row add one to the cap, up to the ceiling
//     and never above the configured concurrency; a long streak at the
//     ceiling probes one higher.
//
// A nil *adaptiveLimit does nothing: adaptive concurrency is off.
type adaptiveLimit struct {
	mu       sync.Mutex
	cond     *sync.Cond
	max      int
	limit    int
	ceiling  int
	inflight int
	streak   int // successes in a row since the last change
	sinceCut int // completions since the last cut
	// ok and refused count outcomes per in-flight level (decayed).
	ok, refused []float64
	calls       int     // since the last decay
	atLimit     []int64 // attempts started at each limit, for the settled value
}

func newAdaptiveLimit(max int) *adaptiveLimit {
	a := &adaptiveLimit{max: max, limit: max, ceiling: max, sinceCut: max,
		ok: make([]float64, max+1), refused: make([]float64, max+1), atLimit: make([]int64, max+1)}
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
	level = min(max(level, 1), a.max)
	switch {
	case rateLimited(err):
		a.refused[level]++
		if a.sinceCut >= a.limit && a.atCapacity(level) {
			a.ceiling = a.highestGoodBelow(level)
			a.limit = max(1, min(a.limit/2, a.ceiling))
			a.sinceCut, a.streak = 0, 0
		}
	case err == nil:
		a.ok[level]++
		a.streak++
		if a.limit < a.ceiling && a.streak >= a.limit {
			a.limit++
			a.streak = 0
		} else if a.limit == a.ceiling && a.ceiling < a.max && a.streak >= probeFactor*a.limit {
			a.ceiling++
			a.streak = 0
		}
	}
	if a.calls++; a.calls >= decayEvery*a.max {
		for l := range a.ok {
			a.ok[l], a.refused[l] = a.ok[l]/2, a.refused[l]/2
		}
		a.calls = 0
	}
	a.cond.Broadcast()
}

// atCapacity reports whether calls started at level or above were mostly
// refused, on the evidence of at least two refusals (one refusal among no
// successes yet proves nothing).
func (a *adaptiveLimit) atCapacity(level int) bool {
	var ok, refused float64
	for l := level; l <= a.max; l++ {
		ok, refused = ok+a.ok[l], refused+a.refused[l]
	}
	return refused >= 2 && refused >= ok
}

// highestGoodBelow returns the highest level under level at which most
// calls succeeded, or level−1 when no lower level has been seen yet.
func (a *adaptiveLimit) highestGoodBelow(level int) int {
	for l := level - 1; l >= 1; l-- {
		if a.ok[l] > a.refused[l] {
			return l
		}
	}
	return max(1, level-1)
}

// current returns the cap now.
func (a *adaptiveLimit) current() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.limit
}

// settled returns the median cap over the attempts: half of them started
// under this cap or a lower one. Not the most frequent cap: after a cut the
// additive increase spreads the attempts over adjacent caps (10, 11, 12…),
// so the configured concurrency, under which the whole first burst
// started, was often the most frequent though the run spent little time
// there (a 120-item run cut from 20 reported 20).
func (a *adaptiveLimit) settled() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	var total int64
	for _, n := range a.atLimit {
		total += n
	}
	if total == 0 {
		return a.limit
	}
	var seen int64
	for l, n := range a.atLimit {
		if seen += n; 2*seen >= total {
			return l
		}
	}
	return a.limit // not reached: seen ends at total
}

func rateLimited(err error) bool {
	var e *evalrun.Error
	return errors.As(err, &e) && e.StatusCode == 429
}
