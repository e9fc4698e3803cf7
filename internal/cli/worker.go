package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/evalrun/evalrun/river"
)

func init() { register(newWorkerCmd) }

func newWorkerCmd(st *State) *cobra.Command {
	var (
		concurrency, fetchAhead           int
		queues                            []string
		heartbeat, deadAfter, stopTimeout time.Duration
		rescueAfter                       time.Duration
		metricsAddr                       string
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

A worker holds up to --fetch-ahead jobs (default: as many as --concurrency)
beyond those it executes, so that a freed slot starts the next item at once.
For items taking seconds or more, run by several workers, --fetch-ahead 0
lets the last items of a run go to idle workers instead of waiting behind a
busy one's.

SIGTERM or Ctrl-C stops gracefully: no new jobs; jobs fetched ahead and not
started go back to the queue at once; jobs in flight get
--stop-timeout to finish, then are canceled and go back to the queue for
another worker. A worker killed outright (SIGKILL, OOM, power loss) loses
nothing: every worker records a heartbeat in the database every --heartbeat,
and the others run the jobs of a worker silent for --dead-after again (within
about dead-after + heartbeat + 1 s: 24 s by default). A live worker's item is
never taken from it, however long it runs.

--metrics-addr HOST:PORT serves Prometheus metrics at /metrics (items done
and failed, in flight, job errors, heartbeats, queue depth by state) and the
worker's health at /healthz (200 while its heartbeat is recorded, else 503).
Nothing listens unless it is given; it serves no data of the runs.`,
		Example: `  EVALRUN_DB=postgres://evalrun@db.internal/evalrun evalrun worker
  evalrun worker --db postgres://evalrun@db.internal/evalrun --concurrency 20
  evalrun worker --queues evalrun,nightly --dead-after 1m
  evalrun worker --metrics-addr 127.0.0.1:9464`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ahead, err := fetchAheadOption(fetchAhead)
			if err != nil {
				return err
			}
			return st.worker(cmd, metricsAddr, river.WorkerOptions{Concurrency: concurrency, Queues: queues,
				HeartbeatInterval: heartbeat, DeadAfter: deadAfter, StopTimeout: stopTimeout, FetchAhead: ahead})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&concurrency, "concurrency", river.DefaultConcurrency, "items this worker executes at once (per queue)")
	fl.IntVar(&fetchAhead, "fetch-ahead", -1, "jobs held beyond --concurrency, started as slots free (-1: as many as --concurrency; 0: none)")
	fl.StringSliceVar(&queues, "queues", []string{river.DefaultQueue}, "River queues to work, comma-separated")
	fl.DurationVar(&heartbeat, "heartbeat", river.DefaultHeartbeatInterval, "how often this worker records that it is alive and looks for dead workers")
	fl.DurationVar(&deadAfter, "dead-after", river.DefaultDeadAfter, "others run this worker's jobs again after it has been silent this long (at least 2 × --heartbeat)")
	// --rescue-after tuned River's age-based rescue, which took a live
	// worker's slow item; liveness is by heartbeat now. Scripts passing it
	// keep working.
	fl.DurationVar(&rescueAfter, "rescue-after", 0, "")
	_ = fl.MarkDeprecated("rescue-after", "dead workers are detected by heartbeat now; use --dead-after")
	fl.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus metrics (/metrics) and health (/healthz) on HOST:PORT; off unless given")
	fl.DurationVar(&stopTimeout, "stop-timeout", river.DefaultStopTimeout, "on SIGTERM, how long jobs in flight may finish before they return to the queue")
	return cmd
}

// fetchAheadOption turns --fetch-ahead into WorkerOptions.FetchAhead,
// whose zero means "as many as Concurrency" and negative means none.
func fetchAheadOption(n int) (int, error) {
	switch {
	case n == -1:
		return 0, nil
	case n == 0:
		return -1, nil
	case n < 0:
		return 0, invalidf("--fetch-ahead %d: must be -1 (as many as --concurrency), 0 (none) or more", n)
	}
	return n, nil
}

// worker is evalrun worker: it runs until the command's context ends
// (SIGINT/SIGTERM), then stops gracefully.
func (st *State) worker(cmd *cobra.Command, metricsAddr string, opts river.WorkerOptions) error {
	ctx := cmd.Context()
	if opts.Concurrency < 1 {
		return invalidf("--concurrency %d: must be at least 1", opts.Concurrency)
	}
	if opts.HeartbeatInterval <= 0 || opts.DeadAfter < 2*opts.HeartbeatInterval {
		return invalidf("--heartbeat %s, --dead-after %s: the heartbeat must be positive and dead-after at least twice it",
			opts.HeartbeatInterval, opts.DeadAfter)
	}
	var metricsLn net.Listener
	if metricsAddr != "" {
		// Listen before anything starts, so a taken port is refused at once.
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", metricsAddr)
		if err != nil {
			return invalidf("--metrics-addr %s: %v (give a free HOST:PORT, e.g. 127.0.0.1:9464)", metricsAddr, err)
		}
		defer ln.Close()
		metricsLn = ln
	}
	pg, err := st.openPostgres(cmd)
	if err != nil {
		return err
	}
	defer pg.Close()
	opts.Logger = slog.New(slog.NewTextHandler(st.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	reg := prometheus.NewRegistry()
	if metricsLn != nil {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		opts.Metrics = reg
	}
	w, err := river.NewWorker(ctx, pg, &suiteBuilder{st: st, store: pg}, opts)
	if err != nil {
		return err
	}
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(st.Stderr, "worker %s started: concurrency %d, queues %v, storage %s\n", w.ID(), opts.Concurrency, opts.Queues, redactURL(st.dbURL(cmd)))
	if metricsLn != nil {
		srv := metricsServer(reg, w)
		go func() { _ = srv.Serve(metricsLn) }()
		defer srv.Close()
		fmt.Fprintf(st.Stderr, "worker metrics: http://%s/metrics, health: http://%s/healthz\n", metricsLn.Addr(), metricsLn.Addr())
	}
	<-ctx.Done()
	fmt.Fprintf(st.Stderr, "worker stopping: waiting up to %s for the jobs in flight\n", opts.StopTimeout)
	if err := w.Stop(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	fmt.Fprintln(st.Stderr, "worker stopped")
	return nil
}

// metricsServer serves a worker's Prometheus metrics and its health.
func metricsServer(reg *prometheus.Registry, w *river.Worker) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := w.Healthy(); err != nil {
			rw.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(rw, "unhealthy: %v\n", err)
			return
		}
		fmt.Fprintf(rw, "ok: worker %s\n", w.ID())
	})
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}
