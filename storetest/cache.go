package storetest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// CacheClock is implemented by stores whose response cache decides expiry
// by a clock that can be set. The suite uses it to test expiry without
// sleeping; every backend of this module implements it.
type CacheClock interface {
	// SetClock sets the clock the response cache reads.
	SetClock(c evalrun.Clock)
}

// FakeClock is an [evalrun.Clock] that stands still until told to move.
// It is safe for concurrent use.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a clock standing at now.
func NewFakeClock(now time.Time) *FakeClock { return &FakeClock{now: now} }

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that already holds the time d from now (nothing
// waits on a fake clock).
func (c *FakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.Now().Add(d)
	return ch
}

// Advance moves the clock by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func responseCache(t *testing.T, s evalrun.Store) evalrun.ResponseCache {
	t.Helper()
	c, ok := s.(evalrun.ResponseCache)
	if !ok {
		t.Fatalf("%T does not implement evalrun.ResponseCache", s)
	}
	return c
}

func cacheClock(t *testing.T, s evalrun.Store, now time.Time) *FakeClock {
	t.Helper()
	c, ok := s.(CacheClock)
	if !ok {
		t.Fatalf("%T does not implement storetest.CacheClock", s)
	}
	clock := NewFakeClock(now)
	c.SetClock(clock)
	return clock
}

func mustPut(t *testing.T, c evalrun.ResponseCache, key string, value []byte, ttl time.Duration) {
	t.Helper()
	if err := c.PutCached(t.Context(), key, value, ttl); err != nil {
		t.Fatalf("PutCached(%.40q, %d bytes, %v): %v", key, len(value), ttl, err)
	}
}

// wantCached checks that key holds want; want nil means a miss.
func wantCached(t *testing.T, c evalrun.ResponseCache, key string, want []byte) {
	t.Helper()
	got, ok, err := c.GetCached(t.Context(), key)
	if err != nil {
		t.Fatalf("GetCached(%.40q): %v", key, err)
	}
	switch {
	case want == nil && ok:
		t.Fatalf("GetCached(%.40q) = hit (%d bytes %.40q), want a miss", key, len(got), got)
	case want != nil && !ok:
		t.Fatalf("GetCached(%.40q) = miss, want a hit (%d bytes)", key, len(want))
	case want != nil && !bytes.Equal(got, want):
		t.Fatalf("GetCached(%.40q) = %d bytes %.40q, want %d bytes %.40q", key, len(got), got, len(want), want)
	case !ok && got != nil:
		t.Fatalf("GetCached(%.40q) missed but returned %q", key, got)
	}
}

func testCacheHitMiss(t *testing.T, s evalrun.Store) {
	c := responseCache(t, s)
	wantCached(t, c, "absent", nil)

	v := []byte(`{"output":"hello"}`)
	mustPut(t, c, "k1", v, 0)
	v[2] = 'X' // the caller's later changes do not reach the cache
	wantCached(t, c, "k1", []byte(`{"output":"hello"}`))
	wantCached(t, c, "k2", nil)

	// A hit's bytes belong to the caller.
	got, _, _ := c.GetCached(t.Context(), "k1")
	got[0] = '['
	wantCached(t, c, "k1", []byte(`{"output":"hello"}`))

	// A put replaces; other keys are untouched.
	mustPut(t, c, "k2", []byte("two"), 0)
	mustPut(t, c, "k1", []byte("one, again"), 0)
	wantCached(t, c, "k1", []byte("one, again"))
	wantCached(t, c, "k2", []byte("two"))

	// An empty value is a hit with no bytes, not a miss.
	mustPut(t, c, "empty", nil, 0)
	wantCached(t, c, "empty", []byte{})

	// Keys are compared exactly.
	wantCached(t, c, "K1", nil)
	wantCached(t, c, "k1 ", nil)
}

func testCacheExpiry(t *testing.T, s evalrun.Store) {
	c := responseCache(t, s)
	clock := cacheClock(t, s, base)

	mustPut(t, c, "minute", []byte("m"), time.Minute)
	mustPut(t, c, "forever", []byte("f"), 0)
	mustPut(t, c, "past", []byte("p"), -time.Second) // a ttl in the past: expired at once
	wantCached(t, c, "past", nil)
	wantCached(t, c, "minute", []byte("m"))

	clock.Advance(59 * time.Second)
	wantCached(t, c, "minute", []byte("m"))
	clock.Advance(time.Second) // exactly the ttl: expired
	wantCached(t, c, "minute", nil)
	clock.Advance(24 * 365 * time.Hour)
	wantCached(t, c, "minute", nil)
	wantCached(t, c, "forever", []byte("f"))

	// A put over an expired value makes it live again, with the new ttl
	// counted from the put.
	mustPut(t, c, "minute", []byte("m2"), time.Hour)
	clock.Advance(30 * time.Minute)
	wantCached(t, c, "minute", []byte("m2"))
	// A put with a ttl over a value that never expired now expires; and a
	// put without one makes a value permanent.
	mustPut(t, c, "forever", []byte("f2"), time.Second)
	mustPut(t, c, "minute", []byte("m3"), 0)
	clock.Advance(time.Hour)
	wantCached(t, c, "forever", nil)
	wantCached(t, c, "minute", []byte("m3"))
	// A ttl in the past replaces a live value with a miss.
	mustPut(t, c, "minute", []byte("m4"), -time.Nanosecond)
	wantCached(t, c, "minute", nil)
}

func testCacheLarge(t *testing.T, s evalrun.Store) {
	c := responseCache(t, s)
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 3<<20) // 3 MiB of every byte value
	for i := range big {
		big[i] = byte(rng.UintN(256))
	}
	key := "openai/" + strings.Repeat("0123456789abcdef", 20) + "/repeat=2/é" // a few hundred bytes
	mustPut(t, c, key, big, time.Hour)
	wantCached(t, c, key, big)
	// The same key without its last character is another key.
	wantCached(t, c, strings.TrimSuffix(key, "é"), nil)
	// Replacing a large value with a small one leaves nothing behind.
	mustPut(t, c, key, []byte{0, 1, 0}, time.Hour)
	wantCached(t, c, key, []byte{0, 1, 0})
}

func testCacheConcurrent(t *testing.T, s evalrun.Store) {
	c := responseCache(t, s)
	const workers, keys = 6, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				key := fmt.Sprintf("key-%d", (w+i)%keys)
				if err := c.PutCached(t.Context(), key, []byte(fmt.Sprintf("%s by %d", key, w)), time.Hour); err != nil {
					errs <- err
					return
				}
				if _, _, err := c.GetCached(t.Context(), key); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent cache use: %v", err)
	}
	for k := range keys {
		key := fmt.Sprintf("key-%d", k)
		got, ok, err := c.GetCached(t.Context(), key)
		if err != nil || !ok || !strings.HasPrefix(string(got), key+" by ") {
			t.Fatalf("after concurrent puts, %s = %q, %v, %v; want one writer's value", key, got, ok, err)
		}
	}
}
