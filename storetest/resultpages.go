package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/resultq"
)

// pagesFixture stores a run whose results exercise every sort and filter of
// ResultPager: ties of latency and score, missing scores (a failed target,
// a scorer error, a result without one scorer's score), repeats, tags (a
// string and lists), tool errors, outputs and inputs with markup, quotes,
// wildcards and non-ASCII text. It returns the run and every result as
// stored (with items).
func pagesFixture(t *testing.T, s evalrun.Store) (*evalrun.Run, []*evalrun.ItemResult) {
	t.Helper()
	inputs := []string{
		"plain question", "<b>bold</b> markup", `say "hi" now`, "100% sure", "snake_case name",
		"café au lait", "日本語のテキスト", "emoji 🎉 party", "MiXeD CaSe Hello", "tab\there", "x", "y",
	}
	items := make([]*evalrun.Item, len(inputs))
	for i, in := range inputs {
		it := item(fmt.Sprintf("id-%02d", (i*7)%12), in, "")
		switch i % 4 {
		case 0:
			it.Metadata = map[string]any{"tags": "easy"}
		case 1:
			it.Metadata = map[string]any{"tags": []any{"hard", "math"}}
		case 2:
			it.Metadata = map[string]any{"tags": []any{"easy", 3, "tricky%"}}
		}
		items[i] = it
	}
	mustImport(t, s, "pages", items)
	run := testRun("pages-run", "pages", 1, base)
	mustCreateRun(t, s, run)
	outputs := []string{
		"the answer", "<i>italic</i> & more", `he said "yes"`, "50%_off", "under_score",
		"ÉCOLE déjà", "東京 日本", "🎉🎉", "HELLO world", "line\nbreak", "x", "y",
	}
	var all []*evalrun.ItemResult
	for i := range items {
		for rep := range 1 + min(i%3, 1) - i%3/2 { // items 1, 4, 7, 10 have two repeats
			r := result(run.ID, i, rep)
			r.ItemID = items[i].ID
			r.Output = evalrun.String(outputs[i])
			r.Latency = time.Duration(i%4) * time.Millisecond // ties
			exact := float64((i+rep)%3) / 2                   // 0, 0.5, 1: ties
			r.Scores[0].Score, r.Scores[0].Passed = evalrun.Float64(exact), exact >= 1
			switch {
			case i == 3:
				r.Output, r.Scores = nil, nil
				r.Error, r.ErrorKind = "HTTP 500: boom", evalrun.ErrorTransient
			case i == 5:
				r.Scores[1] = evalrun.ScorerResult{Scorer: "judge", Error: "judge down", ErrorKind: evalrun.ErrorTransient}
			case i == 8:
				r.Scores = r.Scores[:1] // no judge score at all
			case i == 9 && rep == 0:
				r.Scores[1].Score, r.Scores[1].Passed = evalrun.Float64(0.9), false // above threshold, not passed
			}
			if i == 2 || i == 6 {
				r.Trajectory = &evalrun.Trajectory{Calls: []evalrun.ToolCall{
					{Name: "search", Args: json.RawMessage(`{"error": "not a failure"}`)},
					{Name: "fetch", Args: json.RawMessage(`{}`), Error: map[bool]string{true: "timeout"}[i == 6]},
				}}
			}
			all = append(all, r)
		}
	}
	mustWrite(t, s, all...)
	return run, scanResults(t, s, run.ID, evalrun.ResultQuery{})
}

func pager(t *testing.T, s evalrun.Store) evalrun.ResultPager {
	t.Helper()
	p, ok := s.(evalrun.ResultPager)
	if !ok {
		t.Fatalf("%T does not implement evalrun.ResultPager", s)
	}
	return p
}

