package report

import (
	"testing"

	"github.com/evalrun/evalrun"
)

// TestExperimentRepeatsAreNotEvidence: a deterministic model run three
// times gives the same comparison as run once. Four items, each improved
// (base fails, cand passes) in all three repeats: by item, p = 2·(1/2)⁴ =
// 0.125 → same, as with one repeat; counted by result it would be
// 2·(1/2)¹² ≈ 0.0005 → better.
func TestExperimentRepeatsAreNotEvidence(t *testing.T) {
	build := func(repeats int) *BaselineDelta {
		mk := func(variant string, vi int, pass float64) (*evalrun.Run, []*evalrun.ItemResult) {
			run := expRun(variant, vi)
			run.Scorers = expScorers[:1]
			var rs []*evalrun.ItemResult
			for idx, id := range []string{"a", "b", "c", "d"} {
				for rep := range repeats {
					rs = append(rs, &evalrun.ItemResult{RunID: run.ID, Index: idx, Repeat: rep, ItemID: id, Item: item(id, nil),
						Output: evalrun.String(variant), Scores: []evalrun.ScorerResult{score("exact", pass, 0.5)}})
				}
			}
			return run, rs
		}
		baseRun, baseRes := mk("base", 0, 0)
		candRun, candRes := mk("cand", 1, 1)
		exp, _ := evalrun.ExperimentOf("exp-k", []*evalrun.Run{baseRun, candRun})
		e, err := BuildExperiment(exp, []*Report{Build(baseRun, baseRes), Build(candRun, candRes)}, CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return e.Variant("cand").VsBaseline.Get("exact")
	}
	once, thrice := build(1), build(3)
	for _, d := range []*BaselineDelta{once, thrice} {
		nearPtr(t, "delta", d.Delta, 1, 1e-12)
		nearPtr(t, "p", d.PValue, 0.125, 1e-12)
		if d.Verdict != VerdictSame {
			t.Errorf("verdict = %s, want same (four items are four units of evidence, whatever the repeats)", d.Verdict)
		}
	}
	if once.Paired != 4 || thrice.Paired != 12 || thrice.Improved != 12 {
		t.Errorf("paired = %d and %d (improved %d), want 4 and 12 (12)", once.Paired, thrice.Paired, thrice.Improved)
	}
}
