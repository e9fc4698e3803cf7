package storetest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// testResultPagesSearchEscaped: a dataset written by Python's json.dumps
// (ensure_ascii, the default) holds every non-ASCII character as \uXXXX,
// and inputs and outputs are stored as given. A search for "naïve" or an
// emoji must still find them, as it finds the same text written as UTF-8.
func testResultPagesSearchEscaped(t *testing.T, s evalrun.Store) {
	items := []*evalrun.Item{
		{ID: "py", Input: json.RawMessage(`"na\u00efve caf\u00e9 \ud83c\udf89"`)},
		{ID: "utf8", Input: evalrun.String("plain")},
	}
	mustImport(t, s, "esc", items)
	run := testRun("esc-run", "esc", 1, base)
	mustCreateRun(t, s, run)
	for i, it := range items {
		r := result(run.ID, i, 0)
		r.ItemID = it.ID
		r.Output = json.RawMessage(`{"answer":"\u00c9cole"}`)
		if i == 1 {
			r.Output = evalrun.String("nothing")
		}
		mustWrite(t, s, r)
	}
	p := pager(t, s)
	for _, tc := range []struct{ search, want string }{
		{"naïve", "0/0"},
		{"NAÏVE CAFÉ", "0/0"}, // folded before it is escaped
		{"🎉", "0/0"},          // a surrogate pair
		{"École", "0/0"},      // an output, as written
		{"plain", "1/0"},
	} {
		got := strings.Join(walkPages(t, p, run.ID, evalrun.ResultPageQuery{Search: tc.search}, 3), " ")
		if got != tc.want {
			t.Errorf("search %q: got %q, want %q", tc.search, got, tc.want)
		}
	}
}
