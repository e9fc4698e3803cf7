package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/tracing"
)

// ErrStrict is the cancellation cause of a strict run stopped by a scorer
// error; such a run ends failed.
var ErrStrict = errors.New("strict mode: a scorer failed")

// Spec is everything a run needs.
type Spec struct {
	// Run is the run record. Its ID is generated when empty; Dataset,
	// DatasetVersion, Name, Target, Config describe the run in storage.
	// With Options.Resume it is the stored record of the run to continue.
	// Nil means an anonymous run with a generated id.
	Run *evalrun.Run
	// Items are the dataset items, in order, held in memory: a result's
	// Index is the item's position here. Set Items or Source, not both.
	Items []*evalrun.Item
	// Source streams the items instead (see [ItemSource]): the run reads
	// them as its workers need them and holds at most concurrency plus
	// the writer's bound of them ([Options.WriterBuffer]), whatever the
	// dataset's size. [DatasetSource] reads a stored dataset version.
	Source  ItemSource
	Target  evalrun.Target
	Scorers []evalrun.Scorer
	Options Options
}

// ItemCount is the number of items of the spec: Source.Len() when it has a
// source, len(Items) otherwise.
func (s Spec) ItemCount() int {
	if s.Source != nil {
		return s.Source.Len()
	}
	return len(s.Items)
}

// CheckItems returns an ErrInvalid error when the spec has both Items and
// a Source, or a nil item among Items.
func (s Spec) CheckItems() error {
	if s.Source != nil && s.Items != nil {
		return fmt.Errorf("%w: a spec has Items or a Source, not both", evalrun.ErrInvalid)
	}
	for i, it := range s.Items {
		if it == nil {
			return fmt.Errorf("%w: item %d is nil", evalrun.ErrInvalid, i)
		}
	}
	return nil
}

// Run executes the spec's items (Items or Source) against spec.Target, scores every output with
// spec.Scorers and hands each result to store (nil: nothing is stored).
//
// It returns a summary whenever the run started, also when ctx is
// cancelled (status canceled) or a fatal error ends it (status failed);
// the error is then nil and Summary.Err gives the cause. A non-nil error
// with a nil summary means nothing ran: the spec was invalid (ErrInvalid)
// or the run record could not be written.
//
// The run has a span (see docs/observability.md), a no-op unless a tracer
// provider is installed (otel.SetTracerProvider; the CLI installs one when
// the OTEL_* variables ask for it).
func Run(ctx context.Context, store evalrun.RunStore, spec Spec) (sum *evalrun.Summary, err error) {
	ctx, span := tracing.StartRun(ctx, tracing.SpanRun)
	defer func() { tracing.EndRun(span, sum, err) }()
	p, err := NewPipeline(spec.Target, spec.Scorers, spec.Options)
	if err != nil {
		return nil, err
	}
	opts := p.opts
	if err := spec.CheckItems(); err != nil {
		return nil, err
	}
	n := spec.ItemCount()
	if err := CheckExecutions(n, opts.Repeat); err != nil {
		return nil, fmt.Errorf("%w: %w", evalrun.ErrInvalid, err)
	}
	src := spec.Source
	if src == nil {
		src = SliceSource(spec.Items)
	}
	r := &runner{
		pipeline: p,
		opts:     opts,
		store:    store,
		source:   src,
		count:    n,
		repeat:   opts.Repeat,
		total:    n * opts.Repeat,
	}
	if err := r.prepare(ctx, spec.Run); err != nil {
		return nil, err
	}
	tracing.DescribeRun(span, r.record)
	return r.execute(ctx), nil
}

// runner is the state of one run.
type runner struct {
	pipeline *Pipeline
	opts     Options
	store    evalrun.RunStore
	source   ItemSource
	count    int // items the source announced
	repeat   int
	total    int
	record   *evalrun.Run

	// done marks (index×repeat) executions that need not run (resume):
	// a byte per execution, 10 MB at MaxExecutions.
	done []bool
	// prior counts stored results that a resume keeps.
	priorSucceeded, priorFailed int

	// itemsErr (wrapping ErrItems) is why the source stopped early; set
	// by dispatch before it closes the jobs.
	itemsErr error

	succeeded, failed, scorerErrors atomic.Int64
	results                         []*evalrun.ItemResult

	progressMu sync.Mutex
}

