package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/evalrun/evalrun"
)

// testResultPagesTieWalk pages descending score sorts of a run long enough
// for long runs of tied scores (1,300 results a value), filtered by a
// quarter of its items' tag, a tag of two items, its failures: filters
// that keep many, few and almost no rows of a value, and a scorer of 40
// values. Every kept result comes once, in order, with ties by (index,
// repeat) across page boundaries, at page sizes that end pages inside a
// run of ties.
func testResultPagesTieWalk(t *testing.T, s evalrun.Store) {
	const n = 2600
	items := make([]*evalrun.Item, n)
	for i := range items {
		it := item(fmt.Sprintf("w-%04d", i), "question", "")
		switch {
		case i%1300 == 5:
			it.Metadata = map[string]any{"tags": []any{"rare", "quarter"}}
		case i%4 == 0:
			it.Metadata = map[string]any{"tags": "quarter"}
		}
		items[i] = it
	}
	mustImport(t, s, "walk", items)
	run := testRun("walk-run", "walk", 1, base)
	mustCreateRun(t, s, run)
	var all []*evalrun.ItemResult
	for i := range n {
		r := result(run.ID, i, 0)
		r.ItemID = items[i].ID
		// Result 0 has the 17th highest exact score: where a walk of 16
		// values hands over to the sorting query.
		judge, exact := float64(i%2), float64((i+23)%40)/40
		r.Scores[0].Score, r.Scores[0].Passed = &exact, false
		r.Scores[1].Score, r.Scores[1].Passed = &judge, judge >= 0.7
		if i%97 == 3 {
			r.Scores = r.Scores[:1] // no judge: -Inf, sorts last
		}
		if i%50 == 7 {
			r.Output, r.Scores = nil, nil
			r.Error, r.ErrorKind = "HTTP 503", evalrun.ErrorTransient
		}
		all = append(all, r)
	}
	mustWrite(t, s, all...)
	all = scanResults(t, s, run.ID, evalrun.ResultQuery{})
	p := pager(t, s)
	judge := evalrun.ResultPageQuery{Sort: evalrun.SortScore, SortScorer: "judge", Desc: true}
	exact := evalrun.ResultPageQuery{Sort: evalrun.SortScore, SortScorer: "exact", Desc: true}
	for _, q := range []evalrun.ResultPageQuery{
		judge, exact,
		with(judge, func(q *evalrun.ResultPageQuery) { q.Tag = "quarter" }),
		with(judge, func(q *evalrun.ResultPageQuery) { q.Tag = "rare" }),
		with(judge, func(q *evalrun.ResultPageQuery) { q.FailedOnly = true }),
		with(judge, func(q *evalrun.ResultPageQuery) { q.Scorer = "judge" }),
		with(exact, func(q *evalrun.ResultPageQuery) { q.Tag = "quarter" }),
		with(exact, func(q *evalrun.ResultPageQuery) { q.Tag = "rare" }),
	} {
		want := wantKeys(run, all, q)
		if len(want) == 0 {
			t.Fatalf("fixture: %+v keeps nothing", q)
		}
		for _, size := range []int{7, 50, 500} {
			if len(want)/size >= 100 {
				continue // walkPages' bound
			}
			if got := walkPages(t, p, run.ID, q, size); !slices.Equal(got, want) {
				t.Errorf("%+v size %d: got %d keys, want %d\n got  %v\n want %v", q, size, len(got), len(want), head(got), head(want))
			}
		}
	}
}

func with(q evalrun.ResultPageQuery, f func(*evalrun.ResultPageQuery)) evalrun.ResultPageQuery {
	f(&q)
	return q
}

// head is the start of keys, for a readable failure.
func head(keys []string) []string { return keys[:min(len(keys), 30)] }
