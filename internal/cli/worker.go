package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/evalrun/evalrun/river"
)

func init() { register(newWorkerCmd) }

func newWorkerCmd(st *State) *cobra.Command {
	var (
		concurrency                       int
		queues                            []string
		heartbeat, deadAfter, stopTimeout time.Duration
		rescueAfter                       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Execute the items of distributed runs (PostgreSQL)",
		Long: `Work the jobs that "evalrun run --distributed" enqueues in the PostgreSQL database
given by --db or EVALRUN_DB. Start any number of workers on any number of
machines; each executes and scores items with the same item pipeline as a local
run (item_timeout, transient-only retries with back-off, parallel scorers) and
stores every result once, keyed by (run, item, repeat).

A worker rebuilds each run's target and scorers from the run's stored config,
expanding ${VAR} references from its OWN environment: export the suite's
secrets (e.g. OPENAI_API_KEY) on every worker machine. Relative paths in the
suite (exec commands, schema files) resolve against the directory the suite was
loaded from on the coordinating machine, so keep the same layout on workers.

Rate limits (target.rate_limit, --rate) hold PER WORKER PROCESS: the total rate
against the target is rate × number of workers. For a provider limit of 600
requests/min shared by 3 workers, set rate_limit: 200/m. Adaptive concurrency
(a 429 halves the calls in flight) also acts per worker.

SIGTERM or Ctrl-C stops gracefully: no new jobs; jobs in flight get
--stop-timeout to finish, then are cancelled and go back to the queue for
another worker. A worker killed outright (SIGKILL, OOM, power loss) loses
nothing: every worker records a heartbeat in the database every --heartbeat,
and the others run the jobs of a worker silent for --dead-after again (within
about dead-after + heartbeat + 1 s: 24 s by default). A live worker's item is
never taken from it, however long it runs.`,
		Example: `  EVALRUN_DB=postgres://evalrun@db.internal/evalrun evalrun worker
  evalrun worker --db postgres://evalrun@db.internal/evalrun --concurrency 20
  evalrun worker --queues evalrun,nightly --dead-after 1m`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return st.worker(cmd, river.WorkerOptions{Concurrency: concurrency, Queues: queues,
				HeartbeatInterval: heartbeat, DeadAfter: deadAfter, StopTimeout: stopTimeout})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&concurrency, "concurrency", river.DefaultConcurrency, "items this worker executes at once (per queue)")
	fl.StringSliceVar(&queues, "queues", []string{river.DefaultQueue}, "River queues to work, comma-separated")
	fl.DurationVar(&heartbeat, "heartbeat", river.DefaultHeartbeatInterval, "how often this worker records that it is alive and looks for dead workers")
	fl.DurationVar(&deadAfter, "dead-after", river.DefaultDeadAfter, "others run this worker's jobs again after it has been silent this long (at least 2 × --heartbeat)")
	// --rescue-after tuned River's age-based rescue, which took a live
	// worker's slow item; liveness is by heartbeat now. Scripts passing it
	// keep working.
	fl.DurationVar(&rescueAfter, "rescue-after", 0, "")
	_ = fl.MarkDeprecated("rescue-after", "dead workers are detected by heartbeat now; use --dead-after")
	fl.DurationVar(&stopTimeout, "stop-timeout", river.DefaultStopTimeout, "on SIGTERM, how long jobs in flight may finish before they return to the queue")
	return cmd
}

// worker is evalrun worker: it runs until the command's context ends
// (SIGINT/SIGTERM), then stops gracefully.
func (st *State) worker(cmd *cobra.Command, opts river.WorkerOptions) error {
	ctx := cmd.Context()
	if opts.Concurrency < 1 {
		return invalidf("--concurrency %d: must be at least 1", opts.Concurrency)
	}
	if opts.HeartbeatInterval <= 0 || opts.DeadAfter < 2*opts.HeartbeatInterval {
		return invalidf("--heartbeat %s, --dead-after %s: the heartbeat must be positive and dead-after at least twice it",
			opts.HeartbeatInterval, opts.DeadAfter)
	}
	pg, err := st.openPostgres(cmd)
	if err != nil {
		return err
	}
	defer pg.Close()
	opts.Logger = slog.New(slog.NewTextHandler(st.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	w, err := river.NewWorker(ctx, pg, &suiteBuilder{st: st, store: pg}, opts)
	if err != nil {
		return err
	}
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(st.Stderr, "worker %s started: concurrency %d, queues %v, storage %s\n", w.ID(), opts.Concurrency, opts.Queues, redactURL(st.dbURL(cmd)))
	<-ctx.Done()
	fmt.Fprintf(st.Stderr, "worker stopping: waiting up to %s for the jobs in flight\n", opts.StopTimeout)
	if err := w.Stop(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	fmt.Fprintln(st.Stderr, "worker stopped")
	return nil
}
