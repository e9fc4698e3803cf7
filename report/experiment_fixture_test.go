package report

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// The experiment fixture: ten items q0…q9, scorers exact (threshold 0.5,
// scores 1 or 0) and judge (threshold 0.7, scores 0.9 or 0.3), four
// variants:
//
//	variant  exact passes     judge passes          target
//	mini     q0–q3 (4/10)     q0–q8 (9/10)          ok (the baseline)
//	big      all (10/10)      q3–q9 (7/10)          ok; fails on q10, an item only big has
//	terse    none (0/10)      all (10/10)           ok
//	broken   —                —                     fails on every item
//
// The hand-computed statistics are in TestExperimentMatrix.
const expItems = 10

var expScorers = []evalrun.ScorerInfo{
	{Name: "exact", Kind: "exact_match", Threshold: 0.5},
	{Name: "judge", Kind: "llm_judge", Threshold: 0.7},
}

func expRun(variant string, vi int) *evalrun.Run {
	return &evalrun.Run{
		ID: "20260102T030405-" + variant, Name: "support-bot", Dataset: "support", DatasetVersion: 3,
		Target:     evalrun.TargetInfo{Kind: "openai", Name: "gpt-" + variant},
		Scorers:    expScorers,
		Experiment: "exp-20260102T030405-00000001", Variant: variant, VariantIndex: vi,
		Status: evalrun.RunCompleted, Total: expItems,
		CreatedAt: t0, StartedAt: t0, CompletedAt: t0.Add(2 * time.Second),
	}
}

// expResult is variant's result for item i: exact and judge passed or
// not; failed makes the target fail (no scores).
func expResult(run *evalrun.Run, i int, exact, judge, failed bool) *evalrun.ItemResult {
	id := fmt.Sprintf("q%d", i)
	r := &evalrun.ItemResult{RunID: run.ID, Index: i, ItemID: id, Item: item(id, []any{"t" + fmt.Sprint(i%2)}),
		Attempts: 1, Latency: time.Duration(100+10*i) * time.Millisecond,
		Usage: evalrun.Usage{InputTokens: evalrun.Int64(10), OutputTokens: evalrun.Int64(2), CostUSD: evalrun.Float64(0.0001)}}
	if failed {
		r.Error, r.ErrorKind = "connection refused", evalrun.ErrorTransient
		r.Usage = evalrun.Usage{}
		return r
	}
	r.Output = evalrun.String(run.Variant + " says " + id)
	e, j := 0.0, 0.3
	if exact {
		e = 1
	}
	if judge {
		j = 0.9
	}
	r.Scores = []evalrun.ScorerResult{score("exact", e, 0.5), score("judge", j, 0.7)}
	return r
}

// expFixture returns the experiment and its variants' results.
func expFixture() (*evalrun.Experiment, [][]*evalrun.ItemResult) {
	type pattern struct {
		name         string
		exact, judge func(i int) bool
		failed       bool
	}
	patterns := []pattern{
		{"mini", func(i int) bool { return i < 4 }, func(i int) bool { return i < 9 }, false},
		{"big", func(int) bool { return true }, func(i int) bool { return i >= 3 }, false},
		{"terse", func(int) bool { return false }, func(int) bool { return true }, false},
		{"broken", nil, nil, true},
	}
	var runs []*evalrun.Run
	var results [][]*evalrun.ItemResult
	for vi, p := range patterns {
		run := expRun(p.name, vi)
		var rs []*evalrun.ItemResult
		for i := range expItems {
			if p.failed {
				rs = append(rs, expResult(run, i, false, false, true))
			} else {
				rs = append(rs, expResult(run, i, p.exact(i), p.judge(i), false))
			}
		}
		if p.name == "big" {
			// q10: only in big, and its target failed there.
			rs = append(rs, expResult(run, expItems, false, false, true))
			run.Total++
		}
		for _, r := range rs {
			if r.Failed() {
				run.Failed++
			} else {
				run.Succeeded++
			}
		}
		runs = append(runs, run)
		results = append(results, rs)
	}
	exp, err := evalrun.ExperimentOf(runs[0].Experiment, runs)
	if err != nil {
		panic(err)
	}
	return exp, results
}

// expReports builds the variants' reports with their item rows.
func expReports(exp *evalrun.Experiment, results [][]*evalrun.ItemResult) []*Report {
	reps := make([]*Report, len(exp.Runs))
	for i, run := range exp.Runs {
		reps[i] = Build(run, results[i])
	}
	return reps
}

func expFixtureBuilt(t testing.TB) *Experiment {
	t.Helper()
	exp, results := expFixture()
	e, err := BuildExperiment(exp, expReports(exp, results), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// expStore is a RunStore holding the fixture's runs.
type expStoreT struct {
	evalrun.RunStore
	runs    map[string]*evalrun.Run
	results map[string][]*evalrun.ItemResult
}

func expStore(exp *evalrun.Experiment, results [][]*evalrun.ItemResult) *expStoreT {
	s := &expStoreT{runs: map[string]*evalrun.Run{}, results: map[string][]*evalrun.ItemResult{}}
	for i, r := range exp.Runs {
		s.runs[r.ID] = r
		s.results[r.ID] = results[i]
	}
	return s
}

func (s *expStoreT) GetRun(_ context.Context, id string) (*evalrun.Run, error) {
	r, ok := s.runs[id]
	if !ok {
		return nil, evalrun.ErrNotFound
	}
	return r, nil
}

func (s *expStoreT) ScanResults(ctx context.Context, id string, _ evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	for _, r := range s.results[id] {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}
