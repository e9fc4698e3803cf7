package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evalrun/evalrun"
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
	// Items are the dataset items, in order. A result's Index is the
	// item's position here.
	Items   []*evalrun.Item
	Target  evalrun.Target
	Scorers []evalrun.Scorer
	Options Options
}

// Run executes spec.Items against spec.Target, scores every output with
// spec.Scorers and hands each result to store (nil: nothing is stored).
//
// It returns a summary whenever the run started, also when ctx is
// cancelled (status canceled) or a fatal error ends it (status failed);
// the error is then nil and Summary.Err gives the cause. A non-nil error
// with a nil summary means nothing ran: the spec was invalid (ErrInvalid)
// or the run record could not be written.
func Run(ctx context.Context, store evalrun.RunStore, spec Spec) (*evalrun.Summary, error) {
	p, err := NewPipeline(spec.Target, spec.Scorers, spec.Options)
	if err != nil {
		return nil, err
	}
	opts := p.opts
	if err := CheckExecutions(len(spec.Items), opts.Repeat); err != nil {
		return nil, fmt.Errorf("%w: %w", evalrun.ErrInvalid, err)
	}
	for i, it := range spec.Items {
		if it == nil {
			return nil, fmt.Errorf("%w: item %d is nil", evalrun.ErrInvalid, i)
		}
	}
	r := &runner{
		pipeline: p,
		opts:     opts,
		store:    store,
		items:    spec.Items,
		repeat:   opts.Repeat,
		total:    len(spec.Items) * opts.Repeat,
	}
	if err := r.prepare(ctx, spec.Run); err != nil {
		return nil, err
	}
	return r.execute(ctx), nil
}

// runner is the state of one run.
type runner struct {
	pipeline *Pipeline
	opts     Options
	store    evalrun.RunStore
	items    []*evalrun.Item
	repeat   int
	total    int
	record   *evalrun.Run

	// done marks (index×repeat) executions that need not run (resume).
	done []bool
	// prior counts stored results that a resume keeps.
	priorSucceeded, priorFailed int

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
		if k.Index < 0 || k.Index >= len(r.items) || k.Repeat < 0 || k.Repeat >= r.repeat {
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

	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(r.opts.Concurrency, max(r.total, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				j := int(next.Add(1) - 1)
				if j >= r.total {
					return
				}
				if r.done != nil && r.done[j] {
					continue
				}
				r.one(ctx, cancel, w, j)
			}
		}()
	}
	wg.Wait()
	if w != nil {
		w.close()
	}
	return r.finish(parent, ctx, w)
}

// one processes execution j (item j/repeat, repeat j%repeat).
func (r *runner) one(ctx context.Context, cancel context.CancelCauseFunc, w *resultWriter, j int) {
	idx, rep := j/r.repeat, j%r.repeat
	res := r.pipeline.Process(ctx, r.record.ID, r.items[idx], idx, rep)
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
// ErrStrict when a strict run's scorer failed or ErrStoreFailed when its
// store refused its results (both fail the run), any other error when it
// was canceled (then it is the run's error). It returns the status and the
// run's error.
func Decide(total, succeeded, failed int, stopped error) (evalrun.RunStatus, error) {
	skipped := total - succeeded - failed
	switch {
	case errors.Is(stopped, ErrStrict), errors.Is(stopped, ErrStoreFailed):
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
