package river

import (
	"context"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// A live worker's item that runs far longer than the liveness window is
// never taken from it: its heartbeat keeps it, another worker watching
// (and reaping) the whole time does not run it again, and River's own
// job timeout does not cancel it. Before heartbeats, River's job timeout
// (90% of RescueAfter) cancelled such an item and its rescuer ran it
// again elsewhere.
func TestLiveWorkersSlowItemIsNotTakenFromIt(t *testing.T) {
	b := setup(t, 0)
	items := b.importItems(t, "slow", []string{"slow-1"})
	const deadAfter = 500 * time.Millisecond
	opts := WorkerOptions{Concurrency: 2, HeartbeatInterval: 100 * time.Millisecond, DeadAfter: deadAfter}
	builder := &testBuilder{store: b.store}
	b.startWorkerWith(t, builder, opts)
	b.startWorkerWith(t, builder, opts)
	rec := b.enqueue(t, "slow", items, runConfig{})

	ctx := t.Context()
	var owner string
	waitFor(t, 30*time.Second, "the slow item to start", func() (bool, error) {
		return b.target.callsOf("slow-1") == 1, nil
	})
	// Poll the job, by the database's clock, until it has run for four
	// liveness windows; all along it must stay with its first worker.
	waitFor(t, 30*time.Second, "the slow item to outlive four liveness windows", func() (bool, error) {
		var state, by string
		var attempt int
		var age time.Duration
		err := b.store.Pool().QueryRow(ctx, `SELECT state::text, attempt, attempted_by[array_upper(attempted_by, 1)],
			now() - attempted_at FROM river_job WHERE args->>'run_id' = $1`, rec.ID).Scan(&state, &attempt, &by, &age)
		if err != nil {
			return false, err
		}
		if owner == "" {
			owner = by
		}
		if state != "running" || attempt != 1 || by != owner {
			t.Fatalf("slow job: state %s, attempt %d, worker %s; want running, attempt 1, on %s", state, attempt, by, owner)
		}
		return age > 4*deadAfter, nil
	})
	if n := b.target.callsOf("slow-1"); n != 1 {
		t.Fatalf("the slow item was called %d times while it ran, want 1", n)
	}
	close(b.target.release)

	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s, err := b.coord.Wait(wctx, rec.ID, WaitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != evalrun.RunCompleted || s.Succeeded != 1 {
		t.Fatalf("summary = %+v, want completed with 1 succeeded", s)
	}
	if n := b.target.callsOf("slow-1"); n != 1 {
		t.Errorf("target calls for slow-1 = %d, want 1", n)
	}
	var attempt, errs int
	if err := b.store.Pool().QueryRow(ctx, `SELECT attempt, coalesce(array_length(errors, 1), 0) FROM river_job
		WHERE args->>'run_id' = $1`, rec.ID).Scan(&attempt, &errs); err != nil {
		t.Fatal(err)
	}
	if attempt != 1 || errs != 0 {
		t.Errorf("job attempt %d with %d errors, want 1 attempt and none", attempt, errs)
	}
}

// reapDead takes back exactly the running jobs of dead workers: a job of
// a worker whose heartbeat is stale becomes available (attempt error
// recorded), one whose attempts are spent is discarded, one a cancel was
// attempted on is cancelled, and jobs of live workers and of a recent
// attempt by a worker without heartbeat are left alone.
func TestReapDeadTakesOnlyDeadWorkersJobs(t *testing.T) {
	b := setup(t, 0)
	items := b.importItems(t, "reap", inputs("r", 6))
	rec := b.enqueue(t, "reap", items, runConfig{})
	ctx := t.Context()
	pool := b.store.Pool()
	if err := beat(ctx, pool, "alive", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := beat(ctx, pool, "dead", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE evalrun_worker_heartbeat SET heartbeat_at = now() - interval '5 seconds' WHERE worker_id = 'dead'`); err != nil {
		t.Fatal(err)
	}
	// Index → (worker, attempt, extra metadata, started ago).
	setups := []struct {
		worker   string
		attempt  int
		metadata string
		ago      string
		want     string
	}{
		{"alive", 1, `{}`, "1 hour", "running"},
		{"dead", 1, `{}`, "10 seconds", "available"},
		{"dead", 10, `{}`, "10 seconds", "discarded"},
		{"dead", 1, `{"cancel_attempted_at": "2026-01-01T00:00:00Z"}`, "10 seconds", "cancelled"},
		{"unknown", 1, `{}`, "1 second", "running"},
		{"unknown", 1, `{}`, "1 hour", "available"},
	}
	for i, s := range setups {
		if _, err := pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = $3, max_attempts = 10,
			attempted_by = ARRAY['earlier', $2], attempted_at = now() - $5::interval, metadata = $4::jsonb
			WHERE args->>'run_id' = $1 AND (args->>'index')::int = $6`, rec.ID, s.worker, s.attempt, s.metadata, s.ago, i); err != nil {
			t.Fatal(err)
		}
	}
	n, err := reapDead(ctx, pool, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("reaped %d jobs, want 4", n)
	}
	for i, s := range setups {
		var state string
		var errs int
		if err := pool.QueryRow(ctx, `SELECT state::text, coalesce(array_length(errors, 1), 0) FROM river_job
			WHERE args->>'run_id' = $1 AND (args->>'index')::int = $2`, rec.ID, i).Scan(&state, &errs); err != nil {
			t.Fatal(err)
		}
		if state != s.want {
			t.Errorf("job %d (worker %s): state %s, want %s", i, s.worker, state, s.want)
		}
		if wantErrs := map[bool]int{true: 0, false: 1}[s.want == "running"]; errs != wantErrs {
			t.Errorf("job %d: %d attempt errors, want %d", i, errs, wantErrs)
		}
	}
	// A second pass (another worker reaping at once) takes nothing more.
	if n, err := reapDead(ctx, pool, time.Minute); err != nil || n != 0 {
		t.Errorf("second reap: %d jobs, %v; want 0", n, err)
	}
}

// A dead worker's job goes back to the queue at its original place, not
// behind the run's backlog: River fetches by priority, scheduled_at, id, so
// a job rescheduled at now() waited for every queued item of a long run
// before running again, well past PRODUCT.md's item_timeout + 60 s.
func TestReapDeadKeepsTheJobsPlaceInTheQueue(t *testing.T) {
	b := setup(t, 0)
	items := b.importItems(t, "reap-order", inputs("o", 4))
	rec := b.enqueue(t, "reap-order", items, runConfig{})
	ctx := t.Context()
	pool := b.store.Pool()
	if _, err := pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, max_attempts = 10,
		attempted_by = ARRAY['gone'], attempted_at = now() - interval '1 hour'
		WHERE args->>'run_id' = $1 AND (args->>'index')::int = 0`, rec.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := reapDead(ctx, pool, time.Minute); err != nil || n != 1 {
		t.Fatalf("reaped %d jobs, %v; want 1", n, err)
	}
	var first int
	if err := pool.QueryRow(ctx, `SELECT (args->>'index')::int FROM river_job
		WHERE args->>'run_id' = $1 AND state = 'available'
		ORDER BY priority, scheduled_at, id LIMIT 1`, rec.ID).Scan(&first); err != nil {
		t.Fatal(err)
	}
	if first != 0 {
		t.Errorf("next job River fetches is item %d, want the dead worker's item 0", first)
	}
}
