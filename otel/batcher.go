package otel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The batch settings' variables, read as the SDK's batch span processor
// reads them (milliseconds and span counts), and their defaults.
const (
	EnvBSPScheduleDelay       = "OTEL_BSP_SCHEDULE_DELAY"
	EnvBSPExportTimeout       = "OTEL_BSP_EXPORT_TIMEOUT"
	EnvBSPMaxQueueSize        = "OTEL_BSP_MAX_QUEUE_SIZE"
	EnvBSPMaxExportBatch      = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"
	DefaultScheduleDelay      = 5 * time.Second  // the SDK's
	DefaultBatchExportTimeout = 30 * time.Second // the SDK's
	DefaultMaxExportBatch     = 512              // the SDK's
)

// DefaultMaxQueueSize is how many ended spans may wait for export unless
// OTEL_BSP_MAX_QUEUE_SIZE says otherwise: four times the SDK's 2048. A
// fast run ends 10,000 spans a second and more (W2: 3 per item, ~3,000
// items/s), and the queue is all that holds them while an export is on
// its way; spans past it are dropped (and the drop reported at exit).
// Waiting spans are held as the SDK's span snapshots, not encoded: ~1.4
// KB each for an item span with its 7 attributes (measured), so 8192 of
// them are ~11 MB.
const DefaultMaxQueueSize = 8192

// batchConfig is the span batcher's settings, from the OTEL_BSP_*
// variables.
type batchConfig struct {
	scheduleDelay time.Duration // the longest an ended span waits for a batch to fill
	exportTimeout time.Duration // one export's limit, its retries included (0: none)
	maxQueue      int           // spans waiting for export, at most
	maxBatch      int           // spans per export request, at most
}

// readBatchConfig reads the OTEL_BSP_* variables through getenv. A value
// that is not a whole number (or is negative, or a size of 0 or past
// maxQueueLimit) is an error naming its variable: tracing is then off, as
// for a malformed exporter variable, rather than running with a setting
// the user did not ask for (the SDK's processor used its default
// silently). A batch larger than the queue is cut to the queue, as the
// SDK does; a schedule delay of 0 is 1 ms.
func readBatchConfig(getenv func(string) string) (batchConfig, error) {
	c := batchConfig{
		scheduleDelay: DefaultScheduleDelay,
		exportTimeout: DefaultBatchExportTimeout,
		maxQueue:      DefaultMaxQueueSize,
		maxBatch:      DefaultMaxExportBatch,
	}
	for _, v := range []struct {
		name string
		ms   *time.Duration // a number of milliseconds, or
		n    *int           // a number of spans
	}{
		{name: EnvBSPScheduleDelay, ms: &c.scheduleDelay},
		{name: EnvBSPExportTimeout, ms: &c.exportTimeout},
		{name: EnvBSPMaxQueueSize, n: &c.maxQueue},
		{name: EnvBSPMaxExportBatch, n: &c.maxBatch},
	} {
		raw := strings.TrimSpace(getenv(v.name))
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		switch {
		case err != nil:
			return c, fmt.Errorf("%s=%q is not a whole number of %s", v.name, raw, unitOf(v.ms != nil))
		case v.ms != nil && (n < 0 || n > maxMillis):
			// time.Duration would wrap around (to a tiny or negative
			// delay), as the exporter's TIMEOUT variables check too.
			return c, fmt.Errorf("%s=%q: give a number of milliseconds from 0 to %d", v.name, raw, maxMillis)
		case v.ms != nil:
			*v.ms = time.Duration(n) * time.Millisecond
		case n < 1 || n > maxQueueLimit:
			return c, fmt.Errorf("%s=%q: give a number of spans from 1 to %d", v.name, raw, maxQueueLimit)
		default:
			*v.n = n
		}
	}
	c.maxBatch = min(c.maxBatch, c.maxQueue)
	// A delay of 0 would have the export goroutine spin.
	c.scheduleDelay = max(c.scheduleDelay, time.Millisecond)
	return c, nil
}

// maxQueueLimit bounds the queue and batch sizes a variable may ask for:
// a million spans waiting is ~1.4 GB.
const maxQueueLimit = 1 << 20

// maxMillis is the most milliseconds a time.Duration holds (~292 years).
const maxMillis = math.MaxInt64 / int(time.Millisecond)

func unitOf(ms bool) string {
	if ms {
		return "milliseconds"
	}
	return "spans"
}

// spanBatcher is the span processor evalrun installs in the SDK's tracer
// provider instead of the SDK's batch span processor, with the same
// settings (OTEL_BSP_*) and the same guarantees: spans are exported in
// batches of at most maxBatch from one goroutine, a partial batch after
// scheduleDelay, at most maxQueue spans wait (more are dropped, never
// blocking the run), ForceFlush and Shutdown export what waits within
// their context.
//
// What differs is the hand-off. The SDK's processor sends every ended
// span on a channel to its export goroutine, which wakes up for each one
// (a fast run ends 30,000 spans a second): scheduler work on the cores
// the run needs. Here a span is appended to the current batch under a
// mutex, and the export goroutine is woken once per full batch
// (docs/benchmarks.md, *Tracing*).
type spanBatcher struct {
	exp *exporter
	cfg batchConfig

	mu      sync.Mutex
	cur     []sdktrace.ReadOnlySpan
	queued  int // spans in full batches waiting in ready
	stopped bool
	dropped int // spans dropped because the queue was full

	ready   chan []sdktrace.ReadOnlySpan // full batches, oldest first; never blocks a sender (see newSpanBatcher)
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{} // closed when the export goroutine has exported everything and returned

	stopOnce sync.Once
	free     sync.Pool // *[]sdktrace.ReadOnlySpan, emptied batches
	report   func(error)
}

