package river

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// Benchmarks of distributed mode, run against the local PostgreSQL with
// worker processes (re-executed test binaries) on loopback; see
// docs/benchmarks.md ("Distributed", "Scale: distributed"). Run them with
// -benchtime=1x and -count=3 and take medians. Environment knobs:
//
//	BENCH_ITEMS        items of BenchmarkQueueOverhead (default 10000)
//	BENCH_SCALE_ITEMS  items per worker of BenchmarkDistributed (default 1000)
//	BENCH_LATENCY      the target's latency in BenchmarkDistributed (default 50ms)
//	BENCH_CONCURRENCY  slots per worker (default 10)
//	BENCH_COOLDOWN     the workers' fetch cooldown (default: the worker's)
//	BENCH_POLL         the workers' fetch poll interval (default: the worker's)
//	BENCH_AHEAD        the workers' FetchAhead (default: the worker's)
//	BENCH_POOL         the workers' pool_max_conns (default: pgx's, max(4, CPUs))
//	BENCH_WAIT_POLL    the coordinator's poll interval (default: 20ms, the tests')
//	BENCH_CPUPROFILE   a file the (last) worker writes its CPU profile to

// BenchmarkDistributed measures runs executed by 1, 2 and 4 worker
// processes (concurrency 10 each) against a target answering after 50 ms
// (BENCH_LATENCY): items/s (linear scaling would be 200 items/s per worker
// at 50 ms), and the CPU
// each item cost the workers, the coordinator with the fake target (this
// process) and PostgreSQL. Each iteration enqueues and waits for a run of
// BENCH_SCALE_ITEMS items per worker.
func BenchmarkDistributed(b *testing.B) {
	perWorker := envInt(b, "BENCH_SCALE_ITEMS", 1000)
	latency := 50 * time.Millisecond
	if s := os.Getenv("BENCH_LATENCY"); s != "" {
		var err error
		if latency, err = time.ParseDuration(s); err != nil {
			b.Fatalf("BENCH_LATENCY: %v", err)
		}
	}
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("latency=%s/workers=%d", latency, workers), func(b *testing.B) {
			benchRun(b, workers, latency, perWorker*workers)
		})
	}
}

