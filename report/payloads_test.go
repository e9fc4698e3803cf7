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

// The untagged cohort shares the overall scores while every result is
// untagged and gets its own from the first tagged one: its statistics are
// those of its results alone either way.
func TestUntaggedCohortAfterTagged(t *testing.T) {
	res := func(i int, score float64, tags ...any) *evalrun.ItemResult {
		it := &evalrun.Item{ID: string(rune('a' + i))}
		if len(tags) > 0 {
			it.Metadata = map[string]any{"tags": tags}
		}
		return &evalrun.ItemResult{Index: i, ItemID: it.ID, Item: it,
			Scores: []evalrun.ScorerResult{{Scorer: "s", Score: &score, Passed: score >= 0.5}}}
	}
	for name, rs := range map[string][]*evalrun.ItemResult{
		"all untagged": {res(0, 0), res(1, 1), res(2, 0.5)},
		"tagged later": {res(0, 0), res(1, 1), res(2, 0.9, "t"), res(3, 0.5)},
	} {
		rep := Build(&evalrun.Run{ID: "r"}, rs, WithoutItems())
		var untagged *Cohort
		for i := range rep.Cohorts {
			if rep.Cohorts[i].Key == UntaggedCohort {
				untagged = &rep.Cohorts[i]
			}
		}
		if untagged == nil || untagged.Count != 3 {
			t.Fatalf("%s: untagged cohort %+v, want 3 results", name, untagged)
		}
		st := untagged.Scorers[0]
		if st.Count != 3 || *st.Mean != 0.5 || *st.PassRate != 2.0/3 {
			t.Fatalf("%s: untagged stats count %d mean %v pass %v; want 3, 0.5, 2/3", name, st.Count, *st.Mean, *st.PassRate)
		}
		if want := len(rs); rep.Scorers[0].Count != want {
			t.Fatalf("%s: overall count %d, want %d", name, rep.Scorers[0].Count, want)
		}
	}
}
