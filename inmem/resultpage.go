package inmem

import (
	"context"
	"slices"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/resultq"
)

var _ evalrun.ResultPager = (*Store)(nil)

// QueryResults implements [evalrun.ResultPager] by filtering and sorting a
// snapshot of the run's results: the reference semantics, in memory.
func (s *Store) QueryResults(ctx context.Context, runID string, q evalrun.ResultPageQuery) (*evalrun.ResultPage, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	after, err := resultq.Decode(q)
	if err != nil {
		return nil, err
	}
	list, run, byID, err := s.snapshot(runID)
	if err != nil {
		return nil, err
	}
	type entry struct {
		c resultq.Cursor
		r *evalrun.ItemResult
	}
	// A budgeted search filters the other way round: the listing of the
	// other filters first, then the search within the budget's window.
	budgeted := q.Search != "" && q.SearchBudget > 0
	keep := q
	if budgeted {
		keep.Search = ""
	}
	var matched []entry
	for _, r := range list {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v := *r
		v.Item = byID[r.ItemID]
		if !keep.KeepsResult(run, &v) {
			continue
		}
		matched = append(matched, entry{resultq.Of(q, r), r})
	}
	page := &evalrun.ResultPage{Total: -1}
	if q.Count {
		page.Total = len(matched)
		if budgeted {
			page.Total = 0
			for _, e := range matched {
				v := *e.r
				v.Item = byID[e.r.ItemID]
				if q.KeepsResult(run, &v) {
					page.Total++
				}
			}
		}
	}
	slices.SortFunc(matched, func(a, b entry) int { return resultq.Compare(q, &a.c, &b.c) })
	start := 0
	if after != nil {
		start, _ = slices.BinarySearchFunc(matched, after, func(e entry, c *resultq.Cursor) int {
			if resultq.Compare(q, &e.c, c) <= 0 {
				return -1
			}
			return 1
		})
	}
	size := q.PageSize()
	if budgeted {
		matched = matched[start:]
		start = 0
		window := matched[:min(q.SearchBudget, len(matched))]
		var found []entry
		for i, e := range window {
			v := *e.r
			v.Item = byID[e.r.ItemID]
			if !q.KeepsResult(run, &v) {
				continue
			}
			if len(found) == size {
				// More matches follow the full page.
				page.Next = found[size-1].c.Encode()
				break
			}
			found = append(found, e)
			page.Scanned = i + 1
		}
		if page.Next == nil && len(window) == q.SearchBudget && len(matched) > len(window) {
			page.Next, page.Scanned = window[len(window)-1].c.Encode(), len(window)
		} else if page.Next == nil {
			page.Scanned = len(window)
		}
		matched = found
	}
	end := min(start+size, len(matched))
	order := make(map[string]int, len(run.Scorers))
	for i, sc := range run.Scorers {
		order[sc.Name] = i
	}
	for _, e := range matched[start:end] {
		page.Results = append(page.Results, copyResult(e.r, byID[e.r.ItemID], order, q.SkipPayloads, false))
	}
	if !budgeted && end < len(matched) && end > start {
		page.Next = matched[end-1].c.Encode()
	}
	return page, nil
}
