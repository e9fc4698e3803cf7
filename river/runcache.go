package river

import (
	"context"
	"sync"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
)

// runState is what a worker built for one run: shared by its jobs.
type runState struct {
	id       string
	run      *evalrun.Run
	target   evalrun.Target
	scorers  []evalrun.Scorer
	pipeline *engine.Pipeline
	items    ItemIndex // bounded: pages of the run's items, not all of them
	repeat   int
	strict   bool

	// Guarded by runCache.mu.
	ready    chan struct{} // closed once built (or failed)
	err      error
	refs     int
	lastUse  uint64
	stale    bool // evict once unused
	released bool
}

// close releases the target's and scorers' resources.
func (s *runState) close() {
	if c, ok := s.target.(evalrun.Closer); ok {
		_ = c.Close()
	}
	for _, sc := range s.scorers {
		if c, ok := sc.(evalrun.Closer); ok {
			_ = c.Close()
		}
	}
}

// runCache builds each run once, shares it between the run's jobs, and
// keeps at most max unused runs built, closing the least recently used.
type runCache struct {
	mu    sync.Mutex
	m     map[string]*runState
	max   int
	clock uint64
	build func(ctx context.Context, runID string) (*runState, error)
}

func newRunCache(max int, build func(context.Context, string) (*runState, error)) *runCache {
	return &runCache{m: make(map[string]*runState), max: max, build: build}
}

// acquire returns the built run, building it if needed (one build at a
// time per run; a failed build is not kept). Release it after use.
func (c *runCache) acquire(ctx context.Context, runID string) (*runState, error) {
	c.mu.Lock()
	e, ok := c.m[runID]
	if !ok {
		e = &runState{id: runID, ready: make(chan struct{})}
		c.m[runID] = e
		e.refs++
		c.mu.Unlock()
		built, err := c.build(ctx, runID)
		c.mu.Lock()
		if err != nil {
			e.err = err
			delete(c.m, runID)
		} else {
			e.run, e.target, e.scorers, e.pipeline = built.run, built.target, built.scorers, built.pipeline
			e.items, e.repeat, e.strict = built.items, built.repeat, built.strict
		}
		close(e.ready)
	} else {
		e.refs++
	}
	c.clock++
	e.lastUse = c.clock
	c.mu.Unlock()

	select {
	case <-e.ready:
	case <-ctx.Done():
		c.release(e)
		return nil, context.Cause(ctx)
	}
	if e.err != nil {
		c.release(e)
		return nil, e.err
	}
	return e, nil
}

// release ends a use of e and evicts what is over the bound.
func (c *runCache) release(e *runState) {
	c.mu.Lock()
	e.refs--
	var evict []*runState
	if e.refs == 0 && e.err == nil && e.stale && !e.released {
		evict = append(evict, c.drop(e))
	}
	for len(c.m) > c.max {
		var lru *runState
		for _, x := range c.m {
			if x.refs == 0 && isReady(x) && (lru == nil || x.lastUse < lru.lastUse) {
				lru = x
			}
		}
		if lru == nil {
			break
		}
		evict = append(evict, c.drop(lru))
	}
	c.mu.Unlock()
	for _, x := range evict {
		x.close()
	}
}

// drop removes e from the map; the caller closes it outside the lock.
func (c *runCache) drop(e *runState) *runState {
	if c.m[e.id] == e {
		delete(c.m, e.id)
	}
	e.released = true
	return e
}

// forget evicts a run that ended, now or once its last job releases it.
func (c *runCache) forget(runID string) {
	c.mu.Lock()
	e, ok := c.m[runID]
	var evict *runState
	if ok && isReady(e) && e.err == nil {
		e.stale = true
		if e.refs == 0 {
			evict = c.drop(e)
		}
	}
	c.mu.Unlock()
	if evict != nil {
		evict.close()
	}
}

// closeAll closes every built run (the worker has stopped).
func (c *runCache) closeAll() {
	c.mu.Lock()
	var evict []*runState
	for _, e := range c.m {
		if isReady(e) && e.err == nil {
			evict = append(evict, c.drop(e))
		}
	}
	c.mu.Unlock()
	for _, e := range evict {
		e.close()
	}
}

func isReady(e *runState) bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}
