// Package retry runs an operation again after transient errors, with
// exponential back-off, jitter and respect for a server's Retry-After. The
// engine uses it for targets and for the result writer's store calls, the
// LLM judge for its model calls, so all follow one policy and report true
// attempt counts.
//
// It is written here rather than taken from a back-off library because the
// wait must go through an injectable [evalrun.Clock] (tests prove
// Retry-After is honoured without sleeping) and the jitter must only ever
// add to the documented delay, never shorten it.
package retry

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/evalrun/evalrun"
)

// MaxBackoff caps a single wait, whatever the attempt number.
const MaxBackoff = 5 * time.Minute

// Policy says how often and how long to retry. The zero value tries once.
type Policy struct {
	// MaxRetries is the number of retries after the first attempt.
	MaxRetries int
	// Delay is the base wait: retry n (from 0) waits Delay × 2^n plus up to
	// 25% jitter, and at least the error's Retry-After.
	Delay time.Duration
	// Clock is used for waiting; nil means evalrun.SystemClock.
	Clock evalrun.Clock
	// Jitter returns a random duration in [0, max); nil means uniform
	// random. Tests set it to make waits exact.
	Jitter func(max time.Duration) time.Duration
	// Retryable says whether an error is worth another attempt; nil means
	// evalrun.IsTransient. The result writer sets it: a store's errors are
	// not classified as transient or permanent the way a target's are.
	Retryable func(error) bool
}

// Backoff returns how long to wait before retry n (0 for the first retry)
// after err.
func (p Policy) Backoff(n int, err error) time.Duration {
	d := p.Delay
	for i := 0; i < n && d < MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, MaxBackoff)
	if j := d / 4; j > 0 {
		if p.Jitter != nil {
			d += p.Jitter(j)
		} else {
			d += rand.N(j)
		}
	}
	if ra := evalrun.RetryAfterOf(err); ra > d {
		d = ra
	}
	return d
}

// Do calls fn until it returns nil or an error not worth retrying
// ([Policy.Retryable], by default evalrun.IsTransient), or MaxRetries retries are spent, waiting
// [Policy.Backoff] between attempts. Cancellation of ctx is checked before
// every attempt and ends a wait at once; fn is never started on a done ctx.
//
// It returns the number of attempts made (0 when ctx was done before the
// first) and the last error; when ctx ended the loop, the error is
// context.Cause(ctx), so callers can tell a deadline from a cancel.
func Do(ctx context.Context, p Policy, fn func(ctx context.Context, attempt int) error) (attempts int, err error) {
	clock := p.Clock
	if clock == nil {
		clock = evalrun.SystemClock
	}
	retryable := p.Retryable
	if retryable == nil {
		retryable = evalrun.IsTransient
	}
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return attempts, context.Cause(ctx)
		}
		attempts++
		err = fn(ctx, attempt)
		if err == nil || !retryable(err) || attempt >= p.MaxRetries {
			return attempts, err
		}
		if ctx.Err() != nil {
			return attempts, context.Cause(ctx)
		}
		wait := p.Backoff(attempt, err)
		if wait > 0 {
			select {
			case <-ctx.Done():
				return attempts, context.Cause(ctx)
			case <-clock.After(wait):
			}
		}
	}
}
