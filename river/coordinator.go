package river

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/internal/tracing"
	"github.com/evalrun/evalrun/postgres"
)

// Defaults applied to zero-valued [CoordinatorOptions] fields.
const (
	DefaultPollInterval  = 250 * time.Millisecond
	DefaultSettleTimeout = time.Minute
	// insertBatch is the most jobs inserted in one statement.
	insertBatch = 5000
	// liveCheckInterval is how often Wait checks that jobs of an unfinished
	// run remain in the queue.
	liveCheckInterval = 2 * time.Second
	// errorBudget is how long Wait keeps polling through database errors.
	errorBudget = time.Minute
)

// ErrCanceled is the cause recorded for a run cancelled through
// [Coordinator.Cancel].
var ErrCanceled = errors.New("run canceled")

// CoordinatorOptions configure a [Coordinator]. The zero value is valid.
type CoordinatorOptions struct {
	// Queue is the River queue jobs are inserted into; "" means
	// DefaultQueue. Workers must work it.
	Queue string
	// PollInterval is how often Wait counts the stored results (more
	// often near the run's end, see pollPace); 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// SettleTimeout bounds how long a cancel waits for the jobs already
	// running to stop; 0 means DefaultSettleTimeout.
	SettleTimeout time.Duration
	// Logger receives database errors Wait rides through; nil discards.
	Logger *slog.Logger
	// Clock gives the run's timestamps and paces Wait's polls; nil means
	// the system clock.
	Clock evalrun.Clock
}

// Coordinator enqueues distributed runs, waits for them, finalizes and
// cancels them. It holds an insert-only River client and is safe for
// concurrent use.
type Coordinator struct {
	store  *postgres.Store
	client *river.Client[pgx.Tx]
	opts   CoordinatorOptions
}

