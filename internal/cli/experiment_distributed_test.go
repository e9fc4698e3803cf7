package cli

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/postgres"
	"github.com/evalrun/evalrun/postgres/pgtest"
	"github.com/evalrun/evalrun/river"
)

// setupPostgresExperiment is a bundle on a fresh PostgreSQL database and
// a suite of three variants (good, wrong, broken unless names are given)
// over data3 against a variantServer.
func setupPostgresExperiment(t *testing.T, names ...string) (*bundle, *variantServer, string) {
	t.Helper()
	pgtest.Require(t)
	b := setup(t)
	b.db = pgtest.NewDatabase(t)
	b.env = []string{"EVALRUN_DB=" + b.db}
	srv := newVariantServer(t)
	if len(names) == 0 {
		names = []string{"good", "wrong", "broken"}
	}
	return b, srv, b.variantSuite(srv.URL, 0, names, "execution: {concurrency: 2}\n")
}

// startWorker runs evalrun worker in-process until the test ends.
func (b *bundle) startWorker(t *testing.T) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	var code int
	var stderr string
	go func() {
		defer close(done)
		code, _, stderr = b.main(ctx, nil, "worker", "--concurrency", "3")
	}()
	t.Cleanup(func() {
		stop()
		<-done
		if code != ExitOK {
			t.Errorf("worker exit %d after its context ended: %s", code, stderr)
		}
	})
}

