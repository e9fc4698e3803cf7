package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/retry"
)

// instant is a clock whose waits end at once and are recorded.
type instant struct{ waits []time.Duration }

func (c *instant) Now() time.Time { return time.Time{} }
func (c *instant) After(d time.Duration) <-chan time.Time {
	c.waits = append(c.waits, d)
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}

func noJitter(time.Duration) time.Duration { return 0 }

func TestBackoff(t *testing.T) {
	p := retry.Policy{Delay: time.Second, Jitter: noJitter}
	for n, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		if got := p.Backoff(n, nil); got != want {
			t.Errorf("Backoff(%d) = %s, want %s", n, got, want)
		}
	}
	if got := p.Backoff(40, nil); got != retry.MaxBackoff {
		t.Errorf("Backoff(40) = %s, want the cap %s", got, retry.MaxBackoff)
	}
	ra := &evalrun.Error{Kind: evalrun.ErrorTransient, RetryAfter: 30 * time.Second}
	if got := p.Backoff(0, ra); got != 30*time.Second {
		t.Errorf("Retry-After not honoured: %s", got)
	}
	jittered := retry.Policy{Delay: time.Second}
	for range 100 {
		if got := jittered.Backoff(0, nil); got < time.Second || got >= 1250*time.Millisecond {
			t.Fatalf("jitter out of [1s, 1.25s): %s", got)
		}
	}
}

func TestDo(t *testing.T) {
	transient := evalrun.Transient(errors.New("503"))
	permanent := evalrun.Permanent(errors.New("400"))
	for _, c := range []struct {
		name     string
		errs     []error
		max      int
		attempts int
		waits    int
		ok       bool
	}{
		{"success first", []error{nil}, 3, 1, 0, true},
		{"transient then success", []error{transient, nil}, 3, 2, 1, true},
		{"permanent not retried", []error{permanent, nil}, 3, 1, 0, false},
		{"retries exhausted", []error{transient, transient, transient}, 2, 3, 2, false},
		{"no retries", []error{transient, nil}, 0, 1, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := &instant{}
			n, err := retry.Do(context.Background(), retry.Policy{MaxRetries: c.max, Delay: time.Millisecond, Clock: clock, Jitter: noJitter},
				func(_ context.Context, attempt int) error { return c.errs[attempt] })
			if n != c.attempts || (err == nil) != c.ok || len(clock.waits) != c.waits {
				t.Fatalf("attempts %d err %v waits %v", n, err, clock.waits)
			}
		})
	}
}

func TestDoStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("user stop")
	n, err := retry.Do(ctx, retry.Policy{MaxRetries: 5, Delay: time.Hour}, func(context.Context, int) error {
		cancel(cause)
		return evalrun.Transient(errors.New("503"))
	})
	if n != 1 || !errors.Is(err, cause) {
		t.Fatalf("attempts %d err %v", n, err)
	}
	n, _ = retry.Do(ctx, retry.Policy{}, func(context.Context, int) error { t.Fatal("called on a done context"); return nil })
	if n != 0 {
		t.Fatalf("attempts %d on a done context", n)
	}
}

// Retryable replaces the transient test: a plain error it accepts is
// retried, one it refuses is not.
func TestDoRetryable(t *testing.T) {
	full := errors.New("disk full")
	blip := errors.New("locked")
	policy := retry.Policy{MaxRetries: 3, Delay: time.Millisecond, Jitter: noJitter,
		Retryable: func(err error) bool { return !errors.Is(err, full) }}
	for _, c := range []struct {
		name     string
		errs     []error
		attempts int
		ok       bool
	}{
		{"plain error retried", []error{blip, blip, nil}, 3, true},
		{"refused error not retried", []error{full, nil}, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := &instant{}
			p := policy
			p.Clock = clock
			n, err := retry.Do(context.Background(), p, func(_ context.Context, attempt int) error { return c.errs[attempt] })
			if n != c.attempts || (err == nil) != c.ok || len(clock.waits) != c.attempts-1 {
				t.Fatalf("attempts %d err %v waits %v", n, err, clock.waits)
			}
		})
	}
}
