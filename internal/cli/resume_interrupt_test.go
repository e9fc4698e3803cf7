package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/sqlite"
)

// A distributed experiment whose coordinator died still has its jobs in
// the queue: workers will execute them. A resume without --distributed
// (of the experiment, or of one variant's run) would execute the same
// items here as well, every one twice, so it is refused (exit 2, nothing
// executed, pointing at --distributed); once the workers are there,
// --resume EXP_ID --distributed finishes the experiment with each item
// answered once.
func TestLocalResumeRefusesRunsStillQueuedForWorkers(t *testing.T) {
	b, srv, suite := setupPostgresExperiment(t, "good", "wrong")
	crash := errors.New("coordinator died (test)")
	var expID string
	afterEnqueue = func(id string) error { expID = id; return crash }
	code, _, stderr := b.run("run", suite, "--distributed", "-q")
	afterEnqueue = nil
	if code == ExitOK || expID == "" {
		t.Fatalf("exit %d, experiment %q, stderr:\n%s", code, expID, stderr)
	}
	exp, err := evalrun.GetExperiment(context.Background(), b.openPG(t), expID)
	if err != nil || len(exp.Runs) != 2 {
		t.Fatalf("GetExperiment: %+v, %v", exp, err)
	}

	for _, id := range []string{expID, exp.Runs[0].ID} {
		code, _, stderr = b.run("run", "--resume", id, "-q")
		if code != ExitUsage || !strings.Contains(stderr, "queued for evalrun worker processes") ||
			!strings.Contains(stderr, "--resume "+expID+" --distributed") {
			t.Errorf("local resume %s of runs queued for workers: exit %d, stderr:\n%s\nwant 2, pointing at --resume %s --distributed",
				id, code, stderr, expID)
		}
	}
	if requests, _ := srv.counts(); len(requests) != 0 {
		t.Fatalf("a refused resume executed items: %v", requests)
	}

	b.startWorker(t)
	code, _, stderr = b.run("run", "--resume", expID, "--distributed", "-q")
	if code != ExitOK {
		t.Fatalf("resume --distributed: exit %d, stderr:\n%s", code, stderr)
	}
	requests, _ := srv.counts()
	for _, v := range []string{"good", "wrong"} {
		for _, id := range []string{"a", "b", "c"} {
			if n := requests[v+"/"+id]; n != 1 {
				t.Errorf("variant %s item %s requested %d times, want 1", v, id, n)
			}
		}
	}
}