// walkPages reads every page of q (of size size) and returns the keys
// "index/repeat" in order, failing on a page over size, a cursor on an
// empty page or more pages than results.
func walkPages(t *testing.T, p evalrun.ResultPager, runID string, q evalrun.ResultPageQuery, size int) []string {
	t.Helper()
	q.Limit = size
	var got []string
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("%+v: more than 100 pages", q)
		}
		page, err := p.QueryResults(t.Context(), runID, q)
		if err != nil {
			t.Fatalf("QueryResults(%+v): %v", q, err)
		}
		if len(page.Results) > size {
			t.Fatalf("%+v: page of %d results, size %d", q, len(page.Results), size)
		}
		for _, r := range page.Results {
			got = append(got, fmt.Sprintf("%d/%d", r.Index, r.Repeat))
		}
		if page.Next == nil {
			return got
		}
		if len(page.Results) != size {
			t.Fatalf("%+v: a page of %d results (size %d) has a next cursor", q, len(page.Results), size)
		}
		q.After = page.Next
	}
}

// want returns the keys of all that q keeps, in q's order, by the
// reference semantics (evalrun.ResultPageQuery.KeepsResult, resultq).
func wantKeys(run *evalrun.Run, all []*evalrun.ItemResult, q evalrun.ResultPageQuery) []string {
	var kept []*evalrun.ItemResult
	for _, r := range all {
		if q.KeepsResult(run, r) {
			kept = append(kept, r)
		}
	}
	slices.SortFunc(kept, func(a, b *evalrun.ItemResult) int {
		ca, cb := resultq.Of(q, a), resultq.Of(q, b)
		return resultq.Compare(q, &ca, &cb)
	})
	out := []string{}
	for _, r := range kept {
		out = append(out, fmt.Sprintf("%d/%d", r.Index, r.Repeat))
	}
	return out
}

// testResultPagesSorts walks every sort, ascending and descending, with
// and without filters, at several page sizes: every matching result comes
// exactly once, in the order of the sort with ties by (index, repeat), and
// Total counts them.
func testResultPagesSorts(t *testing.T, s evalrun.Store) {
	run, all := pagesFixture(t, s)
	p := pager(t, s)
	below := 0.6
	sorts := []evalrun.ResultPageQuery{
		{}, {Sort: evalrun.SortItemID}, {Sort: evalrun.SortItemID, Desc: true},
		{Sort: evalrun.SortLatency}, {Sort: evalrun.SortLatency, Desc: true},
		{Sort: evalrun.SortScore, SortScorer: "exact"}, {Sort: evalrun.SortScore, SortScorer: "exact", Desc: true},
		{Sort: evalrun.SortScore, SortScorer: "judge"}, {Sort: evalrun.SortScore, SortScorer: "judge", Desc: true},
	}
	filters := []evalrun.ResultPageQuery{
		{}, {FailedOnly: true}, {Tag: "easy"}, {Tag: "math"}, {Tag: "tricky%"}, {Tag: "none"},
		{Scorer: "judge"}, {Scorer: "exact", Below: &below}, {ItemID: "id-07"}, {ToolErrors: true},
		{Search: "e"}, {Tag: "easy", Scorer: "exact"}, {Search: "ID-0", Tag: "hard", Scorer: "judge"},
	}
	for _, so := range sorts {
		for _, f := range filters {
			q := f
			q.Sort, q.Desc, q.SortScorer = so.Sort, so.Desc, so.SortScorer
			want := wantKeys(run, all, q)
			for _, size := range []int{1, 2, 3, 50} {
				if got := walkPages(t, p, run.ID, q, size); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Errorf("sort %q filter %+v size %d:\n got  %v\n want %v", q.SortName(), f, size, got, want)
				}
			}
			q.Count, q.Limit = true, 2
			page, err := p.QueryResults(t.Context(), run.ID, q)
			if err != nil {
				t.Fatal(err)
			}
			if page.Total != len(want) {
				t.Errorf("sort %q filter %+v: Total = %d, want %d", q.SortName(), f, page.Total, len(want))
			}
		}
	}
}