// openPG opens the bundle's database for the test to look at.
func (b *bundle) openPG(t *testing.T) *postgres.Store {
	t.Helper()
	pg, err := postgres.Open(context.Background(), b.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	return pg
}

// run --distributed of a suite with variants: one run per variant on
// workers, each variant's items executed once, and the same experiment
// report (counts, pass rates, comparisons with the baseline) and exit code
// as the same experiment run locally.
func TestDistributedExperimentMatchesLocal(t *testing.T) {
	b, srv, suite := setupPostgresExperiment(t)
	b.startWorker(t)

	localJSON, distJSON := filepath.Join(b.dir, "local.json"), filepath.Join(b.dir, "dist.json")
	localCode, _, localErr := b.run("run", suite, "-q", "-o", localJSON)
	_, before := srv.counts()
	distCode, distOut, distErr := b.run("run", suite, "--distributed", "-q", "-o", distJSON, "-o", filepath.Join(b.dir, "dist.md"))
	if localCode != 1 || distCode != localCode {
		t.Fatalf("exit codes: local %d, distributed %d; want both 1 (variant broken fails every item)\nlocal:\n%s\ndistributed:\n%s",
			localCode, distCode, localErr, distErr)
	}
	expID, runs := experimentIDs(t, distErr)
	if !strings.Contains(distErr, "experiment "+expID+" enqueued: 3 runs, distributed") ||
		!strings.Contains(distErr, "variant broken (run "+runs["broken"]+"): 3 of 3 items failed (target errors)") {
		t.Errorf("distributed stderr:\n%s", distErr)
	}
	if !strings.Contains(distOut, "good (baseline)") {
		t.Errorf("no matrix on stdout:\n%s", distOut)
	}
	// Each variant's items ran once on the workers.
	_, after := srv.counts()
	for _, v := range []string{"good", "wrong"} {
		for _, id := range []string{"a", "b", "c"} {
			if n := after[v+"/"+id] - before[v+"/"+id]; n != 1 {
				t.Errorf("variant %s item %s answered %d times by the distributed run, want 1", v, id, n)
			}
		}
	}

	l, _ := readExpReport(t, localJSON)
	d, _ := readExpReport(t, distJSON)
	if d.Experiment.ID != expID || d.Experiment.Baseline != "good" || len(d.Variants) != 3 || len(l.Variants) != 3 {
		t.Fatalf("distributed experiment %+v with %d variants (local %d)", d.Experiment, len(d.Variants), len(l.Variants))
	}
	for i := range d.Variants {
		lv, dv := l.Variants[i], d.Variants[i]
		wantStatus := map[string]string{"good": "completed", "wrong": "completed", "broken": "failed"}[dv.Name]
		if dv.Name != lv.Name || dv.RunID != runs[dv.Name] || dv.Status != wantStatus || dv.Status != lv.Status ||
			dv.Total != lv.Total || dv.Succeeded != lv.Succeeded || dv.Failed != lv.Failed {
			t.Errorf("variant %d: distributed %+v, local %+v", i, dv, lv)
		}
		lp, dp := lv.Scorers["exact_match"].PassRate, dv.Scorers["exact_match"].PassRate
		if (lp == nil) != (dp == nil) || (lp != nil && *lp != *dp) {
			t.Errorf("variant %s pass rate: distributed %v, local %v", dv.Name, deref(dp), deref(lp))
		}
		if string(dv.VsBaseline["exact_match"]) != string(lv.VsBaseline["exact_match"]) {
			t.Errorf("variant %s vs_baseline: distributed %s, local %s", dv.Name, dv.VsBaseline["exact_match"], lv.VsBaseline["exact_match"])
		}
	}
	if len(d.Items) != 3 || len(l.Items) != 3 {
		t.Fatalf("items: distributed %d, local %d, want 3", len(d.Items), len(l.Items))
	}
	for i, it := range d.Items {
		for name, dv := range it.Variants {
			lv := l.Items[i].Variants[name]
			if it.ID != l.Items[i].ID || string(dv.Output) != string(lv.Output) || (dv.Error == "") != (lv.Error == "") {
				t.Errorf("item %s variant %s: distributed %s %q, local %s %q", it.ID, name, dv.Output, dv.Error, lv.Output, lv.Error)
			}
		}
	}

	// Every variant's run was distributed, and carries the experiment.
	pg := b.openPG(t)
	exp, err := evalrun.GetExperiment(context.Background(), pg, expID)
	if err != nil || len(exp.Runs) != 3 {
		t.Fatalf("GetExperiment: %+v, %v", exp, err)
	}
	for _, r := range exp.Runs {
		if dist, err := river.IsDistributed(context.Background(), pg, r.ID); err != nil || !dist || r.ID != runs[r.Variant] {
			t.Errorf("run %s (variant %s): distributed %v (%v)", r.ID, r.Variant, dist, err)
		}
	}
}

// Ctrl-C of a distributed experiment's coordinator cancels every
// variant's run (their queued jobs deleted), writes the partial report
// and exits 130 with the command to resume.
func TestDistributedExperimentInterrupted(t *testing.T) {
	b, _, suite := setupPostgresExperiment(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	enqueued := make(chan string, 1)
	afterEnqueue = func(id string) error { enqueued <- id; return nil }
	t.Cleanup(func() { afterEnqueue = nil })
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	out := filepath.Join(b.dir, "partial.json")
	go func() { // no worker: the runs wait in the queue
		code, _, stderr := b.main(ctx, nil, "run", suite, "--distributed", "-q", "-o", out)
		done <- result{code, stderr}
	}()
	var expID string
	select {
	case expID = <-enqueued:
	case r := <-done:
		t.Fatalf("ended before enqueueing: exit %d\n%s", r.code, r.stderr)
	}
	cancel(ErrInterrupted) // what cmd/evalrun does on SIGINT
	r := <-done
	if r.code != ExitInterrupted || !strings.Contains(r.stderr, "resume with: evalrun run --resume "+expID) ||
		strings.Contains(r.stderr, "runs cancel") {
		t.Fatalf("exit %d, stderr:\n%s\nwant %d and the resume command", r.code, r.stderr, ExitInterrupted)
	}
	rep, _ := readExpReport(t, out)
	if len(rep.Variants) != 3 {
		t.Errorf("partial report with %d variants, want 3", len(rep.Variants))
	}
	pg := b.openPG(t)
	exp, err := evalrun.GetExperiment(context.Background(), pg, expID)
	if err != nil || len(exp.Runs) != 3 {
		t.Fatalf("GetExperiment: %+v, %v", exp, err)
	}
	for _, run := range exp.Runs {
		if run.Status != evalrun.RunCanceled || run.Skipped != 3 {
			t.Errorf("variant %s: status %s, skipped %d; want canceled, 3", run.Variant, run.Status, run.Skipped)
		}
	}
	var queued int
	if err := pg.Pool().QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE state IN ('available','pending','scheduled','retryable')`).Scan(&queued); err != nil || queued != 0 {
		t.Errorf("%d queued jobs left (%v)", queued, err)
	}
}

// A coordinator that dies after enqueueing leaves the experiment to the
// workers; evalrun run --resume EXP_ID --distributed re-attaches to every
// variant's run, waits for all of them and reports the whole experiment;
// each item runs once per variant.
func TestDistributedExperimentResumeReattaches(t *testing.T) {
	b, srv, suite := setupPostgresExperiment(t, "good", "wrong")
	crash := errors.New("coordinator died (test)")
	var expID string
	afterEnqueue = func(id string) error { expID = id; return crash }
	code, _, stderr := b.run("run", suite, "--distributed", "-q")
	afterEnqueue = nil
	if code == ExitOK || expID == "" || !strings.Contains(stderr, crash.Error()) {
		t.Fatalf("exit %d, experiment %q, stderr:\n%s", code, expID, stderr)
	}
	requests, _ := srv.counts()
	if len(requests) != 0 {
		t.Fatalf("requests before any worker: %v", requests)
	}

	b.startWorker(t)
	out := filepath.Join(b.dir, "exp.json")
	code, _, stderr = b.run("run", "--resume", expID, "--distributed", "-q", "-o", out)
	if code != ExitOK || !strings.Contains(stderr, "experiment "+expID+" re-attached: 2 runs, distributed") {
		t.Fatalf("resume: exit %d, stderr:\n%s", code, stderr)
	}
	rep, _ := readExpReport(t, out)
	if rep.Experiment.ID != expID || len(rep.Variants) != 2 {
		t.Fatalf("report %+v", rep)
	}
	for _, v := range rep.Variants {
		if v.Status != "completed" || v.Succeeded != 3 {
			t.Errorf("variant %s: %s, %d succeeded", v.Name, v.Status, v.Succeeded)
		}
	}
	_, answered := srv.counts()
	for _, v := range []string{"good", "wrong"} {
		for _, id := range []string{"a", "b", "c"} {
			if n := answered[v+"/"+id]; n != 1 {
				t.Errorf("variant %s item %s answered %d times, want 1", v, id, n)
			}
		}
	}
	// Resuming a finished experiment is refused, distributed or not.
	code, _, stderr = b.run("run", "--resume", expID, "--distributed")
	if code != ExitUsage || !strings.Contains(stderr, "has nothing to resume") {
		t.Errorf("resume of a finished experiment: exit %d\n%s", code, stderr)
	}
}

// A literal secret in a variant's target is refused before anything is
// enqueued: workers could not rebuild that variant.
func TestDistributedExperimentRefusesLiteralSecret(t *testing.T) {
	b, _, _ := setupPostgresExperiment(t)
	suite := b.write("lit.yaml", `name: lit
dataset: {name: d, file: d.jsonl}
target: {kind: http, url: "http://127.0.0.1:1/x", output: out}
scorers: [exact_match]
variants:
  - name: plain
  - name: keyed
    target: {headers: {X-Api-Key: "literal-key-123456"}}
`)
	for _, args := range [][]string{{"run", suite, "--distributed"}, {"run", suite, "--distributed", "--dry-run"}} {
		code, _, stderr := b.run(args...)
		if code != ExitUsage || !strings.Contains(stderr, "X-Api-Key") {
			t.Fatalf("%v: exit %d, stderr:\n%s\nwant 2 naming the header", args, code, stderr)
		}
	}
	pg := b.openPG(t)
	if runs, err := pg.ListRuns(context.Background(), evalrun.RunFilter{}); err != nil || len(runs) != 0 {
		t.Errorf("%d runs stored (%v), want none", len(runs), err)
	}
}
