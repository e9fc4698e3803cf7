package web

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

const expID = "exp-20260304T120000-eeeeeeee"

// expRunID is the run id of variant v of experiment id.
func expRunID(id string, v int) string {
	return fmt.Sprintf("%s-v%d", id[len(evalrun.ExperimentPrefix):], v)
}

// seedExperiment stores an experiment of the given variants on dataset
// (already imported, n items): result(v, i) is variant v's result of item
// i (RunID and Index are set here, and ItemID to q<i+1> when empty). Runs are created in reverse
// variant order, so that only VariantIndex orders them.
func seedExperiment(t testing.TB, st evalrun.Store, id, name, dataset string, created time.Time, variants []string, n int,
	result func(v, i int) *evalrun.ItemResult) {
	t.Helper()
	ctx := context.Background()
	for v := len(variants) - 1; v >= 0; v-- {
		run := fixtureRun(expRunID(id, v), name, created.Add(time.Duration(v)*time.Second))
		run.Dataset, run.Total = dataset, n
		run.Experiment, run.Variant, run.VariantIndex = id, variants[v], v
		run.Target.Name = "model-" + variants[v]
		if err := st.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		var results []*evalrun.ItemResult
		for i := range n {
			r := result(v, i)
			r.RunID, r.Index = run.ID, i
			if r.ItemID == "" {
				r.ItemID = fmt.Sprintf("q%d", i+1)
			}
			if r.Failed() {
				run.Failed++
			} else {
				run.Succeeded++
			}
			results = append(results, r)
		}
		if err := st.WriteResults(ctx, results); err != nil {
			t.Fatal(err)
		}
		if err := st.UpdateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
}

// seedSmallExperiment stores, on the "support" fixture (six items, tagged
// billing, refund, billing, login, -, login), experiment expID with
// variants mini (the baseline), big and terse:
//   - mini passes every item but q6 (judge 0.5 everywhere: no variant
//     passes it);
//   - big fails judge on q2 (0.3) and times out on q4;
//   - terse fails exact on q3.
//
// So the variants disagree on q2, q3 and q4; the baseline passes and big
// fails on q2 and q4, terse on q3.
func seedSmallExperiment(t testing.TB, st evalrun.Store) {
	t.Helper()
	seedExperiment(t, st, expID, "model pick", "support", t0.Add(2*time.Hour), []string{"mini", "big", "terse"}, 6,
		func(v, i int) *evalrun.ItemResult {
			runID := expRunID(expID, v)
			exact, judge := 1.0, 0.8
			switch {
			case i == 5:
				judge = 0.5
			case v == 1 && i == 1:
				judge = 0.3
			case v == 1 && i == 3:
				return &evalrun.ItemResult{RunID: runID, Error: "deadline exceeded after 30s", ErrorKind: evalrun.ErrorTimeout,
					Attempts: 1, Latency: 30 * time.Second, StartedAt: t0, CompletedAt: t0.Add(30 * time.Second)}
			case v == 2 && i == 2:
				exact = 0
			}
			r := fixtureResult(runID, i, exact, judge, time.Duration(100+10*i)*time.Millisecond)
			r.Output = evalrun.String(fmt.Sprintf("answer %d by %s", i+1, []string{"mini", "big", "terse"}[v]))
			return r
		})
}
