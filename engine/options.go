package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/evalrun/evalrun"
)

// Defaults applied to zero-valued [Options] fields.
const (
	DefaultConcurrency  = 5
	DefaultRetryDelay   = time.Second
	DefaultWriterBatch  = 256
	DefaultWriterBuffer = 1024
	// DefaultWriterBufferBytes bounds the bytes of results waiting for the
	// store.
	DefaultWriterBufferBytes = 32 << 20
	DefaultFlushInterval     = 100 * time.Millisecond
)

// Options configure a run. The zero value is valid: concurrency 5, no item
// timeout, no retries, results retained.
type Options struct {
	// Concurrency bounds the items in flight; 0 means DefaultConcurrency.
	Concurrency int
	// FixedConcurrency turns adaptive concurrency off. By default target
	// calls in flight are capped by an adaptive limit that a 429 cuts
	// (multiplicatively) and sustained success regrows (additively), never
	// above Concurrency nor below 1.
	FixedConcurrency bool
	// ItemTimeout bounds an item's whole execution, every attempt and
	// back-off included; 0 means none. Scoring gets its own ItemTimeout.
	ItemTimeout time.Duration
	// AttemptTimeout bounds one attempt; its expiry is a transient error,
	// so it is retried. 0 means none.
	AttemptTimeout time.Duration
	// MaxRetries is how often a transient error is retried (0: never).
	MaxRetries int
	// RetryDelay is the base back-off: retry n waits RetryDelay × 2^n plus
	// jitter, and at least the error's Retry-After. 0 means
	// DefaultRetryDelay; a negative value means no delay.
	RetryDelay time.Duration
	// Repeat runs every item this many times (0 or 1: once).
	Repeat int
	// DiscardResults drops each result once it is handed to the store, so
	// memory stays flat whatever the dataset size (retain_results: false).
	// Summary.Results is then nil.
	DiscardResults bool
	// Strict cancels the run at the first scorer error; the run then ends
	// failed.
	Strict bool
	// Resume continues the run whose record is given in [Spec.Run]: items
	// (and repeats) that already have a stored result are not run again.
	Resume bool
	// RetryFailed, with Resume, also runs again the items whose stored
	// result is a failure.
	RetryFailed bool
	// Cache, when set, is the response cache: a target output stored for
	// (CacheKey, input, repeat) is used instead of calling the target
	// (ItemResult.CacheHit, no attempt, no usage), and every successful
	// output is stored for CacheTTL (0: forever). Errors are never
	// cached. CacheKey must identify the target's effective configuration
	// (secrets excluded): change a parameter and the cache misses.
	Cache    evalrun.ResponseCache
	CacheKey string
	CacheTTL time.Duration
	// Progress, when set, is called after every finished item with the
	// counts so far. Calls are serialized; keep it fast.
	Progress func(evalrun.Progress)
	// WriterBatch is the most results written in one store call;
	// WriterBuffer and WriterBufferBytes the most results (and bytes of
	// them) waiting for the store before the pipeline blocks
	// (backpressure); FlushInterval the longest a result waits before it
	// is written. Zero values take the defaults.
	WriterBatch       int
	WriterBuffer      int
	WriterBufferBytes int64
	FlushInterval     time.Duration
	// OnStoreFailure, when set, is called once, as soon as the store is
	// found to refuse results (its error is marked
	// evalrun.ErrStoreUnavailable, or batch after batch is refused): the
	// run then stops and ends failed with err, which wraps ErrStoreFailed.
	// It runs on the writer's goroutine; keep it fast.
	OnStoreFailure func(err error)
	// Logger receives persistence failures and panics; nil discards.
	Logger *slog.Logger
	// Clock is used for every wait; nil means the system clock.
	Clock evalrun.Clock
	// Jitter, when set, replaces the random jitter of back-off (tests).
	Jitter func(max time.Duration) time.Duration
}

func (o Options) withDefaults() Options {
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = DefaultRetryDelay
	} else if o.RetryDelay < 0 {
		o.RetryDelay = 0
	}
	if o.Repeat == 0 {
		o.Repeat = 1
	}
	if o.WriterBatch <= 0 {
		o.WriterBatch = DefaultWriterBatch
	}
	if o.WriterBuffer <= 0 {
		o.WriterBuffer = DefaultWriterBuffer
	}
	if o.WriterBufferBytes <= 0 {
		o.WriterBufferBytes = DefaultWriterBufferBytes
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = evalrun.SystemClock
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency %d: must be at least 1", o.Concurrency))
	}
	if o.ItemTimeout < 0 {
		errs = append(errs, fmt.Errorf("item_timeout %s: must not be negative (0 means none)", o.ItemTimeout))
	}
	if o.AttemptTimeout < 0 {
		errs = append(errs, fmt.Errorf("attempt_timeout %s: must not be negative (0 means none)", o.AttemptTimeout))
	}
	if o.MaxRetries < 0 {
		errs = append(errs, fmt.Errorf("max_retries %d: must not be negative", o.MaxRetries))
	}
	if o.Repeat < 0 {
		errs = append(errs, fmt.Errorf("repeat %d: must be at least 1", o.Repeat))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", evalrun.ErrInvalid, errors.Join(errs...))
	}
	return nil
}
