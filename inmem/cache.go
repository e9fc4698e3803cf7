package inmem

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evalrun/evalrun"
)

var _ evalrun.ResponseCache = (*Store)(nil)

// cacheEntry is one cached value; expires is zero for a value that never
// expires.
type cacheEntry struct {
	value   []byte
	expires time.Time
	gen     uint64 // which put wrote it
}

// responseCache is the store's [evalrun.ResponseCache] state, apart from the
// datasets and runs so that cache traffic never waits for a result batch.
type responseCache struct {
	clock   atomic.Pointer[clockBox]
	mu      sync.RWMutex
	entries map[string]cacheEntry
	puts    uint64 // under mu
}

// clockBox lets an interface value live in an atomic.Pointer.
type clockBox struct{ evalrun.Clock }

func (c *responseCache) now() time.Time {
	if b := c.clock.Load(); b != nil {
		return b.Now()
	}
	return time.Now()
}

// SetClock sets the clock the response cache reads to decide expiry, and
// run claims (ClaimRun) their lease ([evalrun.SystemClock] by default); tests inject a fake one. It is safe to
// call at any time.
func (s *Store) SetClock(c evalrun.Clock) { s.cache.clock.Store(&clockBox{c}) }

// GetCached implements [evalrun.ResponseCache]. The value returned is a copy.
// An expired value is a miss (and is dropped).
func (s *Store) GetCached(ctx context.Context, key string) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	c := &s.cache
	now := c.now()
	c.mu.RLock()
	e, ok := c.entries[key]
	c.mu.RUnlock()
	if !ok {
		return nil, false, nil
	}
	if !e.expires.IsZero() && !now.Before(e.expires) {
		c.mu.Lock()
		// Drop it unless a put replaced it meanwhile.
		if cur, ok := c.entries[key]; ok && cur.gen == e.gen {
			delete(c.entries, key)
		}
		c.mu.Unlock()
		return nil, false, nil
	}
	v := slices.Clone(e.value)
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// PutCached implements [evalrun.ResponseCache]. The value is copied. A ttl of
// 0 never expires; a negative ttl stores a value that is already expired
// (so it replaces an earlier value and reads as a miss).
func (s *Store) PutCached(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := &s.cache
	e := cacheEntry{value: slices.Clone(value)}
	if ttl != 0 {
		e.expires = c.now().Add(ttl)
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]cacheEntry{}
	}
	c.puts++
	e.gen = c.puts
	c.entries[key] = e
	c.mu.Unlock()
	return nil
}
