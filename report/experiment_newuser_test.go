package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// newuserRepeatsExperiment is two variants over two items run three times each:
// six result rows per variant, but two items.
func newuserRepeatsExperiment(t *testing.T) *Experiment {
	t.Helper()
	var runs []*evalrun.Run
	var reps []*Report
	for vi, variant := range []string{"base", "cand"} {
		run := expRun(variant, vi)
		run.Scorers = expScorers[:1]
		var rs []*evalrun.ItemResult
		for idx, id := range []string{"a", "b"} {
			for rep := range 3 {
				rs = append(rs, &evalrun.ItemResult{RunID: run.ID, Index: idx, Repeat: rep, ItemID: id, Item: item(id, nil),
					Output: evalrun.String(variant), Scores: []evalrun.ScorerResult{score("exact", 1, 0.5)}})
			}
		}
		runs = append(runs, run)
		reps = append(reps, Build(run, rs))
	}
	exp, err := evalrun.ExperimentOf("exp-r", runs)
	if err != nil {
		t.Fatal(err)
	}
	e, err := BuildExperiment(exp, reps, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestExperimentHeaderCountsItemsNotRepeats: with --repeat 3, the header
// of the matrix and of the Markdown says 2 items run 3 times, not "items
// 6" (the rows), which contradicted the "2 items" evalrun run printed when
// the experiment started.
func TestExperimentHeaderCountsItemsNotRepeats(t *testing.T) {
	e := newuserRepeatsExperiment(t)
	var table, md bytes.Buffer
	if err := WriteExperimentTable(&table, e); err != nil {
		t.Fatal(err)
	}
	if err := WriteExperimentMarkdown(&md, e); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(table.String(), "\n")
	if !strings.HasSuffix(first, "variants 2  items 2 × 3 repeats") {
		t.Errorf("table header = %q, want it to end with %q", first, "variants 2  items 2 × 3 repeats")
	}
	if want := "| `exp-r` | support v3 | base | 2 | 2 × 3 repeats |"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}
}

// TestExperimentMarkdownMatrixShowsFailures: a variant whose target failed
// on some items has a pass rate over the items it answered only; the
// Markdown matrix, the first table of a PR comment, says how many failed
// next to it (as the terminal matrix and the viewer do), so that a
// "completed" variant at 100% does not hide its failures.
func TestExperimentMarkdownMatrixShowsFailures(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteExperimentMarkdown(&buf, expFixtureBuilt(t)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"| variant | target | run | status | exact | judge | macro | failures |",
		"| **mini** (baseline) | openai gpt-mini | `20260102T030405-mini` | completed | 40.0% [16.8–68.7] | 90.0% [59.6–98.2] | 65.0% | 0 |",
		"| big | openai gpt-big | `20260102T030405-big` | completed | 100.0% [72.2–100.0] ▲ | 70.0% [39.7–89.2] | 85.0% | 1 |",
		"| broken | openai gpt-broken | `20260102T030405-broken` | completed | — | — ▼ | — | 10 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}
