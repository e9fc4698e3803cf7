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
	DefaultWriterBufferBytes = 8 << 20
	DefaultFlushInterval     = 100 * time.Millisecond
)

// Bounds of [Options]: what one process can do, chosen on purpose so that
// a typo or a hostile suite is refused instead of exhausting memory or
// waiting for ever (docs/suite.md#limits). [Run] and [NewPipeline] refuse
// a value beyond one with ErrInvalid; the suite file and the CLI check the
// same bounds with [CheckBound].
const (
	// MaxConcurrency bounds Concurrency: every slot is a goroutine and, for
	// a network target, an open connection (a file descriptor).
	MaxConcurrency = 10_000
	// MaxRepeat bounds Repeat: pass@k estimates need a few dozen.
	MaxRepeat = 1_000
	// MaxExecutions bounds items × Repeat: the run holds a slot per
	// execution, and a retained result (~1 KB and more) for each.
	MaxExecutions = 10_000_000
	// MaxRetries bounds Options.MaxRetries: back-off doubles at every
	// retry, so a few dozen already wait for days.
	MaxRetries = 100
	// MaxTimeout bounds ItemTimeout and AttemptTimeout: one item running
	// longer than a day is a stuck item.
	MaxTimeout = 24 * time.Hour
	// MaxRetryDelay bounds RetryDelay, the base of the back-off.
	MaxRetryDelay = time.Hour
	// MaxCacheTTL bounds CacheTTL (0 already means "forever").
	MaxCacheTTL = 10 * 365 * 24 * time.Hour
)

// bounds are the bounds of the options with a limit, by their suite key,
// with the reason a message gives.
var bounds = map[string]struct {
	max int64
	why string
}{
	"concurrency":     {MaxConcurrency, "each slot is a goroutine and, for a network target, an open connection"},
	"repeat":          {MaxRepeat, "the run holds every execution of every item"},
	"max_retries":     {MaxRetries, "the back-off doubles at every retry"},
	"item_timeout":    {int64(MaxTimeout), "an item running longer is stuck; 0 means none"},
	"attempt_timeout": {int64(MaxTimeout), "an attempt running longer is stuck; 0 means none"},
	"retry_delay":     {int64(MaxRetryDelay), "it is the base of a doubling back-off"},
	"cache_ttl":       {int64(MaxCacheTTL), "0 keeps cached responses for ever"},
}

// CheckBound returns nil when v is within the bound of the option named
// key as in the suite file ("concurrency", "repeat", "max_retries",
// "item_timeout", "attempt_timeout", "retry_delay", "cache_ttl"; a
// duration in nanoseconds), and otherwise an error saying the bound and
// why it exists. A key without a bound is always within.
func CheckBound(key string, v int64) error {
	b, ok := bounds[key]
	if !ok || v <= b.max {
		return nil
	}
	switch key {
	case "item_timeout", "attempt_timeout", "retry_delay", "cache_ttl":
		return fmt.Errorf("must be at most %s (%s)", time.Duration(b.max), b.why)
	}
	return fmt.Errorf("must be at most %d (%s)", b.max, b.why)
}

// CheckExecutions returns nil when items × repeat executions fit
// [MaxExecutions], and otherwise an error saying so.
func CheckExecutions(items, repeat int) error {
	if items > 0 && max(repeat, 1) > MaxExecutions/items {
		return fmt.Errorf("%d items × repeat %d: more than %d executions in one run (each holds memory until the run ends); select fewer items (--limit, --tag) or repeat less",
			items, max(repeat, 1), MaxExecutions)
	}
	return nil
}

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
	for _, b := range []struct {
		key  string
		v    int64
		show any
	}{{"concurrency", int64(o.Concurrency), o.Concurrency}, {"repeat", int64(o.Repeat), o.Repeat},
		{"max_retries", int64(o.MaxRetries), o.MaxRetries}, {"item_timeout", int64(o.ItemTimeout), o.ItemTimeout},
		{"attempt_timeout", int64(o.AttemptTimeout), o.AttemptTimeout},
		{"retry_delay", int64(o.RetryDelay), o.RetryDelay}, {"cache_ttl", int64(o.CacheTTL), o.CacheTTL}} {
		if err := CheckBound(b.key, b.v); err != nil {
			errs = append(errs, fmt.Errorf("%s %v: %w", b.key, b.show, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", evalrun.ErrInvalid, errors.Join(errs...))
	}
	return nil
}
