package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/retry"
)

// persistRetries is how often a refused batch is tried again before its
// results are tried one by one.
const persistRetries = 2

// persistBackoff is the wait before the first retry of a batch; it
// doubles (see [retry.Policy]).
const persistBackoff = 50 * time.Millisecond

// deadAfterBatches is how many batches in a row the store may refuse whole
// (retries and one-by-one writes included) before the writer gives up on
// it: an error the store does not mark [evalrun.ErrStoreUnavailable] can
// still be one that refuses everything.
const deadAfterBatches = 3

// singlesBeforeGivingUp is how many results of a refused batch are tried
// alone, all failing, before the batch counts as refused whole: a store
// that refuses everything must not cost one store call per result.
const singlesBeforeGivingUp = 2

// ErrStoreFailed is the cause of a run stopped because its store refuses
// to save results (wrapping the store's error): a run whose results cannot
// be kept stops executing items and ends failed.
var ErrStoreFailed = errors.New("the store refuses to save results")

// resultWriter moves results from the pipeline to the store off the hot
// path. Results queue in a bounded channel (when it is full, put blocks:
// backpressure) bounded both in number (WriterBuffer) and in bytes
// (WriterBufferBytes, so that huge outputs cannot pile up), are written in
// batches of up to batchSize, and never wait longer than flushEvery.
//
// A batch the store refuses is retried with back-off ([retry.Do]), then
// written one result at a time so that one bad result costs only itself;
// what still fails is counted and logged, and the run goes on. A store
// that refuses everything, though, is given up at once: when its error is
// marked [evalrun.ErrStoreUnavailable] (disk full, read-only, no schema),
// or after deadAfterBatches batches in a row are refused whole. The writer
// then calls onDead once, writes nothing more and counts every result it
// is still handed as not persisted.
type resultWriter struct {
	store      evalrun.RunStore
	in         chan *evalrun.ItemResult
	bytes      *semaphore.Weighted
	maxBytes   int64
	done       chan struct{}
	batchSize  int
	flushEvery time.Duration
	clock      evalrun.Clock
	policy     retry.Policy
	logger     *slog.Logger
	failed     atomic.Int64
	written    atomic.Int64

	// storeCtx carries the run's values without its cancellation: results
	// of a cancelled run are still saved. waitCtx is the run's own
	// context: its cancellation ends back-off waits at once.
	storeCtx, waitCtx context.Context

	// refusedInARow counts batches refused whole since the last write the
	// store took (writer goroutine only).
	refusedInARow int
	// dead is the error that made the writer give the store up.
	dead     error
	deadOnce sync.Once
	onDead   func(error)
}

// newResultWriter returns a writer to store; onDead (may be nil) is called
// once, from the writer's goroutine, when the store is given up.
func newResultWriter(store evalrun.RunStore, opts Options, onDead func(error)) *resultWriter {
	return &resultWriter{
		store:      store,
		in:         make(chan *evalrun.ItemResult, opts.WriterBuffer),
		bytes:      semaphore.NewWeighted(opts.WriterBufferBytes),
		maxBytes:   opts.WriterBufferBytes,
		done:       make(chan struct{}),
		batchSize:  opts.WriterBatch,
		flushEvery: opts.FlushInterval,
		clock:      opts.Clock,
		policy: retry.Policy{MaxRetries: persistRetries, Delay: persistBackoff, Clock: opts.Clock, Jitter: opts.Jitter,
			Retryable: func(err error) bool { return !errors.Is(err, evalrun.ErrStoreUnavailable) }},
		logger: opts.Logger,
		onDead: onDead,
	}
}

// start runs the writer until close. Store calls ignore ctx's
// cancellation (results of a cancelled run are still saved, each batch
// tried once); back-off waits end with it.
func (w *resultWriter) start(ctx context.Context) {
	w.storeCtx, w.waitCtx = context.WithoutCancel(ctx), ctx
	go w.loop()
}

