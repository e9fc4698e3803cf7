package report_test

import (
	"fmt"
	"os"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/report"
)

func ExampleBuilder() {
	run := &evalrun.Run{ID: "r1", Status: evalrun.RunCompleted, Total: 2, Succeeded: 2,
		Scorers: []evalrun.ScorerInfo{{Name: "exact_match", Threshold: 0.5}}}
	b := report.NewBuilder(run)
	for i, v := range []float64{1, 0} {
		b.Add(&evalrun.ItemResult{Index: i, ItemID: fmt.Sprint("q", i), Output: evalrun.String("a"),
			Scores: []evalrun.ScorerResult{{Scorer: "exact_match", Score: &v, Passed: v >= 0.5}}})
	}
	rep := b.Report()
	s := rep.Scorer("exact_match")
	fmt.Println(s.Count, *s.Mean, *s.PassRate, s.Histogram)
	// Output: 2 0.5 0.5 [1 0 0 0 0 0 0 0 0 1]
}

func ExampleParseCondition() {
	c, err := report.ParseCondition("pass_rate(exact_match) < 0.9")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Metric, c.Scorer, c.Op, c.Value)
	fmt.Println(c.Check([]string{"judge"}))

	_, err = report.ParseCondition("pass_rate(exact_match < 0.9")
	fmt.Println(err)
	// Output:
	// pass_rate exact_match < 0.9
	// condition "pass_rate(exact_match) < 0.9": column 11: unknown scorer "exact_match" (scorers: judge)
	// condition "pass_rate(exact_match < 0.9": column 10: missing ")" after the scorer name
}

func ExampleEvaluate() {
	v := 0.6
	run := &evalrun.Run{ID: "r1", Status: evalrun.RunCompleted, Total: 1, Succeeded: 1,
		Scorers: []evalrun.ScorerInfo{{Name: "judge", Threshold: 0.7}}}
	rep := report.Build(run, []*evalrun.ItemResult{{ItemID: "q1", Output: evalrun.String("a"),
		Scores: []evalrun.ScorerResult{{Scorer: "judge", Score: &v}}}})
	conds, _ := report.ParseConditions([]string{"mean(judge) < 0.7", "failed > 0"})
	for _, b := range report.Evaluate(rep, conds) {
		fmt.Println("breached:", b)
	}
	_ = report.WriteMarkdown(os.Stdout, rep, report.MarkdownOptions{MaxFailures: -1})
	// Output:
	// breached: mean(judge) < 0.7 (actual 0.6)
	// ## evalrun: r1 — completed
	//
	// | run | dataset | target | total | succeeded | failed | skipped | duration |
	// | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |
	// | `r1` | — | — | 1 | 1 | 0 | 0 | — |
	//
	// ### Scorers
	//
	// | scorer | count | errors | mean | p50 | p95 | pass rate | threshold |
	// | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
	// | judge | 1 | 0 | 0.600 | 0.600 | 0.600 | 0.0% | 0.70 |
	//
	// **Macro pass rate:** 0.0%
	//
	// ### Cohorts (pass rate)
	//
	// | cohort | items | judge |
	// | --- | ---: | ---: |
	// | *(untagged)* | 1 | 0.0% |
	//
	// ### Usage
	//
	// | | target | reported | scorers | reported |
	// | --- | ---: | ---: | ---: | ---: |
	// | input tokens | — | 0 | — | 0 |
	// | output tokens | — | 0 | — | 0 |
	// | cost (USD) | — | 0 | — | 0 |
	//
	// **Latency (ms):** mean — · p50 — · p95 — · max — (0 reported)
	//
	// ### Failures (0)
	//
	// None.
}
