package web

import (
	"context"
	"sync"
	"time"

	"github.com/evalrun/evalrun"
)

// memo caches values computed from the store (run reports, comparisons),
// keyed by a name, and validated by a fingerprint of the runs they came
// from. A value of finished runs is kept until its fingerprint changes or it
// is evicted (least recently used first); a value of a running run is
// recomputed when older than the refresh interval. Concurrent requests for
// the same value share one computation, which runs detached from the
// requests (so a closed browser tab does not waste it) and at most len(sem)
// at a time.
type memo[T any] struct {
	max   int
	clock evalrun.Clock
	sem   chan struct{}

	mu      sync.Mutex
	entries map[string]*memoEntry[T]
}

type memoEntry[T any] struct {
	fp       string
	done     bool // built from finished runs only
	builtAt  time.Time
	lastUsed time.Time
	ready    chan struct{}
	val      T
	err      error
}

func newMemo[T any](max int, clock evalrun.Clock, sem chan struct{}) *memo[T] {
	return &memo[T]{max: max, clock: clock, sem: sem, entries: make(map[string]*memoEntry[T])}
}

// get returns the value named key, computing it with build when it is not
// cached, stale (fp differs) or, for running runs (done false), older than
// ttl. bg is the context of the computation (the server's); it outlives
// ctx, which bounds only the wait.
func (m *memo[T]) get(ctx, bg context.Context, key, fp string, done bool, ttl time.Duration,
	build func(context.Context) (T, error)) (T, error) {
	now := m.clock.Now()
	m.mu.Lock()
	e := m.entries[key]
	fresh := e != nil && e.fp == fp && e.done == done && (done || !isReady(e) || now.Sub(e.builtAt) < ttl)
	if !fresh {
		e = &memoEntry[T]{fp: fp, done: done, ready: make(chan struct{})}
		m.entries[key] = e
		m.evict(key)
		go m.compute(bg, key, e, build)
	}
	e.lastUsed = now
	m.mu.Unlock()

	select {
	case <-e.ready:
		return e.val, e.err
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
}

// cached returns the value named key when it is ready and current.
func (m *memo[T]) cached(key, fp string) (T, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.entries[key]; e != nil && e.fp == fp && isReady(e) && e.err == nil {
		return e.val, true
	}
	var zero T
	return zero, false
}

func (m *memo[T]) compute(bg context.Context, key string, e *memoEntry[T], build func(context.Context) (T, error)) {
	defer close(e.ready)
	select {
	case m.sem <- struct{}{}:
		defer func() { <-m.sem }()
	case <-bg.Done():
		e.err = context.Cause(bg)
	}
	if e.err == nil {
		e.val, e.err = build(bg)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e.builtAt = m.clock.Now()
	if e.err != nil && m.entries[key] == e {
		delete(m.entries, key) // errors are not cached
	}
}

// evict drops the least recently used entries beyond max, never keep.
// m.mu is held.
func (m *memo[T]) evict(keep string) {
	for len(m.entries) > m.max {
		var oldest string
		var at time.Time
		for k, e := range m.entries {
			if k != keep && (oldest == "" || e.lastUsed.Before(at)) {
				oldest, at = k, e.lastUsed
			}
		}
		if oldest == "" {
			return
		}
		delete(m.entries, oldest)
	}
}

func isReady[T any](e *memoEntry[T]) bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}
