package river

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/postgres"
)

// Defaults applied to zero-valued [WorkerOptions] fields.
const (
	DefaultConcurrency = 10
	// DefaultRescueAfter is how long a job may run before River considers
	// its worker dead and makes it available again. It must exceed the
	// longest item_timeout (plus scoring) of the runs the workers execute.
	DefaultRescueAfter   = 15 * time.Minute
	DefaultStopTimeout   = 30 * time.Second
	DefaultMaxAttempts   = 10
	DefaultFetchCooldown = 10 * time.Millisecond
	DefaultFetchPoll     = time.Second
	// DefaultCachedRuns is how many runs a worker keeps built at once.
	DefaultCachedRuns = 8
	// writeAttempts and writeTimeout bound the writing of one result before
	// the job fails (and River retries it).
	writeAttempts = 5
	writeTimeout  = 30 * time.Second
)

// Builder rebuilds what a run needs from its stored record. A worker calls
// Build and Items once per run it meets (and again after an error), from
// any goroutine; the CLI implements it with the suite package
// (suite.FromRunConfig), expanding ${VAR} from the worker's environment.
type Builder interface {
	// Build returns the run's target, scorers and engine options
	// (item_timeout, retries, repeat, strict, adaptive, cache…).
	// Concurrency and the writer's options are ignored: the worker's
	// concurrency applies.
	Build(ctx context.Context, run *evalrun.Run) (evalrun.Target, []evalrun.Scorer, engine.Options, error)
	// Items returns the run's items in run order: a job's index is a
	// position in this list. It must return the same list to every worker,
	// e.g. the pinned dataset version with the selection recorded in
	// run.Config.
	Items(ctx context.Context, run *evalrun.Run) ([]*evalrun.Item, error)
}

// WorkerOptions configure a [Worker]. The zero value is valid.
type WorkerOptions struct {
	// Concurrency is the number of jobs (items) worked at once per queue;
	// 0 means DefaultConcurrency.
	Concurrency int
	// Queues are the River queues worked; nil means [DefaultQueue].
	Queues []string
	// RescueAfter is how long a job may be running before River makes it
	// available again (its worker is presumed dead); 0 means
	// DefaultRescueAfter. A job's context is cancelled after 90% of it
	// (River's job timeout; the job then returns to the queue), so keep it
	// well above the longest item_timeout plus scoring. The elected leader
	// among the workers applies its own value: give every worker the same.
	RescueAfter time.Duration
	// StopTimeout is the grace period of Stop: in-flight jobs get this
	// long to finish before their context is cancelled (they then return
	// to the queue); 0 means DefaultStopTimeout.
	StopTimeout time.Duration
	// MaxAttempts is how often River tries a job failing for an
	// infrastructure reason (or rescued) before discarding it; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	// FetchCooldown and FetchPollInterval tune how fast River fetches jobs
	// (see docs/distributed.md); 0 means DefaultFetchCooldown and
	// DefaultFetchPoll.
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration
	// CachedRuns bounds the runs kept built at once; 0 means
	// DefaultCachedRuns.
	CachedRuns int
	// ID names the worker in River (unique per process); "" generates one.
	ID string
	// Logger receives job failures; nil discards.
	Logger *slog.Logger
	// testOnly disables River's startup jitter (tests).
	testOnly bool
}

// Worker executes the jobs of distributed runs. Start it, then Stop it; it
// is safe for concurrent use.
type Worker struct {
	store   *postgres.Store
	builder Builder
	opts    WorkerOptions
	client  *river.Client[pgx.Tx]
	runs    *runCache

	stopOnce sync.Once
	stopErr  error
}

