package river

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/internal/tracing"
	"github.com/evalrun/evalrun/postgres"
	"github.com/evalrun/evalrun/retry"
)

// Defaults applied to zero-valued [WorkerOptions] fields.
const (
	DefaultConcurrency   = 10
	DefaultStopTimeout   = 30 * time.Second
	DefaultMaxAttempts   = 10
	DefaultFetchCooldown = 10 * time.Millisecond
	DefaultFetchPoll     = time.Second
	// DefaultCachedRuns is how many runs a worker keeps built at once.
	DefaultCachedRuns = 8
	// writeAttempts and writeTimeout bound the writing of one result before
	// the job fails (and River retries it).
	writeAttempts   = 5
	writeTimeout    = 30 * time.Second
	writeRetryDelay = 100 * time.Millisecond
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
	// Items returns the run's items in run order, by index: a job's index
	// is a position in this sequence. It must be the same sequence for
	// every worker, e.g. the pinned dataset version with the selection
	// recorded in run.Config ([engine.NewIndexedItems] reads it holding a
	// bounded number of items).
	Items(ctx context.Context, run *evalrun.Run) (ItemIndex, error)
}

// ItemIndex is a run's item sequence by index, as a worker needs it: one
// item per job. [engine.IndexedItems] implements it.
type ItemIndex interface {
	// Len is the number of items; indexes run from 0 to Len-1.
	Len() int
	// Item returns the item of index i; an error fails the job, which
	// River retries.
	Item(ctx context.Context, i int) (*evalrun.Item, error)
}

var _ ItemIndex = (*engine.IndexedItems)(nil)

// WorkerOptions configure a [Worker]. The zero value is valid.
type WorkerOptions struct {
	// Concurrency is the number of jobs (items) worked at once per queue;
	// 0 means DefaultConcurrency.
	Concurrency int
	// Queues are the River queues worked; nil means [DefaultQueue].
	Queues []string
	// HeartbeatInterval is how often the worker records that it is alive
	// and takes back the jobs of dead workers; 0 means
	// DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// DeadAfter is how long this worker may go without a heartbeat before
	// the others presume it dead and run its jobs again; 0 means
	// DefaultDeadAfter. It must be at least twice HeartbeatInterval. It
	// bounds nothing about a live worker: its items run as long as they
	// take (item_timeout applies).
	DeadAfter time.Duration
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
	// FetchAhead is how many jobs per queue the worker holds fetched
	// beyond the Concurrency it executes, so that a slot freed by a job
	// starts the next one at once instead of after River's next fetch;
	// 0 means Concurrency, a negative value none. A job fetched ahead
	// waits in this worker (River counts it running: the liveness rules
	// apply to it), starts as soon as a slot frees, and goes back to the
	// queue at once, without an attempt counted, when the worker stops
	// before it started. Concurrency and FetchAhead together are at most
	// River's QueueNumWorkersMax (the default shrinks to fit).
	FetchAhead int
	// ID names the worker in River and in the heartbeat table (unique per
	// process); "" generates one from the host name and process id.
	ID string
	// Metrics, when set, receives the worker's health and throughput
	// metrics (evalrun_worker_*, evalrun_queue_jobs; see
	// docs/distributed.md).
	Metrics prometheus.Registerer
	// Clock paces the retries of a failing result write; nil means the
	// system clock.
	Clock evalrun.Clock
	// Logger receives job failures; nil discards.
	Logger *slog.Logger
	// testOnly disables River's startup jitter (tests).
	testOnly bool
	// results, when set, stores results in place of the store (tests
	// count and hold writes with it).
	results resultWriter
	// resultsQueued, when set, is told how many results wait for a write
	// each time one arrives (tests).
	resultsQueued func(n int)
	// slotWaited, when set, is called when a job fetched ahead starts
	// waiting for a slot (tests).
	slotWaited func()
}

