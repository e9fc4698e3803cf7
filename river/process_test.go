package river

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/postgres"
)

// The test binary becomes a worker process when envWorker names it; the
// other variables configure it.
const (
	envWorker      = "EVALRUN_RIVER_TEST_WORKER"
	envWorkerDB    = "EVALRUN_RIVER_TEST_DB"
	envConcurrency = "EVALRUN_RIVER_TEST_CONCURRENCY"
	envHeartbeat   = "EVALRUN_RIVER_TEST_HEARTBEAT"
	envDeadAfter   = "EVALRUN_RIVER_TEST_DEAD_AFTER"
	envCooldown    = "EVALRUN_RIVER_TEST_FETCH_COOLDOWN"
	envPoll        = "EVALRUN_RIVER_TEST_FETCH_POLL"
	envAhead       = "EVALRUN_RIVER_TEST_FETCH_AHEAD"
	// envCPUProfile names a file the worker writes its CPU profile to
	// until it stops (benchmarks).
	envCPUProfile = "EVALRUN_RIVER_TEST_CPUPROFILE"
	// envHoldBatch makes the worker stop in its first write of several
	// results, "before" or "after" the store call, print "held" and the
	// item indexes of the batch, and hang there until killed.
	envHoldBatch = "EVALRUN_RIVER_TEST_HOLD_BATCH"
)

// workerProcessMain runs a worker until SIGTERM, then stops it gracefully.
// It prints "ready" once the worker has started.
func workerProcessMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if path := os.Getenv(envCPUProfile); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	store, err := postgres.Open(ctx, os.Getenv(envWorkerDB))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer store.Close()
	concurrency, _ := strconv.Atoi(os.Getenv(envConcurrency))
	// Unset liveness variables leave the defaults.
	heartbeat, _ := time.ParseDuration(os.Getenv(envHeartbeat))
	deadAfter, _ := time.ParseDuration(os.Getenv(envDeadAfter))
	cooldown, _ := time.ParseDuration(os.Getenv(envCooldown))
	poll, _ := time.ParseDuration(os.Getenv(envPoll))
	ahead, _ := strconv.Atoi(os.Getenv(envAhead))
	writes := &countingWriter{next: store}
	var results resultWriter = writes
	var queued func(int)
	if mode := os.Getenv(envHoldBatch); mode != "" {
		h := &holdingWriter{next: writes, after: mode == "after", full: make(chan struct{}), want: max(concurrency, 2) - 1}
		results, queued = h, h.queued
	}
	w, err := NewWorker(ctx, store, &testBuilder{store: store}, WorkerOptions{
		ID:                os.Getenv(envWorker),
		Concurrency:       concurrency,
		HeartbeatInterval: heartbeat,
		DeadAfter:         deadAfter,
		FetchCooldown:     cooldown,
		FetchPollInterval: poll,
		FetchAhead:        ahead,
		StopTimeout:       10 * time.Second,
		testOnly:          true,
		results:           results,
		resultsQueued:     queued,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := w.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	<-ctx.Done()
	if err := w.Stop(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "result writes: %d store calls for %d results\n", writes.calls.Load(), writes.results.Load())
	return 0
}

// countingWriter counts the store calls writing results and the results.
type countingWriter struct {
	next           resultWriter
	calls, results atomic.Int64
}

func (c *countingWriter) WriteResults(ctx context.Context, results []*evalrun.ItemResult) error {
	c.calls.Add(1)
	c.results.Add(int64(len(results)))
	return c.next.WriteResults(ctx, results)
}

// holdingWriter holds the worker in its first write of several results,
// so that a test kills it there (see envHoldBatch). It makes that batch
// big: the first write waits until the results of all the other slots
// wait behind it, and the next write carries them.
type holdingWriter struct {
	next  resultWriter
	after bool // hold after the store call returned, else before it
	want  int  // results waiting that open the first write
	full  chan struct{}

	fullOnce sync.Once
	first    atomic.Bool
}

// queued is the batcher's hook: n results wait for a write.
func (h *holdingWriter) queued(n int) {
	if n >= h.want {
		h.fullOnce.Do(func() { close(h.full) })
	}
}

func (h *holdingWriter) WriteResults(ctx context.Context, results []*evalrun.ItemResult) error {
	if !h.first.Swap(true) {
		<-h.full
		return h.next.WriteResults(ctx, results)
	}
	if len(results) < 2 {
		return h.next.WriteResults(ctx, results)
	}
	if h.after {
		if err := h.next.WriteResults(ctx, results); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	idx := make([]string, len(results))
	for i, r := range results {
		idx[i] = strconv.Itoa(r.Index)
	}
	fmt.Println("held " + strings.Join(idx, ","))
	select {} // until killed
}

// workerProcess is a worker running in a child process.
type workerProcess struct {
	id     string
	cmd    *exec.Cmd
	stderr *syncBuffer
	// lines receives what the process prints after "ready".
	lines chan string
	done  chan struct{} // closed once the process exited
	err   error         // the exit error, once done
}

// wait waits for the process to exit and returns its exit error.
func (p *workerProcess) wait() error {
	<-p.done
	return p.err
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWorkerProcess re-executes the test binary as a worker and waits
// until it is ready. Cleanup kills it if it still runs. env may set the
// liveness variables; by default the worker has the default settings.
func startWorkerProcess(t testing.TB, dbURL, id string, concurrency int, env ...string) *workerProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), envWorker+"="+id, envWorkerDB+"="+dbURL,
		envConcurrency+"="+strconv.Itoa(concurrency))
	cmd.Env = append(cmd.Env, env...)
	p := &workerProcess{id: id, cmd: cmd, stderr: &syncBuffer{}, lines: make(chan string, 16), done: make(chan struct{})}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			switch {
			case sc.Text() == "ready" && !ok:
				ok = true
				ready <- true
			case ok:
				select {
				case p.lines <- sc.Text():
				default: // nobody listens
				}
			}
		}
		if !ok {
			ready <- false
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("worker %s exited before it was ready: %s", id, p.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("worker %s not ready after 60s: %s", id, p.stderr)
	}
	return p
}

