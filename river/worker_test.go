package river

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
)

// A permanent target error is not retried by the queue (one call); a
// transient one is retried by the engine within max_retries, never by the
// queue; an infrastructure error (the run cannot be built) is retried by
// the queue.
func TestRetriesBelongToTheEngine(t *testing.T) {
	b := setup(t, 0)
	items := b.importItems(t, "mixed", []string{"perm-1", "flaky-1", "down-1", "ok-1"})
	builder := &testBuilder{store: b.store}
	builder.failBuilds.Store(1) // the first job meets a broken environment
	b.startWorker(t, builder, 4)
	rec := b.enqueue(t, "mixed", items, runConfig{MaxRetries: 2})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := b.coord.Wait(ctx, rec.ID, WaitOptions{LoadResults: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != evalrun.RunCompleted || s.Succeeded != 2 || s.Failed != 2 || s.Skipped != 0 || !s.CompletedWithErrors {
		t.Fatalf("summary = %+v, want completed with 2 succeeded, 2 failed", s)
	}
	for id, want := range map[string]int{"perm-1": 1, "flaky-1": 3, "down-1": 3, "ok-1": 1} {
		if got := b.target.callsOf(id); got != want {
			t.Errorf("target calls for %s = %d, want %d", id, got, want)
		}
	}
	byID := map[string]*evalrun.ItemResult{}
	for _, r := range s.Results {
		byID[r.ItemID] = r
	}
	if r := byID["perm-1"]; r == nil || r.ErrorKind != evalrun.ErrorPermanent || r.Attempts != 1 {
		t.Errorf("perm-1 result = %+v, want a permanent failure after 1 attempt", r)
	}
	if r := byID["flaky-1"]; r == nil || r.Failed() || r.RetryCount != 2 || len(r.Scores) != 1 || r.Scores[0].Score == nil || *r.Scores[0].Score != 1 {
		t.Errorf("flaky-1 result = %+v, want success after 2 retries, scored 1", r)
	}
	if r := byID["down-1"]; r == nil || r.ErrorKind != evalrun.ErrorTransient || r.Attempts != 3 {
		t.Errorf("down-1 result = %+v, want a transient failure after 3 attempts", r)
	}
	// River records completions asynchronously, after the results.
	var states map[string]int
	var maxAttempt int
	waitFor(t, 10*time.Second, "4 completed jobs", func() (bool, error) {
		states, maxAttempt = b.jobStates(t, rec.ID)
		return states["completed"] == 4, nil
	})
	if len(states) != 1 {
		t.Errorf("job states = %v, want 4 completed", states)
	}
	if maxAttempt != 2 {
		t.Errorf("highest job attempt = %d, want 2 (only the failed build is retried by the queue)", maxAttempt)
	}
	if n := builder.builds.Load(); n < 2 {
		t.Errorf("builds = %d, want the failed one and a good one", n)
	}
	stored, err := b.store.GetRun(t.Context(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != evalrun.RunCompleted || stored.Succeeded != 2 || stored.Failed != 2 || stored.CompletedAt.IsZero() {
		t.Errorf("stored run = %+v, want the summary's counts", stored)
	}
	// Waiting again (a re-attached coordinator) returns the same summary.
	again, err := b.coord.Wait(ctx, rec.ID, WaitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != s.Status || again.Succeeded != s.Succeeded || again.Failed != s.Failed {
		t.Errorf("second Wait = %+v, want %+v", again, s)
	}
}

// After a cancel settles, no job of the cancelled run is executed: the
// worker goes on with another run and the target sees no further call for
// the first one. The run ends canceled with exact counts.
func TestCancelStopsQueuedAndRunningJobs(t *testing.T) {
	b := setup(t, 20*time.Millisecond)
	itemsA := b.importItems(t, "a", inputs("a", 300))
	itemsB := b.importItems(t, "b", inputs("b", 20))
	b.startWorker(t, &testBuilder{store: b.store}, 4)
	runA := b.enqueue(t, "a", itemsA, runConfig{})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	type waited struct {
		s   *evalrun.Summary
		err error
	}
	waitA := make(chan waited, 1)
	go func() {
		s, err := b.coord.Wait(ctx, runA.ID, WaitOptions{})
		waitA <- waited{s, err}
	}()
	waitFor(t, 30*time.Second, "20 results of run a", b.resultsAtLeast(runA.ID, 20))

	s, err := b.coord.Cancel(ctx, runA.ID)
	if err != nil {
		t.Fatal(err)
	}
	callsAtCancel := b.target.callsWithPrefix("a-")
	ok, failed, err := b.store.CountResults(ctx, runA.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != evalrun.RunCanceled || s.Succeeded != ok || s.Failed != failed || s.Skipped != 300-ok-failed || s.Skipped == 0 {
		t.Fatalf("cancel summary = %+v, want canceled with the stored counts (%d ok, %d failed)", s, ok, failed)
	}
	if !errors.Is(s.Err, ErrCanceled) {
		t.Errorf("summary error = %v, want ErrCanceled", s.Err)
	}
	w := <-waitA
	if w.err != nil {
		t.Fatal(w.err)
	}
	if w.s.Status != evalrun.RunCanceled || w.s.Succeeded != ok || w.s.Skipped != s.Skipped {
		t.Errorf("the waiting coordinator got %+v, want %+v", w.s, s)
	}
	states, _ := b.jobStates(t, runA.ID)
	for st := range states {
		if st != "completed" && st != "cancelled" {
			t.Errorf("after cancel, %d jobs of run a are %s", states[st], st)
		}
	}

	// The worker is alive and works another run to its end; run a gets no
	// call meanwhile.
	runB := b.enqueue(t, "b", itemsB, runConfig{})
	sb, err := b.coord.Wait(ctx, runB.ID, WaitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Status != evalrun.RunCompleted || sb.Succeeded != 20 {
		t.Fatalf("run b summary = %+v, want 20 succeeded", sb)
	}
	if got := b.target.callsWithPrefix("a-"); got != callsAtCancel {
		t.Errorf("target calls for run a went from %d at cancel to %d", callsAtCancel, got)
	}
	if ok2, failed2, _ := b.store.CountResults(ctx, runA.ID); ok2 != ok || failed2 != failed {
		t.Errorf("results of run a went from %d+%d to %d+%d after the cancel", ok, failed, ok2, failed2)
	}
	stored, err := b.store.GetRun(ctx, runA.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != evalrun.RunCanceled || stored.Succeeded != ok || stored.Skipped != s.Skipped {
		t.Errorf("stored run a = %+v, want canceled with %d succeeded", stored, ok)
	}
}

// Cancelling the context of Wait (Ctrl-C on the coordinator) cancels the
// run: it ends canceled with the cause in the summary.
func TestWaitInterruptedCancelsTheRun(t *testing.T) {
	b := setup(t, 20*time.Millisecond)
	items := b.importItems(t, "a", inputs("a", 200))
	b.startWorker(t, &testBuilder{store: b.store}, 2)
	run := b.enqueue(t, "a", items, runConfig{})

	interrupted := errors.New("interrupt (test)")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	go func() {
		waitFor(t, 30*time.Second, "5 results", b.resultsAtLeast(run.ID, 5))
		cancel(interrupted)
	}()
	s, err := b.coord.Wait(ctx, run.ID, WaitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != evalrun.RunCanceled || !errors.Is(s.Err, interrupted) || s.Skipped == 0 || s.Succeeded+s.Failed+s.Skipped != 200 {
		t.Fatalf("summary = %+v (err %v), want canceled by the interrupt", s, s.Err)
	}
	ok, failed, err := b.store.CountResults(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ok != s.Succeeded || failed != s.Failed {
		t.Errorf("stored results %d+%d, summary %d+%d", ok, failed, s.Succeeded, s.Failed)
	}
}

// Waiting for a run that has missing results but no job in the queue (a
// local run, say) is an error, not a run finalized as failed.
func TestWaitRefusesARunWithoutJobs(t *testing.T) {
	b := setup(t, 0)
	b.importItems(t, "local", []string{"x-1", "x-2"})
	rec := &evalrun.Run{ID: "local-run", Dataset: "local", DatasetVersion: 1, Status: evalrun.RunRunning, Total: 2, Skipped: 2}
	if err := b.store.CreateRun(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	_, err := b.coord.Wait(t.Context(), rec.ID, WaitOptions{})
	if !errors.Is(err, evalrun.ErrInvalid) {
		t.Fatalf("Wait = %v, want ErrInvalid", err)
	}
	stored, err := b.store.GetRun(t.Context(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != evalrun.RunRunning || !stored.CompletedAt.IsZero() {
		t.Errorf("stored run = %+v, want it untouched", stored)
	}
}

// In strict mode a scorer error on a worker stops the run, and the
// coordinator finalizes it failed with an error that is engine.ErrStrict
// (as a local run ends), knowing it from the run's status, not its text.
func TestStrictScorerErrorFailsTheRun(t *testing.T) {
	b := setup(t, 20*time.Millisecond)
	items := b.importItems(t, "strict", append([]string{"scorerr-0"}, inputs("ok", 100)...))
	b.startWorker(t, &testBuilder{store: b.store}, 1)
	run := b.enqueue(t, "strict", items, runConfig{Strict: true})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := b.coord.Wait(ctx, run.ID, WaitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != evalrun.RunFailed || !errors.Is(s.Err, engine.ErrStrict) || s.Skipped == 0 {
		t.Fatalf("summary = %+v (err %v), want failed by strict mode with items skipped", s, s.Err)
	}
	if want := "exact on item scorerr-0: grader unavailable (test)"; !strings.Contains(s.Err.Error(), want) {
		t.Errorf("error %q does not say %q", s.Err, want)
	}
	stored, err := b.store.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != evalrun.RunFailed || stored.CompletedAt.IsZero() || stored.Error != s.Err.Error() {
		t.Errorf("stored run = %+v, want it finalized failed with the summary's error", stored)
	}
}

// A run cancelled with a reason that merely reads like strict mode's is a
// cancelled run: the coordinator goes by the run's status, not by its
// error text (it used to finalize it failed, as if strict mode had stopped
// it).
func TestCancelReasonIsNotTakenForStrictMode(t *testing.T) {
	b := setup(t, 0)
	items := b.importItems(t, "text", inputs("t", 3))
	run := b.enqueue(t, "text", items, runConfig{})
	reason := engine.ErrStrict.Error() + ": typed by an operator"
	if _, _, err := b.store.CancelRun(t.Context(), run.ID, reason); err != nil {
		t.Fatal(err)
	}
	s, err := b.coord.Wait(t.Context(), run.ID, WaitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != evalrun.RunCanceled || !errors.Is(s.Err, ErrCanceled) || errors.Is(s.Err, engine.ErrStrict) || s.Err.Error() != reason {
		t.Fatalf("summary = %+v (err %v), want canceled with the reason, ErrCanceled and not ErrStrict", s, s.Err)
	}
}

// recordingClock is a Clock whose waits end at once and are recorded.
type recordingClock struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (c *recordingClock) Now() time.Time { return time.Now() }

func (c *recordingClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- time.Now()
	return ch
}

// A result the store refuses is written again after the back-off of
// package retry, waited on the worker's clock (it slept on the wall clock,
// which tests could neither see nor skip).
func TestWorkerRetriesAFailingWriteOnItsClock(t *testing.T) {
	b := setup(t, 0)
	items := b.importItems(t, "w", []string{"w-1"})
	ctx := t.Context()
	// The database refuses the first two result rows.
	if _, err := b.store.Pool().Exec(ctx, `CREATE SEQUENCE refused_writes;
		CREATE FUNCTION refuse_two() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('refused_writes') <= 2 THEN RAISE EXCEPTION 'disk full (test)'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_two BEFORE INSERT ON results FOR EACH ROW EXECUTE FUNCTION refuse_two()`); err != nil {
		t.Fatal(err)
	}
	clock := &recordingClock{}
	b.startWorkerWith(t, &testBuilder{store: b.store}, WorkerOptions{Concurrency: 1, Clock: clock})
	run := b.enqueue(t, "w", items, runConfig{})
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s, err := b.coord.Wait(wctx, run.ID, WaitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != evalrun.RunCompleted || s.Succeeded != 1 {
		t.Fatalf("summary = %+v, want the result written on the third try", s)
	}
	clock.mu.Lock()
	defer clock.mu.Unlock()
	if len(clock.waits) != 2 || clock.waits[0] < writeRetryDelay || clock.waits[1] < 2*writeRetryDelay {
		t.Errorf("waits on the worker's clock = %v, want two growing back-offs from %s", clock.waits, writeRetryDelay)
	}
	if n := b.target.callsOf("w-1"); n != 1 {
		t.Errorf("target calls = %d, want 1 (only the write is retried)", n)
	}
}

// The queue's retry delays grow from a second, with package retry's
// jitter, and stop growing at a minute.
func TestQueueRetryPolicy(t *testing.T) {
	for _, tc := range []struct {
		errors   int
		min, max time.Duration
	}{
		{0, time.Second, 1250 * time.Millisecond},
		{1, time.Second, 1250 * time.Millisecond},
		{3, 4 * time.Second, 5 * time.Second},
		{20, queueRetryCap - time.Second, queueRetryCap},
	} {
		job := &rivertype.JobRow{Errors: make([]rivertype.AttemptError, tc.errors)}
		got := time.Until(retryPolicy{}.NextRetry(job))
		if got < tc.min-50*time.Millisecond || got > tc.max {
			t.Errorf("after %d errors: retry in %s, want %s to %s", tc.errors, got, tc.min, tc.max)
		}
	}
}

// A run no worker can build (a ${VAR} missing on every worker) does not
// wait in silence: Wait reports the error the jobs went back to the queue
// with, while River retries them.
func TestWaitReportsWhyJobsWentBackToTheQueue(t *testing.T) {
	b := setup(t, 0)
	items := b.importItems(t, "unbuildable", []string{"u-1"})
	builder := &testBuilder{store: b.store}
	builder.failBuilds.Store(1 << 30)
	b.startWorker(t, builder, 1)
	rec := b.enqueue(t, "unbuildable", items, runConfig{})

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var got []string
	s, err := b.coord.Wait(ctx, rec.ID, WaitOptions{JobError: func(msg string) {
		got = append(got, msg)
		cancel()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.Contains(got[0], "suite not available (test)") {
		t.Errorf("job errors reported %q, want the build error once", got)
	}
	if s.Status != evalrun.RunCanceled {
		t.Errorf("status %s after the wait was stopped, want canceled", s.Status)
	}
}
