package sqlstore

import (
	"cmp"
	"slices"

	"github.com/evalrun/evalrun"
)

// resultKey is what identifies a stored result.
type resultKey struct {
	run         string
	index, rept int
}

// LastOfEachKey drops all but the last result of each key (RunID, Index,
// Repeat), keeping order: of a key written twice in one batch, the last
// result wins. It returns results itself when every key is distinct.
func LastOfEachKey(results []*evalrun.ItemResult) []*evalrun.ItemResult {
	last := make(map[resultKey]int, len(results))
	for i, r := range results {
		last[resultKey{r.RunID, r.Index, r.Repeat}] = i
	}
	if len(last) == len(results) {
		return results
	}
	out := make([]*evalrun.ItemResult, 0, len(last))
	for i, r := range results {
		if last[resultKey{r.RunID, r.Index, r.Repeat}] == i {
			out = append(out, r)
		}
	}
	return out
}

// SortScores orders scores by their scorer's position in order (the run's
// scorers); scores of scorers the run does not name follow, as written.
func SortScores(scores []evalrun.ScorerResult, order map[string]int) {
	if len(scores) < 2 || len(order) == 0 {
		return
	}
	pos := func(s *evalrun.ScorerResult) int {
		if p, ok := order[s.Scorer]; ok {
			return p
		}
		return len(order)
	}
	slices.SortStableFunc(scores, func(a, b evalrun.ScorerResult) int { return cmp.Compare(pos(&a), pos(&b)) })
}