// Three worker processes with the DEFAULT liveness settings run a
// 1,000-item run; the leader among them is killed with SIGKILL mid-run
// with jobs in flight. The survivors see its heartbeat go stale and run its
// jobs again: the run completes within the bound PRODUCT.md promises
// (item_timeout + 60 s after the kill; here the items take 50 ms), with
// exactly 1,000 results and exact counts. Before heartbeats, the orphaned
// jobs waited for River's rescuer (15 min by default).
func TestThreeWorkerProcessesSurviveSIGKILL(t *testing.T) {
	b := setup(t, 50*time.Millisecond)
	const n = 1000
	items := b.importItems(t, "big", inputs("q", n))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	procs := map[string]*workerProcess{}
	for i := range 3 {
		id := fmt.Sprintf("worker-%d", i)
		procs[id] = startWorkerProcess(t, b.url, id, 10)
	}
	var leader string
	waitFor(t, 30*time.Second, "a River leader", func() (bool, error) {
		err := b.store.Pool().QueryRow(ctx, `SELECT leader_id FROM river_leader`).Scan(&leader)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		return err == nil, err
	})
	victim := procs[leader]
	if victim == nil {
		t.Fatalf("leader %q is not one of the workers", leader)
	}

	run := b.enqueue(t, "big", items, runConfig{})
	type waited struct {
		s   *evalrun.Summary
		err error
	}
	waitc := make(chan waited, 1)
	var progressCalls int
	go func() {
		s, err := b.coord.Wait(ctx, run.ID, WaitOptions{Progress: func(evalrun.Progress) { progressCalls++ }})
		waitc <- waited{s, err}
	}()

	// Kill the leader once 300 results are in and it is running jobs.
	runningOf := func(id string) ([]int64, error) {
		rows, err := b.store.Pool().Query(ctx, `SELECT id FROM river_job WHERE state = 'running'
			AND args->>'run_id' = $1 AND attempted_by[array_length(attempted_by, 1)] = $2`, run.ID, id)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[int64])
	}
	waitFor(t, 60*time.Second, "300 results", b.resultsAtLeast(run.ID, 300))
	waitFor(t, 30*time.Second, "jobs in flight on the leader", func() (bool, error) {
		ids, err := runningOf(victim.id)
		return len(ids) > 0, err
	})
	killedAt := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := victim.wait(); err == nil {
		t.Fatal("the killed worker exited cleanly")
	}
	orphans, err := runningOf(victim.id)
	if err != nil {
		t.Fatal(err)
	}
	if len(orphans) == 0 {
		t.Fatal("the killed worker left no job running: it was not killed mid-item")
	}
	// A job whose result the victim had committed, but whose completion
	// River had not yet recorded, is orphaned too; it needs no second run
	// (the run may even complete before it is rescued). The jobs that do
	// are those without a result now: the victim is dead and writes nothing
	// more.
	var unfinished []int64
	orphanRows, err := b.store.Pool().Query(ctx, `SELECT j.id FROM river_job j WHERE j.id = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM results r WHERE r.run_id = j.args->>'run_id'
			AND r.idx = (j.args->>'index')::int AND r.rep = COALESCE((j.args->>'repeat')::int, 0))`, orphans)
	if err != nil {
		t.Fatal(err)
	}
	if unfinished, err = pgx.CollectRows(orphanRows, pgx.RowTo[int64]); err != nil {
		t.Fatal(err)
	}
	doneAtKill, _, _ := b.store.CountResults(ctx, run.ID)
	t.Logf("killed %s with %d jobs in flight (%d without a result), %d results stored", victim.id, len(orphans), len(unfinished), doneAtKill)

	// The bound: item_timeout (the engine's default: these items answer
	// in 50 ms, so their time is what they take) + 60 s.
	const bound = time.Minute + time.Second
	var w waited
	select {
	case w = <-waitc:
	case <-time.After(bound + 30*time.Second):
		t.Fatalf("the run did not complete within %s of the kill", bound)
	}
	if w.err != nil {
		t.Fatal(w.err)
	}
	recovered := time.Since(killedAt)
	t.Logf("run completed %s after the kill", recovered.Round(time.Millisecond))
	if recovered > bound {
		t.Errorf("the run completed %s after the kill, want within %s", recovered, bound)
	}
	s := w.s
	if s.Status != evalrun.RunCompleted || s.Total != n || s.Succeeded != n || s.Failed != 0 || s.Skipped != 0 || s.ScorerErrors != 0 {
		t.Fatalf("summary = %+v, want %d succeeded", s, n)
	}
	if progressCalls < 2 {
		t.Errorf("progress reported %d times, want several", progressCalls)
	}
	// Exactly one result per item.
	seen := make([]int, n)
	if err := b.store.ScanResultKeys(ctx, run.ID, func(k evalrun.ResultKey) error {
		if k.Index < 0 || k.Index >= n || k.Repeat != 0 {
			return fmt.Errorf("unexpected result key %+v", k)
		}
		seen[k.Index]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, c := range seen {
		if c != 1 {
			t.Errorf("item %d has %d results", i, c)
		}
	}
	var rows, distinct int
	if err := b.store.Pool().QueryRow(ctx, `SELECT COUNT(*), COUNT(DISTINCT (idx, rep)) FROM results WHERE run_id = $1`, run.ID).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != n || distinct != n {
		t.Errorf("results table: %d rows, %d distinct keys; want %d", rows, distinct, n)
	}
	stored, err := b.store.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != evalrun.RunCompleted || stored.Succeeded != n || stored.Failed != 0 || stored.Skipped != 0 {
		t.Errorf("stored run = %+v, want completed with %d succeeded", stored, n)
	}
	// The orphaned jobs without a result were rescued and finished
	// elsewhere; only orphans may have called the target twice.
	var rescued int
	if err := b.store.Pool().QueryRow(ctx, `SELECT COUNT(*) FROM river_job WHERE id = ANY($1) AND attempt >= 2
		AND attempted_by[array_length(attempted_by, 1)] <> $2`, unfinished, victim.id).Scan(&rescued); err != nil {
		t.Fatal(err)
	}
	if rescued != len(unfinished) {
		t.Errorf("%d of the %d orphaned jobs without a result were finished by another worker", rescued, len(unfinished))
	}
	twice := 0
	for i := range n {
		if c := b.target.callsOf(fmt.Sprintf("q-%d", i)); c == 0 {
			t.Errorf("item q-%d was never executed", i)
		} else if c > 1 {
			twice++
		}
	}
	if twice > len(orphans) {
		t.Errorf("%d items were executed more than once, but only %d jobs were orphaned", twice, len(orphans))
	}

	// The survivors stop gracefully on SIGTERM.
	for id, p := range procs {
		if p == victim {
			continue
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.wait(); err != nil {
			t.Errorf("worker %s after SIGTERM: %v\n%s", id, err, p.stderr)
		}
	}
}

// A worker process is SIGKILLed in the middle of a batch of results: while
// its store call is under way ("before": nothing of the batch is stored)
// or once it has returned but before River recorded the jobs completed
// ("after": the batch is stored, the jobs still running). Another worker
// takes the jobs back when the heartbeat of the dead one goes stale.
// Either way every item ends with exactly one result: a batch written
// before the kill is not executed again (its retried jobs find their
// results), one that was not is executed again.
func TestWorkerKilledMidBatchLosesAndDuplicatesNothing(t *testing.T) {
	for _, tc := range []struct {
		hold string
		// calls is how often the target saw each item of the held batch.
		calls int
	}{
		{hold: "before", calls: 2},
		{hold: "after", calls: 1},
	} {
		t.Run(tc.hold, func(t *testing.T) {
			b := setup(t, 0)
			const n = 60
			items := b.importItems(t, "held", inputs("q", n))
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			liveness := []string{envHeartbeat + "=200ms", envDeadAfter + "=1s"}
			victim := startWorkerProcess(t, b.url, "victim", 10, append(liveness, envHoldBatch+"="+tc.hold)...)
			run := b.enqueue(t, "held", items, runConfig{})

			var line string
			select {
			case line = <-victim.lines:
			case <-ctx.Done():
				t.Fatalf("the worker never held a batch: %s", victim.stderr)
			}
			held, ok := strings.CutPrefix(line, "held ")
			if !ok {
				t.Fatalf("worker printed %q, want the held batch", line)
			}
			batch := strings.Split(held, ",")
			if len(batch) < 2 {
				t.Fatalf("held batch %v: want several results", batch)
			}
			if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if err := victim.wait(); err == nil {
				t.Fatal("the killed worker exited cleanly")
			}
			stored := 0
			for _, i := range batch {
				idx, _ := strconv.Atoi(i)
				var ok bool
				if err := b.store.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM results WHERE run_id = $1 AND idx = $2)`,
					run.ID, idx).Scan(&ok); err != nil {
					t.Fatal(err)
				}
				if ok {
					stored++
				}
			}
			if want := map[string]int{"before": 0, "after": len(batch)}[tc.hold]; stored != want {
				t.Fatalf("%d of the %d held results are stored at the kill, want %d", stored, len(batch), want)
			}
			var running int
			if err := b.store.Pool().QueryRow(ctx, `SELECT COUNT(*) FROM river_job WHERE args->>'run_id' = $1 AND state = 'running'`,
				run.ID).Scan(&running); err != nil {
				t.Fatal(err)
			}
			if running < len(batch) {
				t.Fatalf("%d jobs running at the kill, want at least the %d of the held batch", running, len(batch))
			}

			startWorkerProcess(t, b.url, "rescuer", 10, liveness...)
			s, err := b.coord.Wait(ctx, run.ID, WaitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != evalrun.RunCompleted || s.Succeeded != n || s.Failed != 0 || s.Skipped != 0 {
				t.Fatalf("summary = %+v, want %d succeeded", s, n)
			}
			var rows, distinct int
			if err := b.store.Pool().QueryRow(ctx, `SELECT COUNT(*), COUNT(DISTINCT (idx, rep)) FROM results WHERE run_id = $1`,
				run.ID).Scan(&rows, &distinct); err != nil {
				t.Fatal(err)
			}
			if rows != n || distinct != n {
				t.Errorf("results table: %d rows, %d distinct keys; want %d", rows, distinct, n)
			}
			var scores int
			if err := b.store.Pool().QueryRow(ctx, `SELECT COUNT(*) FROM scores WHERE run_id = $1`, run.ID).Scan(&scores); err != nil {
				t.Fatal(err)
			}
			if scores != n {
				t.Errorf("%d score rows, want one per item (%d)", scores, n)
			}
			for _, i := range batch {
				if got := b.target.callsOf("q-" + i); got != tc.calls {
					t.Errorf("item q-%s of the held batch was executed %d times, want %d", i, got, tc.calls)
				}
			}
		})
	}
}