// NewWorker applies River's migrations to the store's database and returns
// a worker using the store's connection pool (size it above Concurrency).
// The store stays the caller's to close, after Stop.
func NewWorker(ctx context.Context, store *postgres.Store, b Builder, opts WorkerOptions) (*Worker, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: worker: no builder", evalrun.ErrInvalid)
	}
	if opts.Concurrency < 0 {
		return nil, fmt.Errorf("%w: worker: concurrency %d must be at least 1", evalrun.ErrInvalid, opts.Concurrency)
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if len(opts.Queues) == 0 {
		opts.Queues = []string{DefaultQueue}
	}
	if opts.RescueAfter <= 0 {
		opts.RescueAfter = DefaultRescueAfter
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.FetchCooldown <= 0 {
		opts.FetchCooldown = DefaultFetchCooldown
	}
	if opts.FetchPollInterval <= 0 {
		opts.FetchPollInterval = DefaultFetchPoll
	}
	if opts.CachedRuns <= 0 {
		opts.CachedRuns = DefaultCachedRuns
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := Migrate(ctx, store.Pool()); err != nil {
		return nil, err
	}
	w := &Worker{store: store, builder: b, opts: opts}
	w.runs = newRunCache(opts.CachedRuns, w.build)
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &jobWorker{w: w}); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	queues := make(map[string]river.QueueConfig, len(opts.Queues))
	for _, q := range opts.Queues {
		queues[q] = river.QueueConfig{MaxWorkers: opts.Concurrency}
	}
	client, err := newClient(store.Pool(), &river.Config{
		ID:      opts.ID,
		Queues:  queues,
		Workers: workers,
		// River rescues only jobs with a finite timeout; past it River
		// cancels the job's context, and it goes back to the queue.
		JobTimeout:           opts.RescueAfter * 9 / 10,
		RescueStuckJobsAfter: opts.RescueAfter,
		MaxAttempts:          opts.MaxAttempts,
		FetchCooldown:        opts.FetchCooldown,
		FetchPollInterval:    opts.FetchPollInterval,
		SoftStopTimeout:      opts.StopTimeout,
		Logger:               opts.Logger,
		TestOnly:             opts.testOnly,
	})
	if err != nil {
		return nil, err
	}
	w.client = client
	return w, nil
}

// Start starts fetching and working jobs; it returns at once. Cancelling
// ctx stops the worker as Stop does.
func (w *Worker) Start(ctx context.Context) error {
	if err := w.client.Start(ctx); err != nil {
		return fmt.Errorf("worker: start: %w", err)
	}
	return nil
}

// Stop stops fetching jobs and waits for the jobs in flight: they get
// StopTimeout to finish, then their context is cancelled and they return
// to the queue, to be retried by River (here or on another worker). It
// then releases the targets and scorers of the runs it built. If ctx ends
// first, in-flight jobs are cancelled at once. Stopping twice is safe.
func (w *Worker) Stop(ctx context.Context) error {
	w.stopOnce.Do(func() {
		err := w.client.Stop(ctx)
		if err != nil && ctx.Err() != nil {
			err = w.client.StopAndCancel(context.WithoutCancel(ctx))
		}
		w.runs.closeAll()
		if err != nil {
			w.stopErr = fmt.Errorf("worker: stop: %w", err)
		}
	})
	return w.stopErr
}

// Stopped returns a channel closed once the worker has stopped (also when
// the context given to Start ended).
func (w *Worker) Stopped() <-chan struct{} { return w.client.Stopped() }

// build loads a run's record, pipeline and items.
func (w *Worker) build(ctx context.Context, runID string) (*runState, error) {
	rec, err := w.store.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	target, scorers, opts, err := w.builder.Build(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("build run %s: %w", runID, err)
	}
	st := &runState{run: rec, target: target, scorers: scorers, strict: opts.Strict}
	opts.Logger = cmpLogger(opts.Logger, w.opts.Logger)
	// The pipeline's cap on target calls in flight (adaptive unless the
	// suite fixed it) is this worker's concurrency: River's slots bound the
	// jobs, the suite's concurrency applies to local runs only.
	opts.Concurrency = w.opts.Concurrency
	p, err := engine.NewPipeline(target, scorers, opts)
	if err != nil {
		st.close()
		return nil, fmt.Errorf("build run %s: %w", runID, err)
	}
	st.pipeline = p
	items, err := w.builder.Items(ctx, rec)
	if err != nil {
		st.close()
		return nil, fmt.Errorf("items of run %s: %w", runID, err)
	}
	st.items = items
	st.repeat = max(opts.Repeat, 1)
	return st, nil
}

func cmpLogger(a, b *slog.Logger) *slog.Logger {
	if a != nil {
		return a
	}
	return b
}

// jobWorker is the River worker of [Kind] jobs.
type jobWorker struct {
	river.WorkerDefaults[ItemArgs]
	w *Worker
}

// Work processes one execution. It returns nil once a result is stored,
// whatever the item's outcome; river.JobCancel for a run that was
// cancelled or ended, or a job that does not fit its run; any other error
// (the run could not be loaded, the result could not be written, the
// worker is stopping) makes River retry the job later.
func (j *jobWorker) Work(ctx context.Context, job *river.Job[ItemArgs]) error {
	w, a := j.w, job.Args
	status, err := w.store.RunStatus(ctx, a.RunID)
	if errors.Is(err, evalrun.ErrNotFound) {
		return river.JobCancel(err)
	}
	if err != nil {
		return err
	}
	if status.Done() {
		w.runs.forget(a.RunID)
		return river.JobCancel(fmt.Errorf("run %s is %s", a.RunID, status))
	}
	st, err := w.runs.acquire(ctx, a.RunID)
	if err != nil {
		w.opts.Logger.Error("run not loaded", "run", a.RunID, "err", err)
		return err
	}
	defer w.runs.release(st)
	if a.Index < 0 || a.Index >= len(st.items) || a.Repeat < 0 || a.Repeat >= st.repeat {
		return river.JobCancel(fmt.Errorf("job %d: item %d repeat %d is outside run %s (%d items × %d)",
			job.ID, a.Index, a.Repeat, a.RunID, len(st.items), st.repeat))
	}
	if job.Attempt > 1 {
		// A retried or rescued job may have written its result already.
		done, err := w.store.HasResult(ctx, a.RunID, a.Index, a.Repeat)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
	res := st.pipeline.Process(ctx, a.RunID, st.items[a.Index], a.Index, a.Repeat)
	if res.ErrorKind == evalrun.ErrorCanceled {
		// Remote cancel (River records the job cancelled) or stop (River
		// retries it): nothing is stored.
		return fmt.Errorf("item %d of run %s: %s: %w", a.Index, a.RunID, res.Error, context.Cause(ctx))
	}
	if err := w.write(ctx, res); err != nil {
		return err
	}
	if st.strict {
		for _, s := range res.Scores {
			if s.Error != "" {
				reason := fmt.Sprintf("%s: %s on item %s: %s", engine.ErrStrict, s.Scorer, res.ItemID, s.Error)
				bg := context.WithoutCancel(ctx)
				if _, _, err := w.store.CancelRun(bg, a.RunID, reason); err != nil {
					w.opts.Logger.Error("strict mode: run not cancelled", "run", a.RunID, "err", err)
				} else if err := cancelJobs(bg, w.client, a.RunID); err != nil {
					w.opts.Logger.Error("strict mode: jobs not cancelled", "run", a.RunID, "err", err)
				}
				break
			}
		}
	}
	return nil
}

// write stores one result, retrying a failing store a few times. It goes
// on when ctx is cancelled: a processed item is worth keeping.
func (w *Worker) write(ctx context.Context, res *evalrun.ItemResult) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	delay := 100 * time.Millisecond
	for attempt := range writeAttempts {
		if attempt > 0 {
			time.Sleep(delay)
			delay *= 2
		}
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err = w.store.WriteResults(wctx, []*evalrun.ItemResult{res})
		cancel()
		if err == nil || errors.Is(err, evalrun.ErrNotFound) {
			break
		}
		w.opts.Logger.Warn("result not written, retrying", "run", res.RunID, "index", res.Index, "attempt", attempt+1, "err", err)
	}
	if errors.Is(err, evalrun.ErrNotFound) {
		return river.JobCancel(err) // the run was deleted
	}
	if err != nil {
		return fmt.Errorf("write result %d/%d of run %s: %w", res.Index, res.Repeat, res.RunID, err)
	}
	return nil
}
