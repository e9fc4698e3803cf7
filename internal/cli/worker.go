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
		concurrency              int
		queues                   []string
		rescueAfter, stopTimeout time.Duration
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
--stop-timeout to finish, then are canceled and go back to the queue for
another worker. A worker killed outright (SIGKILL, power loss) loses nothing:
its jobs are made available again after --rescue-after; give every worker the
same value, well above the suites' item_timeout (a job still running past 90%
of it is canceled and retried).`,
		Example: `  EVALRUN_DB=postgres://evalrun@db.internal/evalrun evalrun worker
  evalrun worker --db postgres://evalrun@db.internal/evalrun --concurrency 20
  evalrun worker --queues evalrun,nightly --rescue-after 30m`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return st.worker(cmd, river.WorkerOptions{Concurrency: concurrency, Queues: queues,
				RescueAfter: rescueAfter, StopTimeout: stopTimeout})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&concurrency, "concurrency", river.DefaultConcurrency, "items this worker executes at once (per queue)")
	fl.StringSliceVar(&queues, "queues", []string{river.DefaultQueue}, "River queues to work, comma-separated")
	fl.DurationVar(&rescueAfter, "rescue-after", river.DefaultRescueAfter, "a job running longer is presumed lost and run again (same value on every worker; above item_timeout)")
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
	fmt.Fprintf(st.Stderr, "worker started: concurrency %d, queues %v, storage %s\n", opts.Concurrency, opts.Queues, redactURL(st.dbURL(cmd)))
	<-ctx.Done()
	fmt.Fprintf(st.Stderr, "worker stopping: waiting up to %s for the jobs in flight\n", opts.StopTimeout)
	if err := w.Stop(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	fmt.Fprintln(st.Stderr, "worker stopped")
	return nil
}
