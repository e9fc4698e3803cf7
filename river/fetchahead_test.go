package river

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/evalrun/evalrun"
)

// A worker holds jobs fetched ahead beyond its concurrency without
// executing them: with concurrency 1 and one job ahead, River runs two jobs
// but the target sees one call. When the worker stops, the job waiting
// for a slot goes back to the queue at once, with no attempt counted and
// no error, while the executing one finishes.
func TestJobsFetchedAheadWaitForASlotAndReturnOnStop(t *testing.T) {
	b := setup(t, 0)
	items := b.importItems(t, "ahead", inputs("slow", 3))
	waiting := make(chan struct{}, 4)
	w := b.startWorkerWith(t, &testBuilder{store: b.store}, WorkerOptions{Concurrency: 1, FetchAhead: 1,
		slotWaited: func() { waiting <- struct{}{} }})
	run := b.enqueue(t, "ahead", items, runConfig{})

	ctx := t.Context()
	select {
	case <-waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("no job fetched ahead waited for a slot")
	}
	waitFor(t, 30*time.Second, "the first item at the target", func() (bool, error) {
		return b.target.callsWithPrefix("slow") == 1, nil
	})
	if states, _ := b.jobStates(t, run.ID); states["running"] != 2 || states["available"] != 1 {
		t.Fatalf("job states %v, want 2 running (1 executing, 1 ahead) and 1 available", states)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	waitFor(t, 30*time.Second, "the job ahead back in the queue", func() (bool, error) {
		states, _ := b.jobStates(t, run.ID)
		return states["available"] == 2 && states["running"] == 1, nil
	})
	close(b.target.release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if n := b.target.callsWithPrefix("slow"); n != 1 {
		t.Errorf("target calls = %d, want 1: the job ahead never executed", n)
	}
	ok, failed, err := b.store.CountResults(ctx, run.ID)
	if err != nil || ok != 1 || failed != 0 {
		t.Fatalf("results %d ok %d failed (%v), want the executing item's", ok, failed, err)
	}
	var returned, attempt, errs int
	if err := b.store.Pool().QueryRow(ctx, `SELECT count(*), max(attempt), max(coalesce(array_length(errors, 1), 0))
		FROM river_job WHERE args->>'run_id' = $1 AND state = 'available'`, run.ID).Scan(&returned, &attempt, &errs); err != nil {
		t.Fatal(err)
	}
	if returned != 2 || attempt != 0 || errs != 0 {
		t.Errorf("available jobs: %d, max attempt %d, max errors %d; want 2 with no attempt and no error", returned, attempt, errs)
	}
}

// River runs at most river.QueueNumWorkersMax jobs per queue and client:
// the default fetch-ahead (as many as Concurrency) shrinks to fit rather
// than make a concurrency above half of it fail (it worked before
// fetch-ahead), and a Concurrency or an explicit FetchAhead past it is an
// error saying so, not River's "invalid number of workers" with an
// overflowed sum.
func TestFetchAheadWithinRiversMaxWorkers(t *testing.T) {
	b := setup(t, 0)
	builder := &testBuilder{store: b.store}
	for _, c := range []struct{ concurrency, ahead, want int }{
		{6000, 0, river.QueueNumWorkersMax - 6000},
		{river.QueueNumWorkersMax, 0, 0},
		{20, 0, 20},
		{20, -1, 0},
	} {
		w, err := NewWorker(t.Context(), b.store, builder, WorkerOptions{Concurrency: c.concurrency, FetchAhead: c.ahead, testOnly: true})
		if err != nil || w.opts.FetchAhead != c.want {
			t.Errorf("concurrency %d, fetch-ahead %d: %v; want fetch-ahead %d", c.concurrency, c.ahead, err, c.want)
		}
	}
	for _, c := range []struct{ concurrency, ahead int }{
		{20, river.QueueNumWorkersMax},
		{20, math.MaxInt},
		{math.MaxInt, 0},
		{river.QueueNumWorkersMax + 1, -1},
	} {
		_, err := NewWorker(t.Context(), b.store, builder, WorkerOptions{Concurrency: c.concurrency, FetchAhead: c.ahead, testOnly: true})
		if !errors.Is(err, evalrun.ErrInvalid) || !strings.Contains(err.Error(), strconv.Itoa(river.QueueNumWorkersMax)) {
			t.Errorf("concurrency %d, fetch-ahead %d: %v; want ErrInvalid saying the bound", c.concurrency, c.ahead, err)
		}
	}
}
