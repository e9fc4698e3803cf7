package report

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
)

// queryStore records the queries of ScanResults.
type queryStore struct {
	evalrun.RunStore
	queries []evalrun.ResultQuery
}

func (s *queryStore) ScanResults(ctx context.Context, runID string, q evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	s.queries = append(s.queries, q)
	return s.RunStore.ScanResults(ctx, runID, q, fn)
}

// A report without item rows asks the store for results without payloads,
// unless the run may carry trajectories (the agent summary reads them);
// with item rows it reads everything. The aggregates are the same.
func TestFromStoreSkipsPayloads(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		config   string
		noItems  bool
		wantSkip bool
	}{
		{"echo without items", `{"target":{"kind":"echo"}}`, true, true},
		{"echo with items", `{"target":{"kind":"echo"}}`, false, false},
		{"http trajectory", `{"target":{"kind":"http","trajectory":"steps"}}`, true, false},
		{"agent tools", `{"target":{"kind":"openai","tools":[]}}`, true, false},
		{"library run, no config", ``, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := inmem.New()
			run := &evalrun.Run{ID: "r1", Dataset: "d", Status: evalrun.RunCompleted, Total: 1, Succeeded: 1,
				Scorers: []evalrun.ScorerInfo{{Name: "exact", Threshold: 0.5}}}
			if tc.config != "" {
				run.Config = json.RawMessage(tc.config)
			}
			one := 1.0
			seed(t, st, run, []*evalrun.ItemResult{{RunID: "r1", ItemID: "a", Item: &evalrun.Item{ID: "a", Input: evalrun.String("x")},
				Output: json.RawMessage(`"x"`), Scores: []evalrun.ScorerResult{{Scorer: "exact", Score: &one, Passed: true}}}})
			qs := &queryStore{RunStore: st}
			var opts []Option
			if tc.noItems {
				opts = append(opts, WithoutItems())
			}
			rep, err := FromStore(ctx, qs, "r1", opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(qs.queries) != 1 || qs.queries[0].SkipPayloads != tc.wantSkip {
				t.Fatalf("queries %+v, want one with SkipPayloads %v", qs.queries, tc.wantSkip)
			}
			if rep.Run.Succeeded != 1 || rep.Scorers[0].PassRate == nil || *rep.Scorers[0].PassRate != 1 {
				t.Fatalf("aggregates: succeeded %d, scorers %+v", rep.Run.Succeeded, rep.Scorers)
			}
		})
	}
}
