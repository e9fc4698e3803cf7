package storetest

import (
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// MigratedResultPages checks a store opened from a database left before
// the result-query migration (007) holding dataset "old" version 1 with
// items "a" (metadata {"tags": ["x"]}) and "b" (no metadata), and run runID
// over it (scorer "judge") with result 0 of "a" scored 0.9 by judge and a
// failed result 1 of "b" without scores: the migration filled score_keys
// (the missing score sorts lowest) and item_tags, and later writes keep
// them.
func MigratedResultPages(t *testing.T, s evalrun.Store, runID string) {
	t.Helper()
	p := pager(t, s)
	for _, tc := range []struct {
		q    evalrun.ResultPageQuery
		want string
	}{
		{evalrun.ResultPageQuery{Sort: evalrun.SortScore, SortScorer: "judge"}, "1/0 0/0"},
		{evalrun.ResultPageQuery{Sort: evalrun.SortScore, SortScorer: "judge", Desc: true}, "0/0 1/0"},
		{evalrun.ResultPageQuery{Tag: "x"}, "0/0"},
		{evalrun.ResultPageQuery{Scorer: "judge"}, "1/0"},
	} {
		if got := strings.Join(walkPages(t, p, runID, tc.q, 1), " "); got != tc.want {
			t.Errorf("after the migration, %+v: %s, want %s", tc.q, got, tc.want)
		}
	}
	// Rewriting the failed result with a score moves it.
	r := &evalrun.ItemResult{RunID: runID, Index: 1, ItemID: "b", Attempts: 1,
		Scores: []evalrun.ScorerResult{{Scorer: "judge", Score: evalrun.Float64(1), Passed: true}}}
	mustWrite(t, s, r)
	if got := strings.Join(walkPages(t, p, runID, evalrun.ResultPageQuery{Sort: evalrun.SortScore, SortScorer: "judge"}, 1), " "); got != "0/0 1/0" {
		t.Errorf("after a rewrite: %s, want 0/0 1/0", got)
	}
}