// prepare creates (or, on resume, reloads) the run record and marks it
// running.
func (r *runner) prepare(ctx context.Context, rec *evalrun.Run) error {
	now := r.opts.Clock.Now()
	if rec == nil {
		rec = &evalrun.Run{}
	}
	rec.Scorers = r.pipeline.ScorerInfos()
	rec.Total = r.total
	if r.opts.Resume {
		if rec.ID == "" {
			return fmt.Errorf("%w: resume needs the id of the run to continue", evalrun.ErrInvalid)
		}
		if err := r.loadDone(ctx, rec.ID); err != nil {
			return err
		}
	} else {
		if rec.ID == "" {
			rec.ID = evalrun.NewRunID(now)
		}
		rec.Status = evalrun.RunPending
		rec.CreatedAt = now
		if r.store != nil {
			if err := r.store.CreateRun(ctx, rec); err != nil {
				return fmt.Errorf("create run record: %w", err)
			}
		}
	}
	rec.Status = evalrun.RunRunning
	if !r.opts.Resume || rec.StartedAt.IsZero() {
		rec.StartedAt = now // a resumed run keeps its first start
	}
	rec.CompletedAt = time.Time{}
	rec.Error = ""
	rec.Succeeded, rec.Failed, rec.Skipped = r.priorSucceeded, r.priorFailed, r.total-r.priorSucceeded-r.priorFailed
	if r.store != nil {
		if err := r.store.UpdateRun(ctx, rec); err != nil {
			return fmt.Errorf("mark run %s running: %w", rec.ID, err)
		}
	}
	r.record = rec
	return nil
}

// loadDone reads the stored results of the run being resumed.
func (r *runner) loadDone(ctx context.Context, runID string) error {
	if r.store == nil {
		return fmt.Errorf("%w: resume needs a store", evalrun.ErrInvalid)
	}
	r.done = make([]bool, r.total)
	return r.store.ScanResultKeys(ctx, runID, func(k evalrun.ResultKey) error {
		if k.Index < 0 || k.Index >= r.count || k.Repeat < 0 || k.Repeat >= r.repeat {
			return nil // outside this run's shape (e.g. a smaller --limit): ignore
		}
		if k.Failed && r.opts.RetryFailed {
			return nil
		}
		r.done[k.Index*r.repeat+k.Repeat] = true
		if k.Failed {
			r.priorFailed++
		} else {
			r.priorSucceeded++
		}
		return nil
	})
}

func (r *runner) execute(parent context.Context) *evalrun.Summary {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)

	var w *resultWriter
	if r.store != nil {
		w = newResultWriter(r.store, r.opts, func(err error) {
			// Items whose results cannot be kept are not worth running.
			cause := fmt.Errorf("%w: %w", ErrStoreFailed, err)
			cancel(cause)
			if r.opts.OnStoreFailure != nil {
				r.opts.OnStoreFailure(cause)
			}
		})
		w.start(ctx)
	}
	if !r.opts.DiscardResults {
		r.results = make([]*evalrun.ItemResult, r.total)
	}
	r.succeeded.Store(int64(r.priorSucceeded))
	r.failed.Store(int64(r.priorFailed))

	// One goroutine reads the items and hands executions out in index ×
	// repeat order through an unbuffered channel: an item is read only
	// when a worker is free to take its first execution, so the run holds
	// the items in flight, the one being handed out and those whose
	// results wait in the writer, never the dataset.
	jobs := make(chan execution)
	go r.dispatch(ctx, jobs)
	var wg sync.WaitGroup
	for range min(r.opts.Concurrency, max(r.total, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range jobs {
				r.one(ctx, cancel, w, e)
			}
		}()
	}
	wg.Wait()
	if w != nil {
		w.close()
	}
	if r.itemsErr != nil {
		cancel(r.itemsErr) // after the executions handed out have ended
	}
	return r.finish(parent, ctx, w)
}

// execution is one execution to run: repeat rep of the item of index idx.
type execution struct {
	item     *evalrun.Item
	idx, rep int
}

