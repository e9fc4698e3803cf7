package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/postgres"
	"github.com/evalrun/evalrun/postgres/pgtest"
	"github.com/evalrun/evalrun/river"
	"github.com/evalrun/evalrun/target"
)

// Distributed mode and workers refuse SQLite with a clear message.
func TestDistributedNeedsPostgres(t *testing.T) {
	b := setup(t)
	srv := newServer(t, false)
	suite := b.httpSuite(srv.URL)
	for _, args := range [][]string{{"run", suite, "--distributed"}, {"worker"}} {
		code, _, stderr := b.run(args...)
		if code != ExitUsage || !strings.Contains(stderr, "distributed mode needs PostgreSQL (--db postgres://") {
			t.Errorf("evalrun %s: exit %d, stderr %q; want 2 and the PostgreSQL message", strings.Join(args, " "), code, stderr)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.n != 0 {
		t.Errorf("the target was called %d times", srv.n)
	}
}

// run --distributed with a worker gives the report and exit code of a
// local run of the same suite.
func TestDistributedRunMatchesLocal(t *testing.T) {
	b, suite := setupPostgres(t)

	ctx, stopWorker := context.WithCancel(context.Background())
	workerDone := make(chan int, 1)
	var workerErr string
	go func() {
		code, _, stderr := b.main(ctx, nil, "worker", "--concurrency", "2")
		workerErr = stderr
		workerDone <- code
	}()

	localJSON, distJSON := filepath.Join(b.dir, "local.json"), filepath.Join(b.dir, "dist.json")
	localCode, _, localErr := b.run("run", suite, "-o", localJSON)
	distCode, _, distErr := b.run("run", suite, "--distributed", "-o", distJSON)
	stopWorker()
	if code := <-workerDone; code != ExitOK {
		t.Errorf("worker exit %d after its context ended: %s", code, workerErr)
	}
	if localCode != ExitOK || distCode != localCode {
		t.Fatalf("exit codes: local %d, distributed %d; want both 0\nlocal: %s\ndistributed: %s", localCode, distCode, localErr, distErr)
	}
	if !strings.Contains(distErr, "enqueued") {
		t.Errorf("distributed stderr does not say the run was enqueued: %s", distErr)
	}
	type rep struct {
		Run struct {
			Status                   string
			Total, Succeeded, Failed int
			Skipped                  int
		}
		Scorers map[string]struct {
			Count    int
			PassRate *float64 `json:"pass_rate"`
		}
	}
	read := func(path string) rep {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var r rep
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	l, d := read(localJSON), read(distJSON)
	if d.Run != l.Run || d.Run.Status != "completed" || d.Run.Total != 3 {
		t.Errorf("distributed run %+v, local run %+v", d.Run, l.Run)
	}
	ls, ds := l.Scorers["exact_match"], d.Scorers["exact_match"]
	if ds.Count != ls.Count || ds.PassRate == nil || ls.PassRate == nil || *ds.PassRate != *ls.PassRate {
		t.Errorf("exact_match: distributed %+v, local %+v", ds, ls)
	}
}

// runs cancel on a distributed run nobody waits for deletes its queued
// jobs and finalizes it with exact counts.
func TestRunsCancelDistributedWithoutCoordinator(t *testing.T) {
	pgtest.Require(t)
	b := setup(t)
	b.db = pgtest.NewDatabase(t)
	b.env = []string{"EVALRUN_DB=" + b.db}
	ctx := context.Background()
	pg, err := postgres.Open(ctx, b.db)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	coord, err := river.NewCoordinator(ctx, pg, river.CoordinatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := []*evalrun.Item{{ID: "a", Input: evalrun.String("x")}, {ID: "b", Input: evalrun.String("y")}}
	rec, err := coord.Enqueue(ctx, engine.Spec{Run: &evalrun.Run{Name: "queued"}, Items: items, Target: target.Echo{}})
	if err != nil {
		t.Fatal(err)
	}
	if dist, err := river.IsDistributed(ctx, pg, rec.ID); err != nil || !dist {
		t.Fatalf("IsDistributed = %v, %v", dist, err)
	}
	code, stdout, stderr := b.run("runs", "cancel", rec.ID)
	if code != ExitOK || !strings.Contains(stdout, "canceled: 0 succeeded, 0 failed, 2 skipped of 2") {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	got, err := pg.GetRun(ctx, rec.ID)
	if err != nil || got.Status != evalrun.RunCanceled || got.Skipped != 2 || got.CompletedAt.IsZero() {
		t.Fatalf("run record %+v, %v", got, err)
	}
	var queued int
	if err := pg.Pool().QueryRow(ctx, `SELECT count(*) FROM river_job WHERE args->>'run_id' = $1 AND state IN ('available','pending','scheduled','retryable')`, rec.ID).Scan(&queued); err != nil || queued != 0 {
		t.Fatalf("%d queued jobs left (%v)", queued, err)
	}
	// A local run on the same database is not taken for a distributed one.
	if dist, err := river.IsDistributed(ctx, pg, "no-such-run"); err != nil || dist {
		t.Fatalf("IsDistributed(unknown) = %v, %v", dist, err)
	}
}

// A distributed run cancelled with evalrun runs cancel while its
// coordinator waits says so, as a local run does, not "interrupted": the
// coordinator's cancel is recognised by its type (it was compared with a
// message the coordinator never returns).
func TestDistributedRunCancelledFromElsewhereSaysSo(t *testing.T) {
	b, suite := setupPostgres(t)

	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() { // no worker: the run waits in the queue
		code, _, stderr := b.run("run", suite, "--distributed", "-q")
		done <- result{code, stderr}
	}()
	ctx := context.Background()
	pg, err := postgres.Open(ctx, b.db)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	var runID string
	deadline := time.Now().Add(30 * time.Second)
	for runID == "" {
		if time.Now().After(deadline) {
			t.Fatal("the distributed run was not enqueued within 30 s")
		}
		runs, err := pg.ListRuns(ctx, evalrun.RunFilter{})
		if err == nil && len(runs) == 1 && runs[0].Status == evalrun.RunRunning {
			if dist, _ := river.IsDistributed(ctx, pg, runs[0].ID); dist {
				runID = runs[0].ID
				continue
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, stdout, stderr := b.run("runs", "cancel", runID); code != ExitOK {
		t.Fatalf("runs cancel: exit %d\n%s%s", code, stdout, stderr)
	}
	r := <-done
	if r.code != ExitInterrupted || !strings.Contains(r.stderr, "run "+runID+" canceled (evalrun runs cancel)") {
		t.Fatalf("run --distributed: exit %d, stderr:\n%s\nwant %d and \"canceled (evalrun runs cancel)\"", r.code, r.stderr, ExitInterrupted)
	}
}

// Ctrl-C of a distributed run's coordinator says "interrupted", not that
// the run was cancelled with evalrun runs cancel: the coordinator's
// Ctrl-C cancels the queued jobs too, which made it look like one.
func TestDistributedRunInterruptedSaysSo(t *testing.T) {
	b, suite := setupPostgres(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() { // no worker: the run waits in the queue
		code, _, stderr := b.main(ctx, nil, "run", suite, "--distributed", "-q")
		done <- result{code, stderr}
	}()
	pg, err := postgres.Open(context.Background(), b.db)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	deadline := time.Now().Add(30 * time.Second)
	for enqueued := false; !enqueued; {
		if time.Now().After(deadline) {
			t.Fatal("the distributed run was not enqueued within 30 s")
		}
		runs, err := pg.ListRuns(context.Background(), evalrun.RunFilter{})
		if err == nil && len(runs) == 1 {
			enqueued, _ = river.IsDistributed(context.Background(), pg, runs[0].ID)
		}
		if !enqueued {
			time.Sleep(20 * time.Millisecond)
		}
	}
	cancel(ErrInterrupted) // what cmd/evalrun does on SIGINT
	r := <-done
	if r.code != ExitInterrupted || !strings.Contains(r.stderr, " interrupted: ") || strings.Contains(r.stderr, "runs cancel") {
		t.Fatalf("exit %d, stderr:\n%s\nwant %d, \"interrupted\"", r.code, r.stderr, ExitInterrupted)
	}
}

// lockedBuffer is a bytes.Buffer a running command writes while a test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// evalrun worker --metrics-addr serves Prometheus metrics: after a
// distributed run, a scrape shows the items it did, none in flight, the
// queue drained and a recent heartbeat; /healthz says ok.
func TestWorkerServesMetrics(t *testing.T) {
	b, suite := setupPostgres(t)

	ctx, stopWorker := context.WithCancel(context.Background())
	stderr := &lockedBuffer{}
	workerDone := make(chan int, 1)
	go func() {
		code := 0
		code, _, _ = b.main(ctx, func(st *State) { st.Stderr = stderr }, "worker", "--concurrency", "2", "--metrics-addr", "127.0.0.1:0")
		workerDone <- code
	}()
	defer func() {
		stopWorker()
		if code := <-workerDone; code != ExitOK {
			t.Errorf("worker exit %d: %s", code, stderr)
		}
	}()
	addrRe := regexp.MustCompile(`worker metrics: http://([0-9.:]+)/metrics`)
	var addr string
	deadline := time.Now().Add(30 * time.Second)
	for addr == "" {
		if m := addrRe.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("the worker did not announce its metrics address: %s", stderr)
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if code, _, errs := b.run("run", suite, "--distributed", "-q"); code != ExitOK {
		t.Fatalf("run --distributed: exit %d: %s", code, errs)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	wants := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^evalrun_worker_items_total\{outcome="succeeded",worker="[^"]+"\} 3$`),
		regexp.MustCompile(`(?m)^evalrun_worker_items_total\{outcome="failed",worker="[^"]+"\} 0$`),
		regexp.MustCompile(`(?m)^evalrun_worker_items_in_flight\{worker="[^"]+"\} 0$`),
		regexp.MustCompile(`(?m)^evalrun_queue_jobs\{queue="evalrun",state="available"\} 0$`),
		regexp.MustCompile(`(?m)^evalrun_queue_jobs\{queue="evalrun",state="running"\} 0$`),
		regexp.MustCompile(`(?m)^evalrun_worker_last_heartbeat_timestamp_seconds\{worker="[^"]+"\} [0-9.e+]+$`),
		regexp.MustCompile(`(?m)^go_goroutines `),
	}
	// The worker counts an item just after storing its result, and River
	// records a job completed just after that: scrape until both show.
	deadline = time.Now().Add(30 * time.Second)
	for {
		code, metrics := get("/metrics")
		if code != http.StatusOK {
			t.Fatalf("/metrics: %d %s", code, metrics)
		}
		var missing []string
		for _, want := range wants {
			if !want.MatchString(metrics) {
				missing = append(missing, want.String())
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics has no line matching %s:\n%s", strings.Join(missing, ", "), metrics)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := get("/healthz"); code != http.StatusOK || !strings.HasPrefix(body, "ok: worker ") {
		t.Errorf("/healthz: %d %q", code, body)
	}
}

// setupPostgres is setup on a fresh PostgreSQL database, with the http
// suite of a test server; it skips without TEST_DATABASE_URL.
func setupPostgres(t *testing.T) (*bundle, string) {
	pgtest.Require(t)
	b := setup(t)
	b.db = pgtest.NewDatabase(t)
	b.env = []string{"EVALRUN_DB=" + b.db}
	return b, b.httpSuite(newServer(t, false).URL)
}

// A suite with a literal secret cannot be run by workers (the secret is
// not stored with the run, and workers rebuild the run from what is
// stored): run --distributed refuses it before enqueueing anything.
// Before, the run was enqueued, every worker failed to build it, its jobs
// were retried for minutes and the coordinator waited without a word.
func TestDistributedRefusesLiteralSecret(t *testing.T) {
	b, _ := setupPostgres(t)
	b.write("d.jsonl", data3)
	suite := b.write("lit.yaml", `name: lit
dataset: {name: d, file: d.jsonl}
target:
  kind: http
  url: http://127.0.0.1:1/x
  output: out
  headers: {X-Api-Key: "literal-key-123456"}
scorers: [exact_match]
`)
	code, _, stderr := b.run("run", suite, "--distributed", "--dry-run")
	if code != ExitUsage || !strings.Contains(stderr, "target.headers.X-Api-Key") {
		t.Errorf("--dry-run: exit %d, stderr:\n%s\nwant exit 2 naming target.headers.X-Api-Key", code, stderr)
	}
	code, _, stderr = b.run("run", suite, "--distributed")
	if code != ExitUsage || !strings.Contains(stderr, "lit.yaml:7:") || !strings.Contains(stderr, "target.headers.X-Api-Key") ||
		!strings.Contains(stderr, "${VAR}") || strings.Contains(stderr, "literal-key-123456") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2 naming lit.yaml:7 target.headers.X-Api-Key and ${VAR}, without the secret", code, stderr)
	}
	_, stdout, _ := b.run("runs", "list")
	if strings.Contains(stdout, "lit") {
		t.Errorf("a run was stored:\n%s", stdout)
	}
}
