package river

import (
	"context"
	"errors"
	"sync"

	"github.com/evalrun/evalrun"
)

// maxResultBatch bounds the results written in one store call. The jobs
// waiting on a batch already bound it (one per worker slot); this bounds a
// transaction whatever the concurrency.
const maxResultBatch = 256

// resultWriter is the store ability a worker needs to store results
// (*postgres.Store; a counting wrapper in tests).
type resultWriter interface {
	WriteResults(ctx context.Context, results []*evalrun.ItemResult) error
}

// resultBatcher writes the results of jobs finishing together in one store
// call, so one transaction (and one commit) carries many results. It is
// group commit: a result handed to an idle batcher is written at once,
// and the results arriving while a write is under way are written
// together by the next one. Nothing waits for a batch to fill.
//
// There is no goroutine of its own: the job whose result finds the
// batcher idle leads, writing what is pending; when its write ends, it
// hands the lead to the oldest result that arrived meanwhile, so no job
// waits for more than the write carrying its result and the one before.
//
// A job returns only once the write carrying its result has ended, with
// that write's outcome: a result is stored before its job completes in
// River, as with one write per job. It is safe for concurrent use.
type resultBatcher struct {
	store resultWriter
	// wrote, when set, is told the size of each batch written (metrics).
	wrote func(n int)
	// queued, when set, is told how many results wait (this one included)
	// each time one arrives (tests).
	queued func(n int)

	mu      sync.Mutex
	pending []*pendingResult
	writing bool // a leader is writing; pending results wait for the lead
}

// pendingResult is a result waiting for its batch; done receives errLead
// when its job must lead the next write, then the outcome of its write.
type pendingResult struct {
	res  *evalrun.ItemResult
	done chan error
}

// errLead tells a waiting job that it leads the next write.
var errLead = errors.New("lead the next write")

// write stores res with the results of the jobs finishing meanwhile and
// returns the outcome of the store call that carried it. The store call
// runs under ctx (with writeTimeout) when this job leads it: callers pass
// a context that is not cancelled with the job, since a processed item is
// worth keeping.
func (b *resultBatcher) write(ctx context.Context, res *evalrun.ItemResult) error {
	p := &pendingResult{res: res, done: make(chan error, 1)}
	b.mu.Lock()
	b.pending = append(b.pending, p)
	lead := !b.writing
	b.writing = true
	n := len(b.pending)
	b.mu.Unlock()
	if b.queued != nil {
		b.queued(n)
	}
	if !lead {
		if err := <-p.done; err != errLead {
			return err
		}
	}
	// The leader is the oldest pending result, so it is in the batch it
	// writes, and its outcome is in done once flush returns.
	b.flush(ctx)
	return <-p.done
}

// flush writes the oldest pending results (up to maxResultBatch) in one
// store call, gives each its outcome, and hands the lead on.
func (b *resultBatcher) flush(ctx context.Context) {
	b.mu.Lock()
	n := min(len(b.pending), maxResultBatch)
	batch := b.pending[:n:n]
	b.pending = b.pending[n:]
	b.mu.Unlock()

	results := make([]*evalrun.ItemResult, len(batch))
	for i, p := range batch {
		results[i] = p.res
	}
	// Whatever happens to the store call, even a panic (River recovers it
	// for this job), every job of the batch gets an outcome and the lead
	// goes on: a job left waiting would hold its slot for ever.
	err := errWritePanicked
	defer func() {
		for _, p := range batch {
			p.done <- err
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.pending) == 0 {
			b.writing = false
			b.pending = nil // let the old backing array go
			return
		}
		b.pending[0].done <- errLead
	}()
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	err = b.store.WriteResults(wctx, results)
	if b.wrote != nil {
		b.wrote(len(results))
	}
}

// errWritePanicked is the outcome of a store call that panicked.
var errWritePanicked = errors.New("result write panicked")