// dispatch reads the source and sends every execution without a result
// on jobs, in index × repeat order, until all are sent or ctx ends; then
// it closes jobs. A source that fails, yields a nil item or not the items
// it announced sets r.itemsErr: what was handed out still runs, then the
// run stops with it.
func (r *runner) dispatch(ctx context.Context, jobs chan<- execution) {
	defer close(jobs)
	pending := r.total - r.priorSucceeded - r.priorFailed
	if pending == 0 || ctx.Err() != nil {
		return
	}
	idx := 0
	for it, err := range r.source.Items(ctx) {
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.itemsErr = fmt.Errorf("%w: %w", ErrItems, err)
			return
		case idx >= r.count:
			r.itemsErr = fmt.Errorf("%w: the source yields more than the %d items it announced", ErrItems, r.count)
			return
		case it == nil:
			r.itemsErr = fmt.Errorf("%w: item %d is nil", ErrItems, idx)
			return
		}
		for rep := range r.repeat {
			if r.done != nil && r.done[idx*r.repeat+rep] {
				continue
			}
			select {
			case jobs <- execution{item: it, idx: idx, rep: rep}:
			case <-ctx.Done():
				return
			}
			pending--
		}
		if pending == 0 {
			return // the rest of the items are done (resume): not read
		}
		idx++
	}
	if ctx.Err() == nil {
		r.itemsErr = fmt.Errorf("%w: the source yielded %d of the %d items it announced", ErrItems, idx, r.count)
	}
}

// one processes execution e.
func (r *runner) one(ctx context.Context, cancel context.CancelCauseFunc, w *resultWriter, e execution) {
	idx, rep, j := e.idx, e.rep, e.idx*r.repeat+e.rep
	res := r.pipeline.Process(ctx, r.record.ID, e.item, idx, rep)
	if res.ErrorKind == evalrun.ErrorCanceled {
		return // skipped: not counted, not stored, run again on resume
	}
	if res.Failed() {
		r.failed.Add(1)
	} else {
		r.succeeded.Add(1)
	}
	for _, s := range res.Scores {
		if s.Error != "" {
			r.scorerErrors.Add(1)
		}
	}
	if r.opts.Strict {
		if err := StrictFailure(res); err != nil {
			cancel(err)
		}
	}
	if r.results != nil {
		r.results[j] = res
	}
	if w != nil {
		w.put(res)
	}
	if r.opts.Progress != nil {
		r.progressMu.Lock()
		s, f := int(r.succeeded.Load()), int(r.failed.Load())
		r.opts.Progress(evalrun.Progress{Total: r.total, Done: s + f, Succeeded: s, Failed: f, Concurrency: r.pipeline.Concurrency()})
		r.progressMu.Unlock()
	}
}