// testResultPagesOrder checks the reference orders by hand: ties by
// (index, repeat) ascending in both directions, missing scores lowest.
func testResultPagesOrder(t *testing.T, s evalrun.Store) {
	run, _ := pagesFixture(t, s)
	p := pager(t, s)
	for _, tc := range []struct {
		q    evalrun.ResultPageQuery
		want string
	}{
		// Latency is index%4 ms.
		{evalrun.ResultPageQuery{Sort: evalrun.SortLatency}, "0/0 4/0 4/1 8/0 1/0 1/1 5/0 9/0 2/0 6/0 10/0 10/1 3/0 7/0 7/1 11/0"},
		{evalrun.ResultPageQuery{Sort: evalrun.SortLatency, Desc: true}, "3/0 7/0 7/1 11/0 2/0 6/0 10/0 10/1 1/0 1/1 5/0 9/0 0/0 4/0 4/1 8/0"},
		// judge: missing for 3 (failed), 5 (scorer error), 8 (no score); 0.9 for 9; 0.25 elsewhere.
		{evalrun.ResultPageQuery{Sort: evalrun.SortScore, SortScorer: "judge"}, "3/0 5/0 8/0 0/0 1/0 1/1 2/0 4/0 4/1 6/0 7/0 7/1 10/0 10/1 11/0 9/0"},
		{evalrun.ResultPageQuery{Sort: evalrun.SortScore, SortScorer: "judge", Desc: true}, "9/0 0/0 1/0 1/1 2/0 4/0 4/1 6/0 7/0 7/1 10/0 10/1 11/0 3/0 5/0 8/0"},
		// Filters: failed; judge did not pass (missing, below 0.7 or not passed).
		{evalrun.ResultPageQuery{FailedOnly: true}, "3/0"},
		{evalrun.ResultPageQuery{Scorer: "judge", ItemID: "id-03"}, "9/0"},
		{evalrun.ResultPageQuery{ToolErrors: true}, "6/0"},
		{evalrun.ResultPageQuery{Tag: "math"}, "1/0 1/1 5/0 9/0"},
		{evalrun.ResultPageQuery{Tag: "tricky%"}, "2/0 6/0 10/0 10/1"},
		{evalrun.ResultPageQuery{ItemID: "id-07", Sort: evalrun.SortItemID}, "1/0 1/1"},
	} {
		got := strings.Join(walkPages(t, p, run.ID, tc.q, 4), " ")
		if got != tc.want {
			t.Errorf("%+v:\n got  %s\n want %s", tc.q, got, tc.want)
		}
	}
}

// testResultPagesSearch searches item ids, inputs and outputs: any case,
// markup, quotes, SQL wildcards taken literally, non-ASCII text and emoji.
func testResultPagesSearch(t *testing.T, s evalrun.Store) {
	run, _ := pagesFixture(t, s)
	p := pager(t, s)
	for _, tc := range []struct{ search, want string }{
		{"<b>bold</b>", "1/0 1/1"},     // input markup
		{"<I>ITALIC</I> &", "1/0 1/1"}, // output markup, any case
		{`"hi"`, "2/0"},                // quotes in the input (a JSON string)
		{`said "yes"`, "2/0"},          // and in the output
		{"%", "3/0"},                   // a literal %, not a wildcard: 100% (3's output failed)
		{"0%_", ""},                    // no wildcard: 50%_off is item 3's lost output
		{"_", "4/0 4/1"},               // snake_case, under_score: not any character
		{"CAFÉ", "5/0"},                // non-ASCII, folded
		{"école DÉJÀ", "5/0"},          // output, folded
		{"日本", "6/0"},                  // input and output
		{"🎉", "7/0 7/1"},               // emoji
		{"hello", "8/0"},               // MiXeD CaSe Hello, HELLO world
		{"id-0", "0/0 1/0 1/1 2/0 3/0 4/0 4/1 6/0 7/0 7/1 8/0 9/0 11/0"}, // item ids id-00…id-09
		{"line\nbreak", "9/0"}, // a control character, escaped in JSON
		{"no such text", ""},
		{"'; DROP TABLE results; --", ""},
	} {
		got := strings.Join(walkPages(t, p, run.ID, evalrun.ResultPageQuery{Search: tc.search}, 3), " ")
		if got != tc.want {
			t.Errorf("search %q:\n got  %s\n want %s", tc.search, got, tc.want)
		}
	}
}

