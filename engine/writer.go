package engine

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/evalrun/evalrun"
)

// persistAttempts is how often a batch (and then a single result) is tried
// before it counts as a persistence failure.
const persistAttempts = 3

// persistBackoff is the wait before the second store attempt; it doubles.
const persistBackoff = 50 * time.Millisecond

// resultWriter moves results from the pipeline to the store off the hot
// path. Results queue in a bounded channel (when it is full, put blocks:
// backpressure) bounded both in number (WriterBuffer) and in bytes
// (WriterBufferBytes, so that huge outputs cannot pile up), are written in batches of up to batchSize, and never wait
// longer than flushEvery. A batch the store refuses is retried, then
// written one result at a time so that one bad result costs only itself;
// what still fails is counted and logged, and the run goes on.
type resultWriter struct {
	store      evalrun.RunStore
	in         chan *evalrun.ItemResult
	bytes      *semaphore.Weighted
	maxBytes   int64
	done       chan struct{}
	batchSize  int
	flushEvery time.Duration
	clock      evalrun.Clock
	logger     *slog.Logger
	failed     atomic.Int64
	written    atomic.Int64
}

func newResultWriter(store evalrun.RunStore, opts Options) *resultWriter {
	return &resultWriter{
		store:      store,
		in:         make(chan *evalrun.ItemResult, opts.WriterBuffer),
		bytes:      semaphore.NewWeighted(opts.WriterBufferBytes),
		maxBytes:   opts.WriterBufferBytes,
		done:       make(chan struct{}),
		batchSize:  opts.WriterBatch,
		flushEvery: opts.FlushInterval,
		clock:      opts.Clock,
		logger:     opts.Logger,
	}
}

// start runs the writer until close. Writes use ctx without its
// cancellation: results of a cancelled run are still saved.
func (w *resultWriter) start(ctx context.Context) {
	go w.loop(context.WithoutCancel(ctx))
}

// put queues r, blocking while the queue is full.
func (w *resultWriter) put(r *evalrun.ItemResult) {
	_ = w.bytes.Acquire(context.Background(), w.weight(r))
	w.in <- r
}

// weight is the share of the byte budget r holds while queued: roughly
// its size, capped so that one result larger than the budget still fits.
func (w *resultWriter) weight(r *evalrun.ItemResult) int64 {
	n := int64(256 + len(r.Output) + len(r.Error))
	for _, s := range r.Scores {
		n += int64(64 + len(s.Reason) + len(s.Error))
	}
	return min(n, w.maxBytes)
}

// close flushes what is queued and waits for the writer to finish.
func (w *resultWriter) close() {
	close(w.in)
	<-w.done
}

func (w *resultWriter) loop(ctx context.Context) {
	defer close(w.done)
	batch := make([]*evalrun.ItemResult, 0, w.batchSize)
	for {
		// Wait for the first result of a batch.
		r, ok := <-w.in
		if !ok {
			return
		}
		batch = append(batch, r)
		deadline := w.clock.After(w.flushEvery)
	fill:
		for len(batch) < w.batchSize {
			select {
			case r, ok := <-w.in:
				if !ok {
					w.flush(ctx, batch)
					return
				}
				batch = append(batch, r)
			case <-deadline:
				break fill
			}
		}
		w.flush(ctx, batch)
		clear(batch) // drop references so discarded results can be freed
		batch = batch[:0]
	}
}

func (w *resultWriter) flush(ctx context.Context, batch []*evalrun.ItemResult) {
	if len(batch) == 0 {
		return
	}
	defer func() {
		var n int64
		for _, r := range batch {
			n += w.weight(r)
		}
		w.bytes.Release(n)
	}()
	if w.write(ctx, batch) == nil {
		w.written.Add(int64(len(batch)))
		return
	}
	for _, r := range batch {
		if err := w.write(ctx, []*evalrun.ItemResult{r}); err != nil {
			w.failed.Add(1)
			w.logger.Error("result not persisted", "run", r.RunID, "index", r.Index, "repeat", r.Repeat, "item", r.ItemID, "err", err)
			continue
		}
		w.written.Add(1)
	}
}

func (w *resultWriter) write(ctx context.Context, batch []*evalrun.ItemResult) error {
	wait := persistBackoff
	var err error
	for attempt := 0; attempt < persistAttempts; attempt++ {
		if attempt > 0 {
			<-w.clock.After(wait)
			wait *= 2
		}
		if err = w.store.WriteResults(ctx, batch); err == nil {
			return nil
		}
	}
	return err
}