// NewCoordinator applies River's migrations to the store's database and
// returns a coordinator using the store's connection pool. The store stays
// the caller's to close.
func NewCoordinator(ctx context.Context, store *postgres.Store, opts CoordinatorOptions) (*Coordinator, error) {
	if opts.Queue == "" {
		opts.Queue = DefaultQueue
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.SettleTimeout <= 0 {
		opts.SettleTimeout = DefaultSettleTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = evalrun.SystemClock
	}
	if err := Migrate(ctx, store.Pool()); err != nil {
		return nil, err
	}
	client, err := newClient(store.Pool(), &river.Config{Logger: opts.Logger, SkipUnknownJobCheck: true})
	if err != nil {
		return nil, err
	}
	return &Coordinator{store: store, client: client, opts: opts}, nil
}

// Enqueue validates the spec like [engine.Run] does (target, scorers,
// options), creates the run record (status running) and inserts one job
// per item and repeat, all in one transaction: either the run exists with
// every job, or nothing was written. spec's items (Items or Source) are
// only counted, never read: workers
// load the items through their [Builder]; spec.Run must describe the run
// (Dataset, DatasetVersion, Target, Config with the item selection) so
// that they can. The record's ID is generated when empty and its Scorers
// are filled from spec.Scorers. It returns the stored record.
func (c *Coordinator) Enqueue(ctx context.Context, spec engine.Spec) (*evalrun.Run, error) {
	tx, err := c.store.Pool().Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("enqueue: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rec, err := c.EnqueueTx(ctx, tx, spec)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("enqueue run %s: commit: %w", rec.ID, err)
	}
	return rec, nil
}

// EnqueueTx is [Coordinator.Enqueue] inside the caller's transaction:
// nothing is visible to workers before the caller commits.
func (c *Coordinator) EnqueueTx(ctx context.Context, tx pgx.Tx, spec engine.Spec) (*evalrun.Run, error) {
	recs, err := c.EnqueueAllTx(ctx, tx, []engine.Spec{spec})
	if err != nil {
		return nil, err
	}
	return recs[0], nil
}

// EnqueueAll is [Coordinator.Enqueue] for several runs in one
// transaction (the variants of an experiment): either every run exists
// with every job, or nothing was written. It returns the stored records
// in the order of specs.
func (c *Coordinator) EnqueueAll(ctx context.Context, specs []engine.Spec) ([]*evalrun.Run, error) {
	tx, err := c.store.Pool().Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("enqueue: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	recs, err := c.EnqueueAllTx(ctx, tx, specs)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("enqueue %d runs: commit: %w", len(recs), err)
	}
	return recs, nil
}

// EnqueueAllTx is [Coordinator.EnqueueAll] inside the caller's
// transaction. The jobs of the runs are interleaved (item 0 of every run,
// then item 1…): workers take jobs in insertion order, so all the runs
// progress together instead of one after the other.
func (c *Coordinator) EnqueueAllTx(ctx context.Context, tx pgx.Tx, specs []engine.Spec) ([]*evalrun.Run, error) {
	recs := make([]*evalrun.Run, len(specs))
	repeats := make([]int, len(specs))
	counts := make([]int, len(specs))
	longest := 0
	now := c.opts.Clock.Now()
	for k, spec := range specs {
		p, err := engine.NewPipeline(spec.Target, spec.Scorers, spec.Options)
		if err != nil {
			return nil, err
		}
		if err := spec.CheckItems(); err != nil {
			return nil, err
		}
		repeat := max(spec.Options.Repeat, 1)
		rec := spec.Run
		if rec == nil {
			rec = &evalrun.Run{}
		}
		if rec.ID == "" {
			rec.ID = evalrun.NewRunID(now)
		}
		rec.Scorers = p.ScorerInfos()
		rec.Status = evalrun.RunRunning
		rec.Total = spec.ItemCount() * repeat
		rec.Succeeded, rec.Failed, rec.Skipped, rec.PersistErrors = 0, 0, rec.Total, 0
		rec.Error = ""
		rec.CreatedAt, rec.StartedAt, rec.CompletedAt = now, now, time.Time{}
		if err := c.store.CreateRunTx(ctx, tx, rec); err != nil {
			return nil, fmt.Errorf("enqueue: %w", err)
		}
		recs[k], repeats[k], counts[k] = rec, repeat, spec.ItemCount()
		longest = max(longest, counts[k])
	}
	opts := &river.InsertOpts{Queue: c.opts.Queue}
	traceParent := tracing.TraceParent(ctx)
	batch := make([]river.InsertManyParams, 0, insertBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if _, err := c.client.InsertManyFastTx(ctx, tx, batch); err != nil {
			return fmt.Errorf("enqueue run %s: insert jobs: %w", recs[0].ID, err)
		}
		batch = batch[:0]
		return nil
	}
	for i := range longest {
		for k := range specs {
			if i >= counts[k] {
				continue
			}
			for r := range repeats[k] {
				batch = append(batch, river.InsertManyParams{Args: ItemArgs{RunID: recs[k].ID, Index: i, Repeat: r, TraceParent: traceParent}, InsertOpts: opts})
				if len(batch) == insertBatch {
					if err := flush(); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return recs, nil
}

// WaitOptions configure [Coordinator.Wait]. The zero value is valid.
type WaitOptions struct {
	// Progress, when set, is called whenever the number of stored results
	// changed, with the counts so far.
	Progress func(evalrun.Progress)
	// LoadResults fills Summary.Results from the store (input order).
	LoadResults bool
	// JobError, when set, is called with the newest error of a job of the
	// run that went back to the queue (a worker could not build the run,
	// a worker presumed dead…), each time that error changes: without it a
	// run no worker can execute waits in silence while River retries.
	JobError func(msg string)
}

// Wait waits until every execution of the run has a stored result (or
// the run was cancelled, or its jobs left the queue without one), then
// finalizes the run record with the rules of [engine.Run] and returns the
// summary. It works for any coordinator, not only the one that enqueued
// the run: a coordinator that died is replaced by calling Wait again. A
// run already finalized returns its summary at once; a run with missing
// results and no job left in the queue (a local run) is an ErrInvalid
// error.
//
// When ctx ends, Wait cancels the run as [Coordinator.Cancel] does (queued
// jobs are deleted, running ones are signalled) and returns the run
// canceled, with the cause of ctx in Summary.Err; the error is then nil.
// An error means the run could not be read or finalized; it can be waited
// for again.
func (c *Coordinator) Wait(ctx context.Context, runID string, wo WaitOptions) (*evalrun.Summary, error) {
	// The first look at the run is not cancelled with ctx: a ctx that
	// ended before Wait was called (a Ctrl-C while an experiment starts
	// its variants' waits) must cancel the run below, not fail here.
	first := context.WithoutCancel(ctx)
	rec, err := c.store.GetRun(first, runID)
	if err != nil {
		return nil, err
	}
	if !rec.CompletedAt.IsZero() {
		return c.summary(first, rec, wo)
	}
	if rec.Status == evalrun.RunPending || rec.Status == evalrun.RunRunning {
		ok, failed, err := c.store.CountResults(first, runID)
		if err != nil {
			return nil, err
		}
		live, err := c.jobsLeft(first, runID, liveStates...)
		if err != nil {
			return nil, err
		}
		if !live && ok+failed < rec.Total {
			return nil, fmt.Errorf("%w: no job of run %s is queued or running and %d of %d executions have no result: "+
				"it was not enqueued for workers, or its jobs were discarded; resume it without --distributed to run them here",
				evalrun.ErrInvalid, runID, rec.Total-ok-failed, rec.Total)
		}
	}
	pace := pollPace{interval: c.opts.PollInterval, total: rec.Total}
	lastDone := -1
	lastJobError := ""
	nextLiveCheck := time.Now().Add(liveCheckInterval)
	var failingSince time.Time
	for {
		at := c.opts.Clock.Now()
		done, cancelled, err := c.poll(ctx, rec, wo, &lastDone, &nextLiveCheck, &lastJobError)
		delay := c.opts.PollInterval
		if err == nil {
			delay = pace.next(at, lastDone, c.opts.Clock.Now().Sub(at))
		}
		switch {
		case err == nil:
			failingSince = time.Time{}
		case ctx.Err() != nil:
		case failingSince.IsZero():
			failingSince = time.Now()
			fallthrough
		case time.Since(failingSince) < errorBudget:
			c.opts.Logger.Warn("waiting for the run: database error", "run", runID, "err", err)
		default:
			return nil, fmt.Errorf("wait for run %s: %w", runID, err)
		}
		if done {
			// A cancel from elsewhere keeps the canceller's reason.
			return c.finalize(ctx, runID, cancelled, nil, wo)
		}
		select {
		case <-ctx.Done():
			cause := context.Cause(ctx)
			bg := context.WithoutCancel(ctx)
			if err := c.cancel(bg, runID, "interrupted: "+cause.Error()); err != nil {
				return nil, err
			}
			return c.finalize(bg, runID, true, cause, wo)
		case <-c.opts.Clock.After(delay):
		}
	}
}

// pollPace paces Wait's polls: every PollInterval, and sooner when the
// rate of results between the last two polls says the run will be done
// before the next one, so that Wait returns soon after the last result
// instead of up to a PollInterval later (a quarter of a second by
// default, as long as a worker takes to execute ~1,000 fast items). The
// polls it adds fall in the run's last PollInterval only, at most one per
// PollInterval/20, and never closer than twice a poll's own duration: a
// count grows with the run's results.
type pollPace struct {
	interval time.Duration
	total    int
	// The previous poll: when it began and the results it counted.
	at   time.Time
	done int
	seen bool
}

// next returns how long to wait after a poll that began at at, counted
// done results and took took.
func (p *pollPace) next(at time.Time, done int, took time.Duration) time.Duration {
	d := p.interval
	if p.seen && done > p.done && done < p.total {
		// The time the remaining results take at the latest rate, in
		// floating point: it may exceed a Duration's range.
		eta := float64(at.Sub(p.at)) * float64(p.total-done) / float64(done-p.done)
		if eta < float64(d) {
			d = min(max(time.Duration(eta), p.interval/20, 2*took), p.interval)
		}
	}
	p.at, p.done, p.seen = at, done, true
	return d
}

// poll looks at the run once: done reports that it can be finalized,
// cancelled that it was cancelled (and its jobs have settled).
func (c *Coordinator) poll(ctx context.Context, rec *evalrun.Run, wo WaitOptions, lastDone *int, nextLiveCheck *time.Time, lastJobError *string) (done, cancelled bool, err error) {
	ok, failed, err := c.store.CountResults(ctx, rec.ID)
	if err != nil {
		return false, false, err
	}
	if n := ok + failed; n != *lastDone {
		*lastDone = n
		if wo.Progress != nil {
			wo.Progress(evalrun.Progress{Total: rec.Total, Done: n, Succeeded: ok, Failed: failed})
		}
	}
	if ok+failed >= rec.Total {
		return true, false, nil
	}
	status, err := c.store.RunStatus(ctx, rec.ID)
	if err != nil {
		return false, false, err
	}
	switch status {
	case evalrun.RunCanceled:
		// Cancelled elsewhere (runs cancel): stop what is queued in case
		// the canceller could not, and let running jobs end.
		if err := c.cancel(ctx, rec.ID, ""); err != nil {
			return false, false, err
		}
		return true, true, nil
	case evalrun.RunFailed:
		// Stopped by a worker in strict mode (see stopStrict): likewise.
		if err := cancelJobs(ctx, c.client, rec.ID); err != nil {
			return false, false, err
		}
		if err := c.settle(ctx, rec.ID); err != nil {
			return false, false, err
		}
		return true, false, nil
	}
	if time.Now().After(*nextLiveCheck) {
		*nextLiveCheck = time.Now().Add(liveCheckInterval)
		live, err := c.jobsLeft(ctx, rec.ID, liveStates...)
		if err != nil {
			return false, false, err
		}
		if !live {
			// Every job ended: its result, if any, was written before.
			return true, false, nil
		}
		if wo.JobError != nil {
			msg, err := c.newestJobError(ctx, rec.ID)
			if err != nil {
				return false, false, err
			}
			if msg != "" && msg != *lastJobError {
				*lastJobError = msg
				wo.JobError(msg)
			}
		}
	}
	return false, false, nil
}

// newestJobError returns the newest attempt error of the run's jobs that
// are waiting to run again, or "" when none has one.
func (c *Coordinator) newestJobError(ctx context.Context, runID string) (string, error) {
	var msg string
	err := c.store.Pool().QueryRow(ctx, `SELECT coalesce(errors[array_upper(errors, 1)]->>'error', '')
		FROM river_job WHERE kind = $1 AND args->>'run_id' = $2 AND state IN ('available', 'retryable', 'scheduled')
			AND coalesce(array_length(errors, 1), 0) > 0
		ORDER BY (errors[array_upper(errors, 1)]->>'at') DESC LIMIT 1`, Kind, runID).Scan(&msg)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the job errors of run %s: %w", runID, err)
	}
	return msg, nil
}

// Cancel cancels a run: it marks the run canceled, deletes its queued
// jobs, signals its running jobs (River cancels their context; a job that
// starts later sees the status and does nothing), waits up to
// SettleTimeout for them to stop, and finalizes the run with exact counts
// from the store. A run that had already ended is returned as it is.
func (c *Coordinator) Cancel(ctx context.Context, runID string) (*evalrun.Summary, error) {
	if err := c.cancel(ctx, runID, ErrCanceled.Error()); err != nil {
		return nil, err
	}
	return c.finalize(ctx, runID, true, ErrCanceled, WaitOptions{})
}

// cancel marks the run canceled (with reason, when not empty and the run
// was still going), stops its queued jobs and waits for its running ones.
func (c *Coordinator) cancel(ctx context.Context, runID, reason string) error {
	var status evalrun.RunStatus
	var err error
	if reason != "" {
		run, _, err := c.store.CancelRun(ctx, runID, reason)
		if err != nil {
			return err
		}
		status = run.Status
	} else if status, err = c.store.RunStatus(ctx, runID); err != nil {
		return err
	}
	if status != evalrun.RunCanceled {
		return nil // it ended before the cancel
	}
	if err := cancelJobs(ctx, c.client, runID); err != nil {
		return err
	}
	return c.settle(ctx, runID)
}

// cancelJobs deletes the run's jobs that are not running and asks River to
// cancel the running ones.
func cancelJobs(ctx context.Context, client *river.Client[pgx.Tx], runID string) error {
	where, args := runPredicate(runID)
	for {
		res, err := client.JobDeleteMany(ctx, river.NewJobDeleteManyParams().Kinds(Kind).
			States(rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateScheduled).
			Where(where, args).First(10000))
		if err != nil {
			return fmt.Errorf("cancel run %s: delete queued jobs: %w", runID, err)
		}
		if len(res.Jobs) == 0 {
			break
		}
	}
	res, err := client.JobList(ctx, river.NewJobListParams().Kinds(Kind).States(rivertype.JobStateRunning).
		Where(where, args).First(10000))
	if err != nil {
		return fmt.Errorf("cancel run %s: list running jobs: %w", runID, err)
	}
	for _, j := range res.Jobs {
		if _, err := client.JobCancel(ctx, j.ID); err != nil && !errors.Is(err, river.ErrNotFound) {
			return fmt.Errorf("cancel run %s: cancel job %d: %w", runID, j.ID, err)
		}
	}
	return nil
}

// settle waits until no job of the run is running, or SettleTimeout.
func (c *Coordinator) settle(ctx context.Context, runID string) error {
	deadline := time.Now().Add(c.opts.SettleTimeout)
	interval := min(c.opts.PollInterval, 50*time.Millisecond)
	for {
		running, err := c.jobsLeft(ctx, runID, rivertype.JobStateRunning)
		if err != nil {
			return err
		}
		if !running {
			return nil
		}
		if time.Now().After(deadline) {
			c.opts.Logger.Warn("cancel: jobs still running after the settle timeout; their executions count as skipped",
				"run", runID, "timeout", c.opts.SettleTimeout)
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(interval):
		}
	}
}

// liveStates are the states of a job that may still execute.
var liveStates = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}

// jobsLeft reports whether a job of the run is in one of the states.
func (c *Coordinator) jobsLeft(ctx context.Context, runID string, states ...rivertype.JobState) (bool, error) {
	where, args := runPredicate(runID)
	res, err := c.client.JobList(ctx, river.NewJobListParams().Kinds(Kind).States(states...).Where(where, args).First(1))
	if err != nil {
		return false, fmt.Errorf("list jobs of run %s: %w", runID, err)
	}
	return len(res.Jobs) > 0, nil
}

// runPredicate selects the jobs of a run.
func runPredicate(runID string) (string, river.NamedArgs) {
	return "args->>'run_id' = @run_id", river.NamedArgs{"run_id": runID}
}

// finalize settles the run's status and counts from the stored results,
// with the rules of engine.Run, and writes them to the run record.
func (c *Coordinator) finalize(ctx context.Context, runID string, cancelled bool, cause error, wo WaitOptions) (*evalrun.Summary, error) {
	rec, err := c.store.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if !rec.CompletedAt.IsZero() {
		return c.summary(ctx, rec, wo) // finalized meanwhile (a concurrent Cancel)
	}
	ok, failed, err := c.store.CountResults(ctx, runID)
	if err != nil {
		return nil, err
	}
	// Why the run stopped, from its record: failed before it was
	// finalized means a worker stopped it in strict mode; canceled means
	// a cancel from elsewhere, whose reason it keeps.
	var stopped error
	switch {
	case rec.Status == evalrun.RunFailed:
		stopped = &recordedError{msg: rec.Error, kind: engine.ErrStrict}
	case cause != nil:
		stopped = cause
	case cancelled || rec.Status == evalrun.RunCanceled:
		stopped = &recordedError{msg: cmp.Or(rec.Error, ErrCanceled.Error()), kind: ErrCanceled}
	}
	status, runErr := engine.Decide(rec.Total, ok, failed, stopped)
	if errors.Is(runErr, engine.ErrIncomplete) {
		runErr = fmt.Errorf("%w: their jobs left the queue unfinished (discarded after repeated infrastructure errors, or deleted)", runErr)
	}
	rec.Status = status
	rec.Succeeded, rec.Failed, rec.Skipped = ok, failed, max(rec.Total-ok-failed, 0)
	rec.CompletedAt = c.opts.Clock.Now()
	rec.Error = ""
	if runErr != nil {
		rec.Error = runErr.Error()
	}
	if err := c.store.UpdateRun(ctx, rec); err != nil {
		return nil, fmt.Errorf("finalize run %s: %w", runID, err)
	}
	s, err := c.summary(ctx, rec, wo)
	if err != nil {
		return nil, err
	}
	s.Err = runErr
	return s, nil
}

// summary builds the summary of a finalized run record.
func (c *Coordinator) summary(ctx context.Context, rec *evalrun.Run, wo WaitOptions) (*evalrun.Summary, error) {
	s := &evalrun.Summary{
		RunID:         rec.ID,
		Status:        rec.Status,
		Total:         rec.Total,
		Succeeded:     rec.Succeeded,
		Failed:        rec.Failed,
		Skipped:       rec.Skipped,
		PersistErrors: rec.PersistErrors,
		StartedAt:     rec.StartedAt,
		CompletedAt:   rec.CompletedAt,
	}
	s.CompletedWithErrors = engine.CompletedWithErrors(s.Status, s.Failed)
	if rec.Error != "" {
		s.Err = &recordedError{msg: rec.Error}
		if s.Status == evalrun.RunCanceled {
			s.Err = &recordedError{msg: rec.Error, kind: ErrCanceled}
		}
	}
	n, err := c.store.CountScorerErrors(ctx, rec.ID)
	if err != nil {
		return nil, err
	}
	s.ScorerErrors = n
	if wo.LoadResults {
		s.Results = make([]*evalrun.ItemResult, 0, s.Succeeded+s.Failed)
		if err := c.store.ScanResults(ctx, rec.ID, evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
			s.Results = append(s.Results, r)
			return nil
		}); err != nil {
			return nil, fmt.Errorf("load results of run %s: %w", rec.ID, err)
		}
	}
	return s, nil
}

// recordedError is a run's error read back from its record: its text,
// and what it is (ErrCanceled, engine.ErrStrict) known from the run's
// status, never from the text.
type recordedError struct {
	msg  string
	kind error
}

func (e *recordedError) Error() string { return e.msg }

func (e *recordedError) Unwrap() error { return e.kind }

// IsDistributed reports whether runID was enqueued for workers: River's
// tables exist in the database and hold jobs of the run. It migrates
// nothing, so asking about a local run leaves the database as it was.
func IsDistributed(ctx context.Context, store *postgres.Store, runID string) (bool, error) {
	var ok bool
	err := store.Pool().QueryRow(ctx, `SELECT to_regclass('river_job') IS NOT NULL`).Scan(&ok)
	if err != nil || !ok {
		return false, err
	}
	err = store.Pool().QueryRow(ctx,
		`SELECT EXISTS (SELECT 1 FROM river_job WHERE kind = $1 AND args->>'run_id' = $2)`, Kind, runID).Scan(&ok)
	return ok, err
}

// HasLiveJobs reports whether a job of runID may still execute on a
// worker: queued, scheduled, retryable or running. A run with such jobs
// is the workers' to finish; executing it elsewhere too would execute its
// items twice. Like [IsDistributed] it migrates nothing.
func HasLiveJobs(ctx context.Context, store *postgres.Store, runID string) (bool, error) {
	var ok bool
	err := store.Pool().QueryRow(ctx, `SELECT to_regclass('river_job') IS NOT NULL`).Scan(&ok)
	if err != nil || !ok {
		return false, err
	}
	states := make([]string, len(liveStates))
	for i, s := range liveStates {
		states[i] = string(s)
	}
	err = store.Pool().QueryRow(ctx,
		`SELECT EXISTS (SELECT 1 FROM river_job WHERE kind = $1 AND args->>'run_id' = $2 AND state::text = ANY($3))`,
		Kind, runID, states).Scan(&ok)
	return ok, err
}