// BenchmarkQueueOverhead measures the queue's own cost per item: one
// worker process against a target answering at once, so the wall time per
// item is enqueue, fetch, status check, pipeline, result write and
// completion, amortized over BENCH_ITEMS items.
func BenchmarkQueueOverhead(b *testing.B) {
	b.Run("latency=0/workers=1", func(b *testing.B) {
		benchRun(b, 1, 0, envInt(b, "BENCH_ITEMS", 10000))
	})
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

func benchRun(b *testing.B, workers int, latency time.Duration, n int) {
	bb := setup(b, latency)
	items := bb.importItems(b, "bench", inputs("q", n))
	var env []string
	if c := os.Getenv("BENCH_COOLDOWN"); c != "" {
		env = append(env, envCooldown+"="+c)
	}
	if p := os.Getenv("BENCH_POLL"); p != "" {
		env = append(env, envPoll+"="+p)
	}
	if a := os.Getenv("BENCH_AHEAD"); a != "" {
		env = append(env, envAhead+"="+a)
	}
	if p := os.Getenv("BENCH_CPUPROFILE"); p != "" {
		env = append(env, envCPUProfile+"="+p)
	}
	concurrency := envInt(b, "BENCH_CONCURRENCY", 10)
	workerURL := bb.url
	if p := os.Getenv("BENCH_POOL"); p != "" {
		u, err := url.Parse(workerURL)
		if err != nil {
			b.Fatal(err)
		}
		q := u.Query()
		q.Set("pool_max_conns", p)
		u.RawQuery = q.Encode()
		workerURL = u.String()
	}
	var pids []int
	var procs []*workerProcess
	for i := range workers {
		p := startWorkerProcess(b, workerURL, fmt.Sprintf("bench-%d", i), concurrency, env...)
		pids = append(pids, p.cmd.Process.Pid)
		procs = append(procs, p)
	}
	ctx := context.Background()
	if p := os.Getenv("BENCH_WAIT_POLL"); p != "" {
		d, err := time.ParseDuration(p)
		if err != nil {
			b.Fatalf("BENCH_WAIT_POLL: %v", err)
		}
		if bb.coord, err = NewCoordinator(ctx, bb.store, CoordinatorOptions{PollInterval: d}); err != nil {
			b.Fatal(err)
		}
	}
	// PostgreSQL's CPU is that of the backends serving this test's database
	// (workers' and coordinator's pools), not the server's other clients.
	backends := func() []int {
		rows, err := bb.store.Pool().Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		var out []int
		for rows.Next() {
			var pid int
			if err := rows.Scan(&pid); err != nil {
				b.Fatal(err)
			}
			out = append(out, pid)
		}
		return out
	}
	b.ResetTimer()
	var elapsed, workerCPU, selfCPU, pgCPU time.Duration
	for range b.N {
		start := time.Now()
		w0, s0 := cpuOf(pids), selfCPUTime()
		// Backends are pooled: those alive at the end include those alive
		// at the start; one that started meanwhile counts from 0.
		pg0 := map[int]time.Duration{}
		for _, pid := range backends() {
			pg0[pid] = cpuOf([]int{pid})
		}
		run := bb.enqueue(b, "bench", items, runConfig{})
		enqueued := time.Since(start)
		s, err := bb.coord.Wait(ctx, run.ID, WaitOptions{})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		elapsed += took
		logPhases(b, bb, run.ID, start, enqueued, took)
		workerCPU += cpuOf(pids) - w0
		selfCPU += selfCPUTime() - s0
		for _, pid := range backends() {
			pgCPU += cpuOf([]int{pid}) - pg0[pid]
		}
		if s.Status != evalrun.RunCompleted || s.Succeeded != n {
			b.Fatalf("summary = %+v", s)
		}
	}
	b.StopTimer()
	// Stopped gracefully, a worker writes its CPU profile.
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		if err := p.wait(); err != nil {
			b.Errorf("worker %s: %v\n%s", p.id, err, p.stderr)
		}
		b.Logf("worker %s: %s", p.id, p.stderr)
	}
	total := float64(b.N * n)
	b.ReportMetric(total/elapsed.Seconds(), "items/s")
	b.ReportMetric(float64(elapsed.Microseconds())/total, "µs/item")
	b.ReportMetric(float64(workerCPU.Microseconds())/total, "worker-cpu-µs/item")
	b.ReportMetric(float64(selfCPU.Microseconds())/total, "coord+target-cpu-µs/item")
	b.ReportMetric(float64(pgCPU.Microseconds())/total, "pg-cpu-µs/item")
	b.ReportMetric(0, "ns/op")
}

// logPhases logs where a run's wall time went: the enqueue, the first
// job's fetch, the first and last item processed (the results' own timestamps) and the end of Wait,
// each since the run began.
func logPhases(b *testing.B, bb *bundle, runID string, start time.Time, enqueued, took time.Duration) {
	var fetched, first, last time.Time
	if err := bb.store.Pool().QueryRow(context.Background(),
		`SELECT (SELECT min(attempted_at) FROM river_job WHERE kind = $2 AND args->>'run_id' = $1),
			min(started_at), max(completed_at) FROM results WHERE run_id = $1`, runID, Kind).Scan(&fetched, &first, &last); err != nil {
		b.Fatal(err)
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	b.Logf("phases: enqueued %s, first job fetched %s, first item started %s, last item done %s, wait returned %s",
		ms(enqueued), ms(fetched.Sub(start)), ms(first.Sub(start)), ms(last.Sub(start)), ms(took))
}

// cpuOf sums the user and system CPU time of processes (Linux /proc; 0
// where unreadable).
func cpuOf(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces): state is
		// field 3, utime 14, stime 15.
		s := string(raw)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(fields[11], 10, 64)
		st, _ := strconv.ParseInt(fields[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
}

func selfCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
