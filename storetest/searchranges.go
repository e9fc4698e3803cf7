package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/evalrun/evalrun"
)

// testResultPagesSearchRanges searches windows with gaps of every width
// between their results (a tag on items 0, 1, 3, 6, 10…: gaps 0 to 12,
// repeated), with two repeats per item, one of them failed, and matches
// in outputs and inputs: a store that
// reads a window's nearby results as ranges (SQLite) must find the
// matches of the window, each once, and none of those between its
// results, on the first page and following the cursors.
func testResultPagesSearchRanges(t *testing.T, s evalrun.Store) {
	const n = 400
	tagged := map[int]bool{}
	for i, gap := 0, 0; i < n; i, gap = i+gap+1, (gap+1)%13 {
		tagged[i] = true
	}
	items := make([]*evalrun.Item, n)
	for i := range items {
		items[i] = item(fmt.Sprintf("r-%03d", i), "question", "")
		if i%5 == 0 {
			items[i] = item(fmt.Sprintf("r-%03d", i), "a NEEDLE question", "")
		}
		if tagged[i] {
			items[i].Metadata = map[string]any{"tags": "kept"}
		}
	}
	mustImport(t, s, "ranges", items)
	run := testRun("ranges-run", "ranges", 1, base)
	mustCreateRun(t, s, run)
	var all []*evalrun.ItemResult
	for i := range n {
		for rep := range 2 {
			r := result(run.ID, i, rep)
			r.ItemID = items[i].ID
			r.Output = evalrun.String("plain answer")
			if i%3 != 0 || rep == 1 {
				// Between the window's results as well as in it.
				r.Output = evalrun.String("the Needle is here")
			}
			if rep == 1 && i%2 == 0 {
				r.Output, r.Error, r.ErrorKind = nil, "HTTP 503 needle", evalrun.ErrorTransient
			}
			all = append(all, r)
		}
	}
	mustWrite(t, s, all...)
	all = scanResults(t, s, run.ID, evalrun.ResultQuery{})
	p := pager(t, s)
	for _, f := range []evalrun.ResultPageQuery{
		{Tag: "kept"}, {Tag: "kept", FailedOnly: true}, {FailedOnly: true}, {},
		{Tag: "kept", Sort: evalrun.SortScore, SortScorer: "judge", Desc: true},
	} {
		q := f
		q.Search = "needle"
		want := wantKeys(run, all, q)
		others := q
		others.Search = ""
		candidates := len(wantKeys(run, all, others))
		if len(want) == 0 || len(want) == candidates {
			t.Fatalf("fixture: %d matches of %d", len(want), candidates)
		}
		for _, budget := range []int{1000, 37} {
			q.SearchBudget = budget
			for _, size := range []int{50, 7} {
				got, scanned := walkBudgeted(t, p, run.ID, q, size, candidates)
				if !slices.Equal(got, want) || scanned != candidates {
					t.Errorf("filter %+v budget %d size %d: found %v, scanned %d;\nwant %v, %d", f, budget, size, got, scanned, want, candidates)
				}
			}
		}
	}
}