// testResultPagesInvalid refuses malformed and foreign cursors, bad
// queries and unknown runs.
func testResultPagesInvalid(t *testing.T, s evalrun.Store) {
	run, _ := pagesFixture(t, s)
	p := pager(t, s)
	ctx := context.Background()
	first, err := p.QueryResults(ctx, run.ID, evalrun.ResultPageQuery{Sort: evalrun.SortLatency, Limit: 2})
	if err != nil || first.Next == nil {
		t.Fatalf("first page: %v, next %q", err, first.Next)
	}
	for name, q := range map[string]evalrun.ResultPageQuery{
		"garbage cursor":       {After: []byte("not a cursor")},
		"truncated cursor":     {Sort: evalrun.SortLatency, After: first.Next[:len(first.Next)-1]},
		"huge cursor":          {After: append([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f}, make([]byte, 10000)...)},
		"cursor of other sort": {Sort: evalrun.SortLatency, Desc: true, After: first.Next},
		"cursor of index sort": {After: first.Next},
		"negative limit":       {Limit: -1},
		"unknown sort":         {Sort: "random"},
		"score sort, no name":  {Sort: evalrun.SortScore},
		"long search":          {Search: strings.Repeat("x", evalrun.MaxResultSearch+1)},
		"invalid UTF-8":        {Search: "\xff"},
		// SQLite's LIKE ends a pattern at a NUL: "%\x00%" was "%", and
		// q=%00 listed every result as a match.
		"NUL in the search": {Search: "\x00"},
	} {
		if _, err := p.QueryResults(ctx, run.ID, q); !errors.Is(err, evalrun.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := p.QueryResults(ctx, "no-such-run", evalrun.ResultPageQuery{}); !errors.Is(err, evalrun.ErrNotFound) {
		t.Errorf("unknown run: err = %v, want ErrNotFound", err)
	}
	// A rewritten result moves in the score order; pages stay consistent.
	r := result(run.ID, 0, 0)
	r.ItemID = "id-00"
	r.Scores[1].Score = evalrun.Float64(0.95)
	mustWrite(t, s, r)
	got := walkPages(t, p, run.ID, evalrun.ResultPageQuery{Sort: evalrun.SortScore, SortScorer: "judge", Desc: true}, 3)
	if len(got) != 16 || got[0] != "0/0" || got[1] != "9/0" {
		t.Errorf("after a rewrite: %v, want 16 results led by 0/0, 9/0", got)
	}
}

// testSkipPayloads reads results without outputs, trajectories, inputs and
// expected outputs; scores, usage, errors, timings and metadata stay.
func testSkipPayloads(t *testing.T, s evalrun.Store) {
	run, all := pagesFixture(t, s)
	lean := scanResults(t, s, run.ID, evalrun.ResultQuery{SkipPayloads: true})
	page, err := pager(t, s).QueryResults(t.Context(), run.ID, evalrun.ResultPageQuery{SkipPayloads: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]*evalrun.ItemResult{"ScanResults": lean, "QueryResults": page.Results} {
		if len(got) != len(all) {
			t.Fatalf("%s: %d results, want %d", name, len(got), len(all))
		}
		for i, r := range got {
			w := all[i]
			if r.Output != nil || r.Trajectory != nil || r.Item == nil || r.Item.Input != nil || r.Item.Expected != nil {
				t.Fatalf("%s: result %d/%d keeps a payload: output %q, trajectory %v, item %+v", name, r.Index, r.Repeat, r.Output, r.Trajectory, r.Item)
			}
			if r.Item.ID != w.ItemID || fmt.Sprint(r.Item.Tags()) != fmt.Sprint(w.Item.Tags()) {
				t.Fatalf("%s: result %d/%d item %+v, want id %q tags %v", name, r.Index, r.Repeat, r.Item, w.ItemID, w.Item.Tags())
			}
			full := *w
			full.Output, full.Trajectory = nil, nil
			checkResult(t, r, &full)
		}
	}
}
