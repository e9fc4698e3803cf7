package web

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/evalrun/evalrun/sqlite"
)

// TestBrowserKeysetPages clicks through a sorted, searched listing of a
// SQLite run one row a page, by its "next page" links (keyset cursors),
// then back to the first page: every item comes once, slowest first.
func TestBrowserKeysetPages(t *testing.T) {
	ctx := browser(t)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "evalrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, st)
	base := serve(t, setupStore(t, st, Options{}))
	do(t, ctx, "slowest first, one a page",
		chromedp.Navigate(base+"/runs/"+runB+"/items?sort=-latency&size=1&q=Q"),
		chromedp.WaitVisible(css("#items")))
	var seen []string
	for range 10 {
		seen = append(seen, text(t, ctx, "#items tbody a.item-link"))
		more := get(t, ctx, "next link", chromedp.Evaluate[bool](`document.querySelector("#next-page") !== null`))
		if !more {
			break
		}
		if loc := get(t, ctx, "next href", chromedp.Evaluate[string](`document.querySelector("#next-page").href`)); !strings.Contains(loc, "from=") {
			t.Fatalf("next link %q has no from= cursor", loc)
		}
		do(t, ctx, "next page", chromedp.Click(css("#next-page")), chromedp.WaitVisible(css("#items")))
	}
	// q=Q matches every item id (q1…q6, any case); latency: q4 30 s, q6
	// 900 ms, then 600 ms down to 100 ms.
	if got := strings.Join(seen, ","); got != "q4,q6,q1,q3,q2,q5" {
		t.Fatalf("clicked through %s, want q4,q6,q1,q3,q2,q5", got)
	}
}
