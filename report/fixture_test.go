package report

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fixtureRun is the run of [fixtureResults]: three scorers, one of which
// (broken) fails on every item, one persist error.
func fixtureRun() *evalrun.Run {
	return &evalrun.Run{
		ID: "20260102T030405-abcd1234", Name: "support-bot",
		Dataset: "support", DatasetVersion: 3,
		Target: evalrun.TargetInfo{Kind: "http", Name: "answer-api"},
		Scorers: []evalrun.ScorerInfo{
			{Name: "exact", Kind: "exact_match", Threshold: 0.5},
			{Name: "judge", Kind: "llm_judge", Threshold: 0.7},
			{Name: "broken", Kind: "expr", Threshold: 0.5},
		},
		Status: evalrun.RunCompleted, Total: 6, Succeeded: 5, Failed: 1,
		PersistErrors: 1,
		CreatedAt:     t0, StartedAt: t0, CompletedAt: t0.Add(12500 * time.Millisecond),
	}
}

func score(name string, v float64, threshold float64) evalrun.ScorerResult {
	return evalrun.ScorerResult{Scorer: name, Score: &v, Passed: v >= threshold, Reason: "r:" + name}
}

func brokenScore() evalrun.ScorerResult {
	return evalrun.ScorerResult{Scorer: "broken", Error: "undefined: foo", ErrorKind: evalrun.ErrorPermanent}
}

func item(id string, tags any) *evalrun.Item {
	it := &evalrun.Item{ID: id, Input: evalrun.String("question " + id), Expected: evalrun.String("answer " + id)}
	if tags != nil {
		it.Metadata = map[string]any{"tags": tags}
	}
	return it
}

// fixtureResults are six results; the hand-computed aggregates are in
// TestBuilderAggregates.
func fixtureResults() []*evalrun.ItemResult {
	ms := time.Millisecond
	q6 := item("q6", "refund")
	q6.Metadata["adversarial"] = map[string]any{
		"category": "Prompt Injection", "severity": "HIGH", "label": "ignore\nprevious",
		"frameworks": []any{"OWASP-LLM01", "OWASP-LLM01", " MITRE ATLAS ", 7},
		"payload":    "<script>never reported</script>",
	}
	judgeUsage := evalrun.ScorerResult{}
	judgeUsage = score("judge", 1.0, 0.7)
	judgeUsage.Usage = evalrun.Usage{InputTokens: evalrun.Int64(50), OutputTokens: evalrun.Int64(3), CostUSD: evalrun.Float64(0.0002)}
	rs := []*evalrun.ItemResult{
		{Index: 0, ItemID: "q1", Item: item("q1", []any{"billing"}), Output: evalrun.String("answer q1"),
			Attempts: 1, Latency: 100 * ms,
			Usage:  evalrun.Usage{InputTokens: evalrun.Int64(10), OutputTokens: evalrun.Int64(5), CostUSD: evalrun.Float64(0.001)},
			Scores: []evalrun.ScorerResult{score("exact", 1, 0.5), score("judge", 0.25, 0.7), brokenScore()}},
		{Index: 1, ItemID: "q2", Item: item("q2", []any{"billing", "refund", "billing", " "}), Output: evalrun.String("nope"),
			Attempts: 1, Latency: 200 * ms,
			Usage:  evalrun.Usage{InputTokens: evalrun.Int64(0)},
			Scores: []evalrun.ScorerResult{score("exact", 0, 0.5), score("judge", 0.5, 0.7), brokenScore()}},
		{Index: 2, ItemID: "q3", Item: item("q3", nil), Output: json.RawMessage(`{"answer":"q3"}`),
			Attempts: 1, Latency: 300 * ms,
			Scores: []evalrun.ScorerResult{score("exact", 1, 0.5), score("judge", 0.75, 0.7), brokenScore()}},
		{Index: 3, ItemID: "q4", Item: item("q4", []string{"untagged"}), Output: evalrun.String("x"),
			Attempts: 1, Latency: 400 * ms,
			Scores: []evalrun.ScorerResult{score("exact", 0, 0.5), judgeUsage, brokenScore()}},
		{Index: 4, ItemID: "q5", Item: item("q5", []any{}), Error: "deadline exceeded after 3 attempts",
			ErrorKind: evalrun.ErrorTimeout, Attempts: 3, RetryCount: 2, Latency: 500 * ms,
			Usage: evalrun.Usage{InputTokens: evalrun.Int64(7)}},
		{Index: 5, ItemID: "q6", Item: q6, Output: evalrun.String("answer q6"), Attempts: 1,
			Scores: []evalrun.ScorerResult{score("exact", 1, 0.5), score("judge", sub(0.7, 0.4), 0.7), brokenScore()}},
	}
	for _, r := range rs {
		r.RunID = "20260102T030405-abcd1234"
		r.StartedAt, r.CompletedAt = t0, t0.Add(r.Latency)
	}
	return rs
}

func fixtureReport(t testing.TB, opts ...Option) *Report {
	t.Helper()
	return Build(fixtureRun(), fixtureResults(), opts...)
}

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report/ -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the golden file (go test ./report/ -update rewrites it)\n--- got:\n%s\n--- want:\n%s", name, got, want)
	}
}

// fakeStore is a RunStore with one run, for FromStore.
type fakeStore struct {
	evalrun.RunStore
	run     *evalrun.Run
	results []*evalrun.ItemResult
	failAt  int
}

func (s *fakeStore) GetRun(_ context.Context, id string) (*evalrun.Run, error) {
	if s.run == nil || id != s.run.ID {
		return nil, evalrun.ErrNotFound
	}
	return s.run, nil
}

func (s *fakeStore) ScanResults(ctx context.Context, id string, _ evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	for i, r := range s.results {
		if s.failAt > 0 && i == s.failAt {
			return context.DeadlineExceeded
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// sub returns a−b computed at run time (a constant 0.7-0.4 is exactly 0.3;
// the float64 subtraction gives 0.29999999999999993).
func sub(a, b float64) float64 { return a - b }
