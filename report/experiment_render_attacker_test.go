package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// TestExperimentMarkdownDisagreementsBounded: the table of items where the
// variants disagree multiplies rows × variants × scorers; with 32
// variants and a few long scorer names it made a 600 KB PR comment (68 MB
// with 500 scorers), far past GitHub's 65,536-character limit for a
// comment. It stays under a bound, saying how many items it left out.
func TestExperimentMarkdownDisagreementsBounded(t *testing.T) {
	const variants, items, scorers = 32, 20, 5
	var infos []evalrun.ScorerInfo
	for s := range scorers {
		infos = append(infos, evalrun.ScorerInfo{Name: fmt.Sprintf("s%d%s", s, strings.Repeat("x", 190)), Threshold: 0.5})
	}
	var runs []*evalrun.Run
	var reps []*Report
	for v := range variants {
		run := expRun(fmt.Sprintf("v%d", v), v)
		run.Scorers = infos
		var rs []*evalrun.ItemResult
		for i := range items {
			r := expResult(run, i, true, true, false)
			r.Output = evalrun.String(strings.Repeat("o", 100))
			r.Scores = nil
			for _, s := range infos {
				r.Scores = append(r.Scores, score(s.Name, float64(v%2), 0.5))
			}
			rs = append(rs, r)
		}
		runs = append(runs, run)
		reps = append(reps, nil)
		reps[v] = Build(run, rs)
	}
	exp, err := evalrun.ExperimentOf(runs[0].Experiment, runs)
	if err != nil {
		t.Fatal(err)
	}
	e, err := BuildExperiment(exp, reps, CompareOptions{Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	md := string(render(t, func(b *bytes.Buffer) error { return WriteExperimentMarkdown(b, e) }))
	_, table, ok := strings.Cut(md, "### Items where variants disagree")
	if !ok {
		t.Fatalf("no disagreement table:\n%.2000s", md)
	}
	if len(table) > 48<<10 {
		t.Errorf("the disagreement table is %d bytes, more than 48 KiB", len(table))
	}
	if !strings.Contains(table, "| q0 |") {
		t.Errorf("the first disagreeing item is not shown:\n%.3000s", table)
	}
	if !strings.Contains(table, " more\n") {
		t.Errorf("the items left out are not counted:\n%.3000s", table[max(0, len(table)-3000):])
	}
}