func newSpanBatcher(exp *exporter, cfg batchConfig) *spanBatcher {
	b := &spanBatcher{
		exp: exp,
		cfg: cfg,
		// A full batch never waits for room here: OnEnd counts the
		// queued spans against maxQueue first, so there are never more
		// than maxQueue/maxBatch full batches waiting.
		ready:   make(chan []sdktrace.ReadOnlySpan, cfg.maxQueue/cfg.maxBatch+1),
		flushes: make(chan chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		report:  otel.Handle,
	}
	b.cur = b.newBatch()
	go b.loop()
	return b
}

func (b *spanBatcher) newBatch() []sdktrace.ReadOnlySpan {
	if p, ok := b.free.Get().(*[]sdktrace.ReadOnlySpan); ok {
		return (*p)[:0]
	}
	return make([]sdktrace.ReadOnlySpan, 0, b.cfg.maxBatch)
}

// OnStart does nothing: a span is batched when it ends.
func (b *spanBatcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd adds s to the current batch, and hands the batch to the export
// goroutine when it is full. An unsampled span is not exported (as the
// SDK's batch processor does).
func (b *spanBatcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if b.stopped || b.queued+len(b.cur) >= b.cfg.maxQueue {
		// Stopped, or the collector is not keeping up: drop, never
		// block the run.
		if !b.stopped {
			b.dropped++
		}
		b.mu.Unlock()
		return
	}
	b.cur = append(b.cur, s)
	if len(b.cur) < b.cfg.maxBatch {
		b.mu.Unlock()
		return
	}
	// Sent under the lock (it never blocks: see newSpanBatcher), so that
	// a flush or stop that takes the lock after it finds the batch in
	// ready.
	b.ready <- b.cur
	b.queued += len(b.cur)
	b.cur = b.newBatch()
	b.mu.Unlock()
}

// loop is the export goroutine: it exports each full batch, the partial
// one every scheduleDelay, everything on a flush, and everything left on
// stop.
func (b *spanBatcher) loop() {
	defer close(b.done)
	timer := time.NewTimer(b.cfg.scheduleDelay)
	defer timer.Stop()
	for {
		select {
		case batch := <-b.ready:
			b.exportQueued(batch)
			timer.Reset(b.cfg.scheduleDelay)
		case <-timer.C:
			b.exportAll()
			timer.Reset(b.cfg.scheduleDelay)
		case flushed := <-b.flushes:
			b.exportAll()
			close(flushed)
		case <-b.stop:
			b.exportAll()
			return
		}
	}
}

// exportAll exports every span ended before it was called: the full
// batches waiting, then the partial one. The partial batch is taken first:
// a batch filled and queued after the queue was emptied would otherwise
// hold spans ended before the call.
func (b *spanBatcher) exportAll() {
	b.mu.Lock()
	partial := b.cur
	b.cur = b.newBatch()
	b.mu.Unlock()
	for drained := false; !drained; {
		select {
		case batch := <-b.ready:
			b.exportQueued(batch)
		default:
			drained = true
		}
	}
	b.export(partial)
}

// exportQueued exports a batch taken from ready.
func (b *spanBatcher) exportQueued(batch []sdktrace.ReadOnlySpan) {
	b.mu.Lock()
	b.queued -= len(batch)
	b.mu.Unlock()
	b.export(batch)
}

// export posts batch within the export timeout, reports its error, and
// keeps the emptied slice for a next batch.
func (b *spanBatcher) export(batch []sdktrace.ReadOnlySpan) {
	if len(batch) > 0 {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if b.cfg.exportTimeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, b.cfg.exportTimeout)
		}
		// An export that failed because Shutdown stopped the exporter (its
		// context ended first) is not reported: Shutdown returns why. The
		// report would race with Shutdown's caller: it became the Tracing's
		// first error or not, depending on which goroutine ran first, and
		// reached the error handler Tracing.Shutdown had put back.
		if err := b.exp.ExportSpans(ctx, batch); err != nil && !errors.Is(err, errShutdown) {
			b.report(err)
		}
		cancel()
	}
	clear(batch) // the spans are garbage now
	batch = batch[:0]
	b.free.Put(&batch)
}

// ForceFlush exports every ended span not exported yet, within ctx.
func (b *spanBatcher) ForceFlush(ctx context.Context) error {
	flushed := make(chan struct{})
	select {
	case b.flushes <- flushed:
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-flushed:
		return nil
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errDropped is the error of Shutdown when spans were dropped because the
// queue was full.
var errDropped = errors.New("spans dropped")

// Shutdown stops taking spans, exports those not exported yet and shuts
// the exporter down, within ctx: when ctx ends first, the export under
// way is cancelled and ctx's error returned. It reports spans dropped
// because the queue was full. Calling it again does nothing.
func (b *spanBatcher) Shutdown(ctx context.Context) error {
	var err error
	b.stopOnce.Do(func() {
		b.mu.Lock()
		b.stopped = true
		dropped := b.dropped
		b.mu.Unlock()
		close(b.stop)
		select {
		case <-b.done:
			err = b.exp.Shutdown(ctx)
		case <-ctx.Done():
			_ = b.exp.Shutdown(ctx) // cancels the export under way
			err = ctx.Err()
		}
		if err == nil && dropped > 0 {
			err = fmt.Errorf("%d %w: more than %d waited for the collector (%s)", dropped, errDropped, b.cfg.maxQueue, EnvBSPMaxQueueSize)
		}
	})
	return err
}
