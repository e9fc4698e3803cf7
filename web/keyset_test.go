package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/sqlite"
)

// keysetBundles are the fixture served from memory and from SQLite, whose
// items pages the store pages with keyset cursors.
func keysetBundles(t *testing.T) map[string]*bundle {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "evalrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, st)
	mem := inmem.New()
	seed(t, mem)
	return map[string]*bundle{"sqlite": setupStore(t, st, Options{}), "inmem": setupStore(t, mem, Options{})}
}

var nextLink = regexp.MustCompile(`id="next-page" href="([^"]+)"`)

// TestItemsKeysetPages follows the next links of every sort and filter,
// one result a page, in the HTML table and the API: every result comes
// once, in the order of the listing read as one page.
func TestItemsKeysetPages(t *testing.T) {
	for name, b := range keysetBundles(t) {
		t.Run(name, func(t *testing.T) {
			for _, q := range []string{"", "sort=latency", "sort=-latency", "sort=score:judge", "sort=-score:judge",
				"sort=-score:exact&tag=billing", "failed=1", "scorer=judge&sort=latency", "q=OUTPUT+2", "q=question+3"} {
				all := itemIDs(decode[ItemsJSON](t, b.mustGet(t, "/api/runs/"+runB+"/items?size=500&"+q, http.StatusOK)))
				// The API, two a page.
				var got []string
				path := "/api/runs/" + runB + "/items?size=2&" + q
				for range 10 {
					p := decode[ItemsJSON](t, b.mustGet(t, path, http.StatusOK))
					if ids := itemIDs(p); ids != "" {
						got = append(got, ids)
					}
					if p.Next == nil {
						break
					}
					path = "/api/runs/" + runB + "/items?size=2&" + q + "&from=" + url.QueryEscape(*p.Next)
				}
				if strings.Join(got, ",") != all {
					t.Errorf("%s: API pages %v, want %s", q, got, all)
				}
				// The HTML table's next links, one a page.
				pages := 0
				path = "/runs/" + runB + "/items?size=1&" + q
				for {
					body := b.mustGet(t, path, http.StatusOK).body
					m := nextLink.FindStringSubmatch(body)
					if m == nil {
						break
					}
					path = html.UnescapeString(m[1])
					if pages++; pages > 10 {
						t.Fatalf("%s: more than 10 pages", q)
					}
				}
				if want := strings.Count(all, ",") + 1; all != "" && pages+1 != want {
					t.Errorf("%s: %d HTML pages, want %d (%s)", q, pages+1, want, all)
				}
			}
		})
	}
}

// TestItemsHostileCursors refuses malformed, oversized and foreign cursors
// and over-long searches with a 400 naming the problem; SQL in a search is
// text.
func TestItemsHostileCursors(t *testing.T) {
	for name, b := range keysetBundles(t) {
		t.Run(name, func(t *testing.T) {
			items := "/runs/" + runB + "/items"
			p := decode[ItemsJSON](t, b.mustGet(t, "/api"+items+"?sort=latency&size=2", http.StatusOK))
			if p.Next == nil {
				t.Fatal("no next cursor on a sorted first page")
			}
			cursor := url.QueryEscape(*p.Next)
			for _, api := range []string{"", "/api"} {
				b.wantError(t, api+items+"?sort=-latency&from="+cursor, 400, "cursor belongs to sort")
				b.wantError(t, api+items+"?from="+cursor, 400, "cursor belongs to sort")
				b.wantError(t, api+items+"?sort=latency&from=AAAA", 400, "cursor is malformed")
				b.wantError(t, api+items+"?sort=latency&from=%21%21", 400, "from=")
				b.wantError(t, api+items+"?sort=latency&from="+strings.Repeat("A", maxCursor+1), 400, "at most 4096")
				b.wantError(t, api+items+"?q="+strings.Repeat("x", 10_000), 400, "at most 4096 bytes")
				b.wantError(t, api+items+"?q="+strings.Repeat("x", 2000), 400, "at most 1000 are taken")
			}
			p = decode[ItemsJSON](t, b.mustGet(t, "/api"+items+"?q="+url.QueryEscape("' OR 1=1; DROP TABLE results; --"), http.StatusOK))
			if len(p.Items) != 0 {
				t.Errorf("SQL in a search matched %s", itemIDs(p))
			}
			if p := decode[ItemsJSON](t, b.mustGet(t, "/api"+items+"?size=500", http.StatusOK)); len(p.Items) != 6 {
				t.Errorf("after hostile searches: %d items, want 6", len(p.Items))
			}
			var _ evalrun.ResultPager = b.store.(evalrun.ResultPager)
		})
	}
}