// finish settles the status and counts, writes them to the store and
// builds the summary.
func (r *runner) finish(parent, ctx context.Context, w *resultWriter) *evalrun.Summary {
	rec := r.record
	s := &evalrun.Summary{
		RunID:        rec.ID,
		Total:        r.total,
		Succeeded:    int(r.succeeded.Load()),
		Failed:       int(r.failed.Load()),
		ScorerErrors: int(r.scorerErrors.Load()),
		StartedAt:    rec.StartedAt,
		CompletedAt:  r.opts.Clock.Now(),
		Concurrency:  r.pipeline.SettledConcurrency(),
	}
	s.Skipped = s.Total - s.Succeeded - s.Failed
	if w != nil {
		s.PersistErrors = int(w.failed.Load())
	}
	s.Status, s.Err = Decide(s.Total, s.Succeeded, s.Failed, context.Cause(ctx))
	s.CompletedWithErrors = CompletedWithErrors(s.Status, s.Failed)

	if r.results != nil {
		s.Results = make([]*evalrun.ItemResult, 0, s.Succeeded+s.Failed)
		for _, res := range r.results {
			if res != nil {
				s.Results = append(s.Results, res)
			}
		}
	}

	rec.Status = s.Status
	rec.Succeeded, rec.Failed, rec.Skipped = s.Succeeded, s.Failed, s.Skipped
	// A resume re-executes every execution without a stored result, so
	// results an earlier session could not store are healed, not lost: the
	// record counts this session's, and an earlier session's error (a
	// cancel, a refusing store) does not outlive a run that now ends well.
	rec.PersistErrors = s.PersistErrors
	rec.Concurrency = s.Concurrency
	rec.CompletedAt = s.CompletedAt
	rec.Error = ""
	if s.Err != nil {
		rec.Error = s.Err.Error()
	}
	if r.store != nil {
		// The final record is written even when the caller cancelled.
		if err := r.store.UpdateRun(context.WithoutCancel(parent), rec); err != nil {
			// The stored record still says running: the run cannot be
			// called completed.
			r.opts.Logger.Error("run record not updated", "run", rec.ID, "err", err)
			s.Status, s.CompletedWithErrors = evalrun.RunFailed, false
			recErr := fmt.Errorf("its final record (status %s) could not be stored: %w", rec.Status, err)
			switch {
			case errors.Is(s.Err, ErrStoreFailed):
				s.Err = fmt.Errorf("%w; %w", s.Err, recErr)
			case s.Err != nil:
				s.Err = fmt.Errorf("%w; %w: %w", s.Err, ErrStoreFailed, recErr)
			default:
				s.Err = fmt.Errorf("%w: %w", ErrStoreFailed, recErr)
			}
		}
	}
	return s
}

// The run-level rules below are shared by local runs and distributed ones
// (package river), so that both end a run alike.

// ErrIncomplete is the error of a run that stopped without a cause while
// executions have no result (a distributed run whose jobs left the queue).
var ErrIncomplete = errors.New("executions have no result")

// Decide settles the status of a finished run from its counts and why it
// stopped: stopped is nil when it ran to its end, an error wrapping
// ErrStrict when a strict run's scorer failed, ErrStoreFailed when its
// store refused its results or ErrItems when its items could not be read
// (all fail the run), any other error when it
// was canceled (then it is the run's error). It returns the status and the
// run's error.
func Decide(total, succeeded, failed int, stopped error) (evalrun.RunStatus, error) {
	skipped := total - succeeded - failed
	switch {
	case errors.Is(stopped, ErrStrict), errors.Is(stopped, ErrStoreFailed), errors.Is(stopped, ErrItems):
		return evalrun.RunFailed, stopped
	case skipped > 0 && stopped != nil:
		return evalrun.RunCanceled, stopped
	case skipped > 0:
		return evalrun.RunFailed, fmt.Errorf("%d of %d %w", skipped, total, ErrIncomplete)
	case succeeded > 0 || total == 0:
		return evalrun.RunCompleted, nil
	}
	return evalrun.RunFailed, errors.New("every item failed")
}

// CompletedWithErrors reports whether a run of the status with failed
// item executions completed with errors (Summary.CompletedWithErrors).
func CompletedWithErrors(status evalrun.RunStatus, failed int) bool {
	return status == evalrun.RunCompleted && failed > 0
}

// StrictFailure returns the error that stops a strict run after res, an
// error wrapping ErrStrict naming its first failed scorer, or nil when
// every scorer of res succeeded.
func StrictFailure(res *evalrun.ItemResult) error {
	for _, s := range res.Scores {
		if s.Error != "" {
			return fmt.Errorf("%w: %s on item %s: %s", ErrStrict, s.Scorer, res.ItemID, s.Error)
		}
	}
	return nil
}

// ScorerInfos describes the pipeline's scorers for a run record, in order.
func (p *Pipeline) ScorerInfos() []evalrun.ScorerInfo {
	out := make([]evalrun.ScorerInfo, len(p.scorers))
	for i, s := range p.scorers {
		out[i] = evalrun.ScorerInfo{Name: s.Name(), Kind: scorerKind(s), Threshold: p.thresholds[i]}
	}
	return out
}

// scorerKind returns the kind a scorer reports through an optional Kind
// method, or "go" for a Go implementation.
func scorerKind(s evalrun.Scorer) string {
	if k, ok := s.(interface{ Kind() string }); ok {
		return k.Kind()
	}
	return "go"
}