// An experiment its store stopped (the scores table renamed away before
// the first answer) says how to go on once the store takes writes again:
// one command, the experiment's resume, with the --db the experiment was
// run with (a resume without it would open the default database). Run
// verbatim once the table is back, it completes every variant, each
// missing item requested once.
func TestExperimentStoreFailureResumeCommandWorksVerbatim(t *testing.T) {
	b := setup(t)
	path := strings.TrimPrefix(b.db, "sqlite:")
	b.env = nil // the database is given with --db, as users without EVALRUN_DB do
	exec := sqliteExec(t, path)
	srv := newVariantServer(t)
	var mu sync.Mutex
	answers := map[string]int{} // per variant
	broken := true
	srv.setHook(func(r *http.Request, variant, _ string) bool {
		mu.Lock()
		answers[variant]++
		first, hold := len(answers) == 1 && answers[variant] == 1, broken && answers[variant] > 1
		mu.Unlock()
		if first { // before any result is written: every variant's first write fails
			exec(`ALTER TABLE scores RENAME TO scores_away`)
		}
		if hold { // each variant must stop on its refused write: held until it does
			<-r.Context().Done()
			return false
		}
		return true
	})
	suite := b.variantSuite(srv.URL, 10, []string{"good", "wrong"}, "")
	code, _, stderr := b.run("run", suite, "-q", "--db", b.db)
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	expID, _ := experimentIDs(t, stderr)
	want := "evalrun run --resume " + expID + " --db " + b.db
	var cmdline string
	for _, line := range strings.Split(stderr, "\n") {
		if i := strings.Index(line, "evalrun run --resume"); i >= 0 && strings.HasPrefix(line[i:], want) {
			cmdline = strings.TrimSpace(line[i:])
			cmdline = cmdline[:len(want)]
		}
	}
	if cmdline == "" {
		t.Fatalf("no %q on stderr:\n%s", want, stderr)
	}

	exec(`ALTER TABLE scores_away RENAME TO scores`)
	mu.Lock()
	broken = false
	mu.Unlock()
	before, _ := srv.counts()
	code, _, stderr = b.run(append(strings.Fields(strings.TrimPrefix(cmdline, "evalrun ")), "-q")...)
	if code != ExitOK {
		t.Fatalf("%s: exit %d, want 0\n%s", cmdline, code, stderr)
	}
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	exp, err := evalrun.GetExperiment(t.Context(), st, expID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range exp.Runs {
		if r.Status != evalrun.RunCompleted || r.Succeeded != 10 {
			t.Errorf("variant %s: %s, %d succeeded; want completed, 10", r.Variant, r.Status, r.Succeeded)
		}
	}
	after, _ := srv.counts()
	for k, n := range after {
		if n-before[k] > 1 {
			t.Errorf("%s requested %d times by the resume", k, n-before[k])
		}
	}
}

// A run whose every item executed but whose store refused the results
// (here the only item's: the scores table is renamed away before it is
// answered) has nothing "skipped", yet its results are not in the
// database. The run says a resume will run them once the store takes
// writes again, and it does: the resume is not refused as "every item
// run", and the run ends completed with its result stored.
func TestResumeRunsResultsTheStoreRefusedWhenNoItemWasSkipped(t *testing.T) {
	b := setup(t)
	path := strings.TrimPrefix(b.db, "sqlite:")
	exec := sqliteExec(t, path)
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ ID, Input string }
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			exec(`ALTER TABLE scores RENAME TO scores_away`)
		}
		json.NewEncoder(w).Encode(map[string]string{"out": body.Input})
	}))
	defer srv.Close()
	suite := storefailSuite(b, srv.URL, 1)
	code, _, stderr := b.run("run", suite, "-q")
	if code != ExitFailed || !strings.Contains(stderr, "runs the items without a stored result") {
		t.Fatalf("exit %d, want 1 and the way on\n%s", code, stderr)
	}
	id := strings.Fields(stderr)[1]

	exec(`ALTER TABLE scores_away RENAME TO scores`)
	code, _, stderr = b.run("run", "--resume", id, "-q")
	if code != ExitOK {
		t.Fatalf("resume once the store takes writes again: exit %d, want 0\n%s", code, stderr)
	}
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.GetRun(t.Context(), id)
	if err != nil || run.Status != evalrun.RunCompleted || run.Succeeded != 1 || run.PersistErrors != 0 {
		t.Fatalf("resumed run: %+v, %v; want completed, 1 succeeded, no persist error", run, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 {
		t.Errorf("the item was requested %d times, want 2 (once more by the resume)", calls)
	}
}

// After Ctrl-C of a distributed experiment its runs are canceled and
// their jobs deleted: no worker will run them again. --resume EXP_ID
// --distributed used to "re-attach" to them, run nothing, call them
// "canceled (evalrun runs cancel)" and exit 130 with the same resume
// command, forever. It is refused (exit 2), saying that the resume
// without --distributed runs the missing items; and that one does,
// each item once, the experiment ending clean.
func TestDistributedResumeOfCanceledExperimentSaysHow(t *testing.T) {
	b, srv, suite := setupPostgresExperiment(t, "good", "wrong")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	enqueued := make(chan string, 1)
	afterEnqueue = func(id string) error { enqueued <- id; return nil }
	t.Cleanup(func() { afterEnqueue = nil })
	done := make(chan int, 1)
	go func() { // no worker: the runs wait in the queue
		code, _, _ := b.main(ctx, nil, "run", suite, "--distributed", "-q")
		done <- code
	}()
	var expID string
	select {
	case expID = <-enqueued:
	case code := <-done:
		t.Fatalf("ended before enqueueing: exit %d", code)
	}
	cancel(ErrInterrupted)
	if code := <-done; code != ExitInterrupted {
		t.Fatalf("Ctrl-C: exit %d, want %d", code, ExitInterrupted)
	}

	code, _, stderr := b.run("run", "--resume", expID, "--distributed", "-q")
	if code != ExitUsage || !strings.Contains(stderr, "evalrun run --resume "+expID) ||
		!strings.Contains(stderr, "without --distributed") || strings.Contains(stderr, "evalrun runs cancel)") {
		t.Fatalf("resume --distributed of a canceled experiment: exit %d, stderr:\n%s\nwant 2 and the way on", code, stderr)
	}
	code, _, stderr = b.run("run", "--resume", expID, "-q")
	if code != ExitOK {
		t.Fatalf("resume here: exit %d, stderr:\n%s", code, stderr)
	}
	requests, _ := srv.counts()
	for _, v := range []string{"good", "wrong"} {
		for _, id := range []string{"a", "b", "c"} {
			if n := requests[v+"/"+id]; n != 1 {
				t.Errorf("variant %s item %s requested %d times, want 1", v, id, n)
			}
		}
	}
}