// put queues r, blocking while the queue is full.
func (w *resultWriter) put(r *evalrun.ItemResult) {
	_ = w.bytes.Acquire(context.Background(), w.weight(r))
	w.in <- r
}

// weight is the share of the byte budget r holds while queued: roughly
// its size and its item's (a queued result keeps its item alive), capped
// so that one result larger than the budget still fits.
func (w *resultWriter) weight(r *evalrun.ItemResult) int64 {
	n := int64(256 + len(r.Output) + len(r.Error))
	if it := r.Item; it != nil {
		n += int64(len(it.ID) + len(it.Input) + len(it.Expected))
	}
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

func (w *resultWriter) loop() {
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
					w.flush(batch)
					return
				}
				batch = append(batch, r)
			case <-deadline:
				break fill
			}
		}
		w.flush(batch)
		clear(batch) // drop references so discarded results can be freed
		batch = batch[:0]
	}
}

func (w *resultWriter) flush(batch []*evalrun.ItemResult) {
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
	if w.dead != nil {
		w.failed.Add(int64(len(batch)))
		return
	}
	err := w.write(batch)
	if err == nil {
		w.written.Add(int64(len(batch)))
		w.refusedInARow = 0
		return
	}
	if errors.Is(err, evalrun.ErrStoreUnavailable) {
		w.giveUp(err, len(batch))
		return
	}
	// One result at a time, each tried once (the batch had its retries):
	// one bad result costs only itself. When the first ones all fail, the
	// store refuses the batch whole rather than some of its results.
	taken := 0
	var failed []*evalrun.ItemResult
	var errs []error
	for i, r := range batch {
		err = w.store.WriteResults(w.storeCtx, []*evalrun.ItemResult{r})
		if err == nil {
			taken++
			continue
		}
		if errors.Is(err, evalrun.ErrStoreUnavailable) || (taken == 0 && i+1 >= singlesBeforeGivingUp) {
			w.refused(err, len(batch)-taken)
			return
		}
		failed, errs = append(failed, r), append(errs, err)
	}
	w.written.Add(int64(taken))
	w.failed.Add(int64(len(failed)))
	for i, r := range failed {
		w.logger.Error("result not persisted", "run", r.RunID, "index", r.Index, "repeat", r.Repeat, "item", r.ItemID, "err", errs[i])
	}
	if taken == 0 {
		w.refused(err, 0) // a batch of one, refused
		return
	}
	w.refusedInARow = 0
}

// refused counts a batch the store refused whole (lost results not
// persisted) and gives the store up when it is marked unavailable or
// refused deadAfterBatches batches in a row.
func (w *resultWriter) refused(err error, lost int) {
	w.refusedInARow++
	if errors.Is(err, evalrun.ErrStoreUnavailable) || w.refusedInARow >= deadAfterBatches {
		w.giveUp(err, lost)
		return
	}
	if lost > 0 {
		w.failed.Add(int64(lost))
		w.logger.Error("results not persisted", "results", lost, "err", err)
	}
}

// giveUp stops writing: lost results and all later ones count as not
// persisted, and onDead is told once.
func (w *resultWriter) giveUp(err error, lost int) {
	w.failed.Add(int64(lost))
	w.deadOnce.Do(func() {
		w.dead = err
		w.logger.Error("the store refuses results; stopping the run", "err", err)
		if w.onDead != nil {
			w.onDead(err)
		}
	})
}

// write tries batch with the back-off policy. Cancelling the run ends a
// back-off wait at once; a batch the cancelled run still hands over is
// tried once, without waiting.
func (w *resultWriter) write(batch []*evalrun.ItemResult) error {
	var last error
	attempts, err := retry.Do(w.waitCtx, w.policy, func(context.Context, int) error {
		last = w.store.WriteResults(w.storeCtx, batch)
		return last
	})
	if attempts == 0 {
		return w.store.WriteResults(w.storeCtx, batch)
	}
	if err != nil && last != nil {
		return last // the store's error, not the run's cancellation
	}
	return err
}