// Worker executes the jobs of distributed runs. Start it, then Stop it; it
// is safe for concurrent use.
type Worker struct {
	store   *postgres.Store
	builder Builder
	opts    WorkerOptions
	client  *river.Client[pgx.Tx]
	runs    *runCache
	// results stores results; batch writes those of jobs finishing
	// together in one call to it.
	results resultWriter
	batch   *resultBatcher
	// statuses reads the run status of jobs starting together at once.
	statuses *statusReader
	metrics  *workerMetrics // nil without WorkerOptions.Metrics
	// lastBeat is when the worker last recorded its heartbeat (Unix ns).
	lastBeat atomic.Int64
	// slots holds a token per job executing, per queue: River runs up to
	// Concurrency + FetchAhead jobs, and those beyond Concurrency wait
	// here for a slot.
	slots map[string]chan struct{}
	// stopping is closed when Stop begins: jobs still waiting for a slot
	// go back to the queue.
	stopping chan struct{}

	// stopBeating ends the heartbeat loop; beatingDone is closed once it
	// has ended.
	stopBeating context.CancelFunc
	beatingDone chan struct{}

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
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.DeadAfter <= 0 {
		opts.DeadAfter = DefaultDeadAfter
	}
	if opts.DeadAfter < 2*opts.HeartbeatInterval {
		return nil, fmt.Errorf("%w: worker: dead-after %s must be at least twice the heartbeat interval %s, or one late heartbeat would take a live worker's jobs",
			evalrun.ErrInvalid, opts.DeadAfter, opts.HeartbeatInterval)
	}
	if opts.ID == "" {
		opts.ID = defaultWorkerID()
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
	// River runs at most QueueNumWorkersMax jobs per queue: the executing
	// ones and those fetched ahead. The default fetch-ahead shrinks to
	// fit; a concurrency or an explicit fetch-ahead past it is refused.
	if opts.Concurrency > river.QueueNumWorkersMax {
		return nil, fmt.Errorf("%w: worker: concurrency %d must be at most %d", evalrun.ErrInvalid, opts.Concurrency, river.QueueNumWorkersMax)
	}
	switch room := river.QueueNumWorkersMax - opts.Concurrency; {
	case opts.FetchAhead == 0:
		opts.FetchAhead = min(opts.Concurrency, room)
	case opts.FetchAhead < 0:
		opts.FetchAhead = 0
	case opts.FetchAhead > room:
		return nil, fmt.Errorf("%w: worker: fetch-ahead %d: concurrency (%d) and fetch-ahead together must be at most %d",
			evalrun.ErrInvalid, opts.FetchAhead, opts.Concurrency, river.QueueNumWorkersMax)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := Migrate(ctx, store.Pool()); err != nil {
		return nil, err
	}
	w := &Worker{store: store, builder: b, opts: opts, results: opts.results,
		slots: make(map[string]chan struct{}, len(opts.Queues)), stopping: make(chan struct{})}
	for _, q := range opts.Queues {
		w.slots[q] = make(chan struct{}, opts.Concurrency)
	}
	if w.results == nil {
		w.results = store
	}
	if opts.Metrics != nil {
		m, err := registerMetrics(opts.Metrics, store.Pool(), opts.ID, opts.Queues)
		if err != nil {
			return nil, err
		}
		w.metrics = m
	}
	w.batch = &resultBatcher{store: w.results, wrote: w.metrics.resultsWritten, queued: opts.resultsQueued}
	w.statuses = &statusReader{read: store.RunStatus}
	w.runs = newRunCache(opts.CachedRuns, w.build)
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &jobWorker{w: w}); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	queues := make(map[string]river.QueueConfig, len(opts.Queues))
	for _, q := range opts.Queues {
		queues[q] = river.QueueConfig{MaxWorkers: opts.Concurrency + opts.FetchAhead}
	}
	client, err := newClient(store.Pool(), &river.Config{
		ID:      opts.ID,
		Queues:  queues,
		Workers: workers,
		// No River job timeout: an item runs as long as item_timeout and
		// its scorers allow, and River's age-based rescuer ignores jobs
		// without a timeout. Dead workers are detected by heartbeat
		// instead (liveness.go).
		JobTimeout:        -1,
		MaxAttempts:       opts.MaxAttempts,
		FetchCooldown:     opts.FetchCooldown,
		FetchPollInterval: opts.FetchPollInterval,
		SoftStopTimeout:   opts.StopTimeout,
		Logger:            opts.Logger,
		TestOnly:          opts.testOnly,
	})
	if err != nil {
		return nil, err
	}
	w.client = client
	return w, nil
}

// ID returns the worker's id (River's client id, attempted_by of its jobs).
func (w *Worker) ID() string { return w.opts.ID }

// Start records the worker's first heartbeat, then starts beating and
// fetching and working jobs; it returns at once. Cancelling ctx stops the
// worker as Stop does.
func (w *Worker) Start(ctx context.Context) error {
	pool := w.store.Pool()
	if err := w.beat(ctx); err != nil {
		return fmt.Errorf("worker: start: %w", err)
	}
	if err := w.client.Start(ctx); err != nil {
		_ = retire(context.WithoutCancel(ctx), pool, w.opts.ID)
		return fmt.Errorf("worker: start: %w", err)
	}
	bctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	w.stopBeating, w.beatingDone = stop, make(chan struct{})
	go w.beatUntilStopped(bctx)
	return nil
}

// beatUntilStopped writes the worker's heartbeat and takes back the jobs
// of dead workers every HeartbeatInterval until the River client has
// stopped (its jobs are then back in the queue) or Stop ends it; it then
// retires the worker's heartbeat.
func (w *Worker) beatUntilStopped(ctx context.Context) {
	defer close(w.beatingDone)
	pool, id := w.store.Pool(), w.opts.ID
	ticker := time.NewTicker(w.opts.HeartbeatInterval)
	defer ticker.Stop()
	for {
		n, err := reapDead(ctx, pool, w.opts.DeadAfter)
		w.metrics.took(n)
		if err != nil && ctx.Err() == nil {
			w.opts.Logger.Warn("liveness check failed", "err", err)
		} else if n > 0 {
			w.opts.Logger.Warn("took back the jobs of dead workers", "jobs", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-w.client.Stopped():
			_ = retire(context.WithoutCancel(ctx), pool, id)
			return
		case <-ticker.C:
		}
		if err := w.beat(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			if w.Healthy() != nil {
				w.opts.Logger.Error("heartbeat failing: past dead-after, other workers may run this worker's jobs again",
					"dead_after", w.opts.DeadAfter, "err", err)
			} else {
				w.opts.Logger.Warn("heartbeat failed", "err", err)
			}
		}
	}
}

// beat records the worker's heartbeat.
func (w *Worker) beat(ctx context.Context) error {
	err := beat(ctx, w.store.Pool(), w.opts.ID, w.opts.DeadAfter)
	w.metrics.beat(err)
	if err == nil {
		w.lastBeat.Store(time.Now().UnixNano())
	}
	return err
}

// Healthy returns nil while the worker's heartbeat is recorded (the
// others count it alive), else an error saying since when it is not.
func (w *Worker) Healthy() error {
	last := w.lastBeat.Load()
	if last == 0 {
		return errors.New("worker not started")
	}
	if since := time.Since(time.Unix(0, last)); since > w.opts.DeadAfter {
		return fmt.Errorf("no heartbeat recorded for %s (dead-after %s): other workers may be running this worker's jobs",
			since.Round(time.Second), w.opts.DeadAfter)
	}
	select {
	case <-w.client.Stopped():
		return errors.New("worker stopped")
	default:
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
		close(w.stopping)
		err := w.client.Stop(ctx)
		if err != nil && ctx.Err() != nil {
			err = w.client.StopAndCancel(context.WithoutCancel(ctx))
		}
		if w.stopBeating != nil {
			// The jobs are back in the queue: the heartbeat can go.
			w.stopBeating()
			<-w.beatingDone
			if rerr := retire(context.WithoutCancel(ctx), w.store.Pool(), w.opts.ID); rerr != nil && err == nil {
				err = rerr
			}
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

// defaultWorkerID names a worker after its host and process, with a
// random suffix so that a restarted process never inherits the heartbeat
// of its predecessor.
func defaultWorkerID() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.N(1<<16))
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

// Work processes one execution once a slot is free (see
// WorkerOptions.FetchAhead). It returns nil once a result is stored,
// whatever the item's outcome; river.JobCancel for a run that was
// cancelled or ended, or a job that does not fit its run; any other error
// (the run could not be loaded, the result could not be written, the
// worker is stopping) makes River retry the job later.
func (j *jobWorker) Work(ctx context.Context, job *river.Job[ItemArgs]) error {
	slots := j.w.slots[job.Queue]
	select {
	case slots <- struct{}{}:
	default:
		if j.w.opts.slotWaited != nil {
			j.w.opts.slotWaited()
		}
		if err := j.w.waitForSlot(ctx, slots); err != nil {
			return err
		}
	}
	defer func() { <-slots }()
	j.w.metrics.started()
	defer j.w.metrics.ended()
	err := j.work(ctx, job)
	var cancelled *river.JobCancelError
	if err != nil && !errors.As(err, &cancelled) {
		j.w.metrics.jobFailed()
	}
	return err
}

// waitForSlot waits for a slot to execute a job fetched ahead. A worker
// stopping returns the job to the queue at once, for any worker, without
// an attempt counted (River's snooze); a job cancelled meanwhile ends with
// its context's cause.
func (w *Worker) waitForSlot(ctx context.Context, slots chan struct{}) error {
	select {
	case slots <- struct{}{}:
		return nil
	case <-w.stopping:
		return river.JobSnooze(0)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// work is Work without the metrics.
func (j *jobWorker) work(ctx context.Context, job *river.Job[ItemArgs]) error {
	w, a := j.w, job.Args
	status, err := w.statuses.status(ctx, a.RunID)
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
	if a.Index < 0 || a.Index >= st.items.Len() || a.Repeat < 0 || a.Repeat >= st.repeat {
		return river.JobCancel(fmt.Errorf("job %d: item %d repeat %d is outside run %s (%d items × %d)",
			job.ID, a.Index, a.Repeat, a.RunID, st.items.Len(), st.repeat))
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
	item, err := st.items.Item(ctx, a.Index)
	if err != nil {
		// The store failed (or the dataset went away): like a run that
		// could not be loaded, River retries the job.
		w.opts.Logger.Error("item not loaded", "run", a.RunID, "index", a.Index, "err", err)
		return fmt.Errorf("item %d of run %s: %w", a.Index, a.RunID, err)
	}
	res := st.pipeline.Process(tracing.WithTraceParent(ctx, a.TraceParent), a.RunID, item, a.Index, a.Repeat)
	if res.ErrorKind == evalrun.ErrorCanceled {
		// Remote cancel (River records the job cancelled) or stop (River
		// retries it): nothing is stored.
		return fmt.Errorf("item %d of run %s: %s: %w", a.Index, a.RunID, res.Error, context.Cause(ctx))
	}
	if err := w.write(ctx, res); err != nil {
		return err
	}
	w.metrics.itemStored(res.Failed())
	if st.strict {
		if strictErr := engine.StrictFailure(res); strictErr != nil {
			w.stopStrict(context.WithoutCancel(ctx), a.RunID, strictErr)
		}
	}
	return nil
}

// stopStrict stops a strict run after a scorer failed, as the engine stops
// a local one: the run is marked failed with the error (the coordinator
// finalizes it and knows it failed in strict mode from that status) and
// its other jobs are cancelled.
func (w *Worker) stopStrict(ctx context.Context, runID string, strictErr error) {
	if _, err := w.store.FailRun(ctx, runID, strictErr.Error()); err != nil {
		w.opts.Logger.Error("strict mode: run not stopped", "run", runID, "err", err)
	} else if err := cancelJobs(ctx, w.client, runID); err != nil {
		w.opts.Logger.Error("strict mode: jobs not cancelled", "run", runID, "err", err)
	}
}

// write stores one result. It first goes with the results of the jobs
// finishing meanwhile, in one store call (resultBatcher); if that call
// fails, the result is written alone, retried a few times with the
// back-off of package retry (on the worker's clock), so that a run deleted
// or a result refused fails no other job of the batch. It goes on when ctx
// is cancelled: a processed item is worth keeping. It returns once the
// result is stored, so a job completes in River only after its result.
func (w *Worker) write(ctx context.Context, res *evalrun.ItemResult) error {
	policy := retry.Policy{MaxRetries: writeAttempts - 1, Delay: writeRetryDelay, Clock: w.opts.Clock}
	_, err := retry.Do(context.WithoutCancel(ctx), policy, func(ctx context.Context, attempt int) error {
		var err error
		if attempt == 0 {
			err = w.batch.write(ctx, res)
		} else {
			wctx, cancel := context.WithTimeout(ctx, writeTimeout)
			err = w.results.WriteResults(wctx, []*evalrun.ItemResult{res})
			cancel()
		}
		if err == nil {
			return nil
		}
		// A run missing from a batch may be another job's: only a write of
		// this result alone says that its run was deleted.
		if attempt > 0 && errors.Is(err, evalrun.ErrNotFound) {
			return err
		}
		w.opts.Logger.Warn("result not written", "run", res.RunID, "index", res.Index, "attempt", attempt+1, "err", err)
		// Any store failure may pass: each is worth another try.
		return evalrun.Transient(err)
	})
	if errors.Is(err, evalrun.ErrNotFound) {
		return river.JobCancel(err) // the run was deleted
	}
	if err != nil {
		return fmt.Errorf("write result %d/%d of run %s: %w", res.Index, res.Repeat, res.RunID, err)
	}
	return nil
}
