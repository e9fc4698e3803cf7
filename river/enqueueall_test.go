package river

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/target"
)

// specOf is the spec of a run of the dataset against the bundle's target.
func (b *bundle) specOf(t *testing.T, dataset string, items []*evalrun.Item, repeat int) engine.Spec {
	t.Helper()
	raw, _ := json.Marshal(runConfig{URL: b.target.srv.URL, Repeat: repeat})
	tgt, err := target.NewHTTP(target.HTTPConfig{URL: b.target.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	return engine.Spec{
		Run:     &evalrun.Run{Name: dataset, Dataset: dataset, DatasetVersion: 1, Target: evalrun.TargetInfo{Kind: "http"}, Config: raw},
		Items:   items,
		Target:  tgt,
		Scorers: []evalrun.Scorer{exactScorer{}},
		Options: engine.Options{Repeat: repeat},
	}
}

// EnqueueAll stores every run with its jobs, interleaved so that workers
// taking jobs in insertion order make the runs progress together, and
// the runs complete like runs enqueued one by one.
func TestEnqueueAllInterleavesRuns(t *testing.T) {
	b := setup(t, 0)
	items := b.importItems(t, "ds", inputs("q", 3))
	specs := []engine.Spec{b.specOf(t, "ds", items, 1), b.specOf(t, "ds", items[:2], 2)}
	specs[0].Run.Experiment, specs[0].Run.Variant = "exp-1", "a"
	specs[1].Run.Experiment, specs[1].Run.Variant, specs[1].Run.VariantIndex = "exp-1", "b", 1
	recs, err := b.coord.EnqueueAll(t.Context(), specs)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].ID == recs[1].ID || recs[0].Total != 3 || recs[1].Total != 4 {
		t.Fatalf("records %+v", recs)
	}
	type job struct {
		run           string
		index, repeat int
	}
	rows, err := b.store.Pool().Query(t.Context(), `SELECT args->>'run_id', (args->>'index')::int, coalesce((args->>'repeat')::int, 0) FROM river_job ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []job
	for rows.Next() {
		var j job
		if err := rows.Scan(&j.run, &j.index, &j.repeat); err != nil {
			t.Fatal(err)
		}
		got = append(got, j)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	a, bb := recs[0].ID, recs[1].ID
	want := []job{{a, 0, 0}, {bb, 0, 0}, {bb, 0, 1}, {a, 1, 0}, {bb, 1, 0}, {bb, 1, 1}, {a, 2, 0}}
	if !slices.Equal(got, want) {
		t.Errorf("jobs in insertion order\n%v\nwant\n%v", got, want)
	}
	for _, rec := range recs {
		stored, err := b.store.GetRun(t.Context(), rec.ID)
		if err != nil || stored.Status != evalrun.RunRunning || stored.Total != rec.Total {
			t.Errorf("stored run %+v, %v", stored, err)
		}
	}

	b.startWorker(t, &testBuilder{store: b.store}, 2)
	var wg sync.WaitGroup
	sums := make([]*evalrun.Summary, len(recs))
	errs := make([]error, len(recs))
	for k, rec := range recs {
		wg.Go(func() { sums[k], errs[k] = b.coord.Wait(t.Context(), rec.ID, WaitOptions{}) })
	}
	wg.Wait()
	for k := range recs {
		if errs[k] != nil || sums[k].Status != evalrun.RunCompleted || sums[k].Succeeded != recs[k].Total {
			t.Errorf("run %d: %+v, %v", k, sums[k], errs[k])
		}
	}
}

// EnqueueAll writes nothing when one spec is invalid: an experiment is
// enqueued whole or not at all.
func TestEnqueueAllIsAtomic(t *testing.T) {
	b := setup(t, 0)
	items := b.importItems(t, "ds", inputs("q", 2))
	bad := b.specOf(t, "ds", []*evalrun.Item{items[0], nil}, 1)
	_, err := b.coord.EnqueueAll(t.Context(), []engine.Spec{b.specOf(t, "ds", items, 1), bad})
	if !errors.Is(err, evalrun.ErrInvalid) {
		t.Fatalf("err %v, want ErrInvalid", err)
	}
	runs, err := b.store.ListRuns(t.Context(), evalrun.RunFilter{})
	if err != nil || len(runs) != 0 {
		t.Errorf("%d runs stored (%v), want none", len(runs), err)
	}
	var jobs int
	if err := b.store.Pool().QueryRow(t.Context(), `SELECT count(*) FROM river_job`).Scan(&jobs); err != nil || jobs != 0 {
		t.Errorf("%d jobs (%v), want none", jobs, err)
	}
}

// Wait called with a context that already ended cancels the run (as a
// Ctrl-C during Wait does) instead of failing to read it: an experiment's
// coordinator starts one Wait per variant, and a Ctrl-C may come first.
func TestWaitWithEndedContextCancelsTheRun(t *testing.T) {
	b := setup(t, 0)
	items := b.importItems(t, "ds", inputs("q", 2))
	rec := b.enqueue(t, "ds", items, runConfig{})
	ctx, cancel := context.WithCancelCause(t.Context())
	stop := errors.New("interrupted (test)")
	cancel(stop)
	sum, err := b.coord.Wait(ctx, rec.ID, WaitOptions{})
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if sum.Status != evalrun.RunCanceled || !errors.Is(sum.Err, stop) || sum.Skipped != 2 {
		t.Errorf("summary %+v, want canceled with the cause, 2 skipped", sum)
	}
}
