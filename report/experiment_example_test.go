package report_test

import (
	"fmt"
	"os"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/report"
)

// An experiment of two variants on four items: the candidate passes the
// two items the baseline fails. Four items are too few for a verdict.
func ExampleBuildExperiment() {
	scorers := []evalrun.ScorerInfo{{Name: "exact", Threshold: 0.5}}
	var runs []*evalrun.Run
	var reps []*report.Report
	for vi, variant := range []string{"mini", "big"} {
		run := &evalrun.Run{ID: "run-" + variant, Name: "faq", Experiment: "exp-1", Variant: variant, VariantIndex: vi,
			Scorers: scorers, Status: evalrun.RunCompleted, Total: 4, Succeeded: 4}
		var results []*evalrun.ItemResult
		for i := range 4 {
			s := 0.0
			if i < 2 || variant == "big" {
				s = 1
			}
			results = append(results, &evalrun.ItemResult{Index: i, ItemID: fmt.Sprint("q", i), Output: evalrun.String("…"),
				Scores: []evalrun.ScorerResult{{Scorer: "exact", Score: &s, Passed: s >= 0.5}}})
		}
		runs = append(runs, run)
		reps = append(reps, report.Build(run, results))
	}
	exp, _ := evalrun.ExperimentOf("exp-1", runs)
	e, err := report.BuildExperiment(exp, reps, report.CompareOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ci := e.Variant("big").Scorers.Get("exact").PassRateCI
	fmt.Printf("big: pass rate 4/4, 95%% Wilson interval [%.3f, %.0f]\n", ci[0], ci[1])
	d := e.Variant("big").VsBaseline.Get("exact")
	fmt.Printf("big vs mini: delta %+.2f, p %.2f, %s\n", *d.Delta, *d.PValue, d.Verdict)
	report.WriteExperimentTable(os.Stdout, e)
	// Output:
	// big: pass rate 4/4, 95% Wilson interval [0.510, 1]
	// big vs mini: delta +0.50, p 0.50, same
	// experiment exp-1  faq  dataset —  baseline mini  variants 2  items 4
	// pass rate [95% Wilson interval]; vs baseline: delta of pass rate [paired bootstrap 95% interval], exact sign test
	//
	// VARIANT          STATUS     EXACT              MEAN   MACRO  FAILURES  TOKENS  COST  P50  P95
	// mini (baseline)  completed  0.50 [0.15, 0.85]  0.500  0.50   0         —       —     —    —
	// big              completed  1.00 [0.51, 1.00]  1.000  1.00   0         —       —     —    —
	//
	// big vs mini: exact +0.50 [+0.00, +1.00] p=0.500 same
}
