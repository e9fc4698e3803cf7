package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/evalrun/evalrun"
)

// testResultPagesSearchBudget follows the pages of budgeted searches to
// their end under every sort, with and without other filters: every match
// comes once, in the listing's order; no page examines more than the
// budget or returns more than its size; the pages' Scanned add up to the
// results the other filters keep (each examined once); a bad budget and a
// foreign cursor are refused.
func testResultPagesSearchBudget(t *testing.T, s evalrun.Store) {
	run, all := pagesFixture(t, s)
	p := pager(t, s)
	sorts := []evalrun.ResultPageQuery{
		{}, {Sort: evalrun.SortItemID, Desc: true}, {Sort: evalrun.SortLatency},
		{Sort: evalrun.SortScore, SortScorer: "judge"}, {Sort: evalrun.SortScore, SortScorer: "exact", Desc: true},
	}
	filters := []evalrun.ResultPageQuery{{}, {Tag: "easy"}, {Scorer: "judge"}, {FailedOnly: true}}
	for _, so := range sorts {
		for _, f := range filters {
			for _, search := range []string{"e", "日本", "no such text", "ID-0"} {
				q := f
				q.Sort, q.Desc, q.SortScorer, q.Search = so.Sort, so.Desc, so.SortScorer, search
				want := wantKeys(run, all, q)
				others := q
				others.Search = ""
				candidates := len(wantKeys(run, all, others))
				for _, budget := range []int{1, 2, 5, 100} {
					for _, size := range []int{1, 3} {
						q.SearchBudget = budget
						got, scanned := walkBudgeted(t, p, run.ID, q, size, candidates)
						name := fmt.Sprintf("sort %q filter %+v search %q budget %d size %d", q.SortName(), f, search, budget, size)
						if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
							t.Errorf("%s:\n got  %v\n want %v", name, got, want)
						}
						if scanned != candidates {
							t.Errorf("%s: pages scanned %d results in all, want the %d the other filters keep", name, scanned, candidates)
						}
					}
				}
			}
		}
	}
	first, err := p.QueryResults(t.Context(), run.ID, evalrun.ResultPageQuery{Search: "no such text", SearchBudget: 2, Limit: 2})
	if err != nil || first.Next == nil || len(first.Results) != 0 || first.Scanned != 2 {
		t.Fatalf("first budgeted page: %v, next %q, %d results, scanned %d; want none found in 2 and a next cursor", err, first.Next, len(first.Results), first.Scanned)
	}
	for name, q := range map[string]evalrun.ResultPageQuery{
		"negative budget":      {Search: "x", SearchBudget: -1},
		"cursor of other sort": {Search: "x", SearchBudget: 2, Sort: evalrun.SortLatency, After: first.Next},
		"truncated cursor":     {Search: "x", SearchBudget: 2, After: first.Next[:len(first.Next)-1]},
	} {
		if _, err := p.QueryResults(t.Context(), run.ID, q); !errors.Is(err, evalrun.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

// walkBudgeted follows the pages of a budgeted search and returns the keys
// found and the sum of the pages' Scanned, failing on a page over its size
// or its budget, or more pages than the results could need.
func walkBudgeted(t *testing.T, p evalrun.ResultPager, runID string, q evalrun.ResultPageQuery, size, candidates int) ([]string, int) {
	t.Helper()
	q.Limit = size
	var got []string
	scanned := 0
	for pages := 0; ; pages++ {
		if pages > candidates+1 {
			t.Fatalf("%+v: more pages than results", q)
		}
		page, err := p.QueryResults(t.Context(), runID, q)
		if err != nil {
			t.Fatalf("QueryResults(%+v): %v", q, err)
		}
		if len(page.Results) > size || page.Scanned > q.SearchBudget {
			t.Fatalf("%+v: page of %d results, %d scanned (size %d, budget %d)", q, len(page.Results), page.Scanned, size, q.SearchBudget)
		}
		if page.Next != nil && page.Scanned == 0 {
			t.Fatalf("%+v: a page with a next cursor scanned nothing", q)
		}
		scanned += page.Scanned
		for _, r := range page.Results {
			got = append(got, fmt.Sprintf("%d/%d", r.Index, r.Repeat))
		}
		if page.Next == nil {
			return got, scanned
		}
		q.After = page.Next
	}
}

// testResultPagesSearchBudgetChunks searches a run longer than the stores'
// first chunks (hundreds of results, a budget of 1,000): matches spread
// over it, in input order and a descending score sort, are all found.
func testResultPagesSearchBudgetChunks(t *testing.T, s evalrun.Store) {
	const n = 700
	items := make([]*evalrun.Item, n)
	for i := range items {
		items[i] = item(fmt.Sprintf("c-%03d", i), "question", "")
	}
	mustImport(t, s, "chunks", items)
	run := testRun("chunks-run", "chunks", 1, base)
	mustCreateRun(t, s, run)
	var all []*evalrun.ItemResult
	for i := range n {
		r := result(run.ID, i, 0)
		r.ItemID = items[i].ID
		r.Output = evalrun.String("plain answer")
		if i%97 == 5 { // 5, 102, 199, … 684: across every chunk
			r.Output = evalrun.String("the needle is here")
		}
		all = append(all, r)
	}
	mustWrite(t, s, all...)
	all = scanResults(t, s, run.ID, evalrun.ResultQuery{})
	p := pager(t, s)
	for _, q := range []evalrun.ResultPageQuery{
		{Search: "NEEDLE"}, {Search: "NEEDLE", Sort: evalrun.SortScore, SortScorer: "exact", Desc: true},
	} {
		want := wantKeys(run, all, q)
		if len(want) != 8 {
			t.Fatalf("fixture: %d matches, want 8", len(want))
		}
		for _, budget := range []int{1000, 300} {
			q.SearchBudget = budget
			got, scanned := walkBudgeted(t, p, run.ID, q, 50, n)
			if !slices.Equal(got, want) || scanned != n {
				t.Errorf("sort %q budget %d: found %v, scanned %d; want %v, %d", q.SortName(), budget, got, scanned, want, n)
			}
		}
	}
}
