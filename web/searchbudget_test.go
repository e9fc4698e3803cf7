package web

import (
	"context"
	"fmt"
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

// budgetBundles serves the fixture from memory and from SQLite with a
// search budget of budget results a page.
func budgetBundles(t *testing.T, budget int) map[string]*bundle {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "evalrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, st)
	mem := inmem.New()
	seed(t, mem)
	return map[string]*bundle{"sqlite": setupStore(t, st, Options{SearchBudget: budget}), "inmem": setupStore(t, mem, Options{SearchBudget: budget})}
}

func resultKeys(p ItemsJSON) []string {
	var keys []string
	for _, r := range p.Items {
		keys = append(keys, fmt.Sprintf("%d.%d", r.Index, r.Repeat))
	}
	return keys
}

var searchFurther = regexp.MustCompile(`id="search-further" href="([^"]+)"`)

// TestItemsSearchBudget follows a budgeted search (2 results examined a
// page) to its end in the API and the HTML table: the same matches as an
// unbounded search, each once, in every sort; every page says how many
// results it examined, and a page whose budget ran out says so and links
// further.
func TestItemsSearchBudget(t *testing.T) {
	wide, narrow := budgetBundles(t, 1000), budgetBundles(t, 2)
	for name, b := range narrow {
		t.Run(name, func(t *testing.T) {
			for _, sort := range []string{"", "sort=-latency", "sort=score:judge", "sort=-score:exact&tag=billing"} {
				for _, search := range []string{"OUTPUT+2", "question", "q", "nowhere-at-all"} {
					q := sort + "&q=" + search
					items := "/api/runs/" + runB + "/items?size=1&" + q
					all := wide[name].mustGet(t, "/api/runs/"+runB+"/items?size=500&"+q, http.StatusOK)
					want := strings.Join(resultKeys(decode[ItemsJSON](t, all)), " ")
					var got []string
					path, scanned := items, 0
					for pages := 0; ; pages++ {
						if pages > 20 {
							t.Fatalf("%s: more than 20 pages", q)
						}
						p := decode[ItemsJSON](t, b.mustGet(t, path, http.StatusOK))
						if p.Scanned == nil || *p.Scanned > 2 || len(p.Items) > 1 {
							t.Fatalf("%s: page %d scanned %v results with %d items, want at most 2 and 1 item", q, pages, p.Scanned, len(p.Items))
						}
						if p.Partial && p.Next == nil {
							t.Fatalf("%s: a partial page without next", q)
						}
						scanned += *p.Scanned
						got = append(got, resultKeys(p)...)
						if p.Next == nil {
							break
						}
						path = items + "&from=" + url.QueryEscape(*p.Next)
					}
					if strings.Join(got, " ") != want {
						t.Errorf("%s: budgeted pages found %v, want %s", q, got, want)
					}
					// Without matches, every page stops at its budget: the pages
					// examine the run's 6 results once each.
					if search == "nowhere-at-all" && !strings.Contains(sort, "tag") && scanned != 6 {
						t.Errorf("%s: pages examined %d results in all, want the run's 6", q, scanned)
					}
				}
			}
			// The HTML table: a rare term says what it searched and links on.
			path, partial := "/runs/"+runB+"/items?q=nowhere-at-all", 0
			for range 10 {
				body := b.mustGet(t, path, http.StatusOK).body
				m := searchFurther.FindStringSubmatch(body)
				if m == nil {
					if !strings.Contains(body, "No items match.") {
						t.Errorf("last page of a search: no \"No items match.\"")
					}
					break
				}
				partial++
				if !strings.Contains(body, "Searched 2 results") || !strings.Contains(body, "0 matches") {
					t.Errorf("partial page %d does not say it searched 2 results with 0 matches", partial)
				}
				path = html.UnescapeString(m[1])
			}
			if partial != 2 { // 6 results, 2 a page: the 3rd page ends the run
				t.Errorf("%d partial pages, want 3", partial)
			}
			// A continuation cursor under another sort is refused.
			p := decode[ItemsJSON](t, b.mustGet(t, "/api/runs/"+runB+"/items?q=nowhere-at-all&sort=latency", http.StatusOK))
			if p.Next == nil || !p.Partial {
				t.Fatalf("rare term, budget 2: next %v partial %v, want a continuation", p.Next, p.Partial)
			}
			b.wantError(t, "/api/runs/"+runB+"/items?q=nowhere-at-all&sort=-latency&from="+url.QueryEscape(*p.Next), 400, "cursor belongs to sort")
		})
	}
}

// TestItemsSearchDefaultBudget: with no Options.SearchBudget a page of a
// search examines evalrun.DefaultSearchBudget results, 500: a term found
// nowhere in 501 results takes a partial page of 500, then one of 1.
func TestItemsSearchDefaultBudget(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	const n = 501
	items := make([]*evalrun.Item, n)
	results := make([]*evalrun.ItemResult, n)
	for i := range n {
		items[i] = &evalrun.Item{ID: fmt.Sprintf("d-%03d", i), Input: evalrun.String("question")}
		results[i] = &evalrun.ItemResult{RunID: "default-budget", Index: i, ItemID: items[i].ID, Output: evalrun.String("answer"), Attempts: 1}
	}
	if _, _, err := st.ImportDataset(ctx, "budget", items); err != nil {
		t.Fatal(err)
	}
	run := &evalrun.Run{ID: "default-budget", Name: "budget", Dataset: "budget", DatasetVersion: 1, Status: evalrun.RunRunning, Total: n,
		Target: evalrun.TargetInfo{Kind: "http", Name: "mock"}, CreatedAt: t0, StartedAt: t0}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteResults(ctx, results); err != nil {
		t.Fatal(err)
	}
	b := setupStore(t, st, Options{})
	first := decode[ItemsJSON](t, b.mustGet(t, "/api/runs/default-budget/items?q=nowhere", http.StatusOK))
	if first.Scanned == nil || *first.Scanned != 500 || !first.Partial || first.Next == nil || len(first.Items) != 0 {
		t.Fatalf("first page: scanned %v, partial %v, next %v, %d items; want 500 scanned, partial, a next cursor, none", first.Scanned, first.Partial, first.Next, len(first.Items))
	}
	last := decode[ItemsJSON](t, b.mustGet(t, "/api/runs/default-budget/items?q=nowhere&from="+url.QueryEscape(*first.Next), http.StatusOK))
	if last.Scanned == nil || *last.Scanned != 1 || last.Next != nil {
		t.Fatalf("second page: scanned %v, next %v; want 1, none", last.Scanned, last.Next)
	}
}

// TestItemsSearchFullPageNotPartial: a page whose size-th match is the last
// result its budget lets it examine is full, not partial (docs/web.md: a
// partial page has fewer matches than size). It said "partial": true and
// "Searched 2 results: 2 matches. search further", as if matches might be
// missing; following next still finds every match once.
func TestItemsSearchFullPageNotPartial(t *testing.T) {
	wide, narrow := budgetBundles(t, 1000), budgetBundles(t, 2)
	for name, b := range narrow {
		t.Run(name, func(t *testing.T) {
			items := "/api/runs/" + runB + "/items?size=2&q=q"
			want := strings.Join(resultKeys(decode[ItemsJSON](t, wide[name].mustGet(t, "/api/runs/"+runB+"/items?size=500&q=q", http.StatusOK))), " ")
			var got []string
			path, full := items, 0
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatal("more than 20 pages")
				}
				p := decode[ItemsJSON](t, b.mustGet(t, path, http.StatusOK))
				if len(p.Items) == 2 {
					full++
					if p.Partial {
						t.Errorf("page %d: 2 matches of size 2, and partial", pages)
					}
				}
				got = append(got, resultKeys(p)...)
				if p.Next == nil {
					break
				}
				path = items + "&from=" + url.QueryEscape(*p.Next)
			}
			if full == 0 {
				t.Fatal("no full page: the fixture no longer tests this")
			}
			if strings.Join(got, " ") != want {
				t.Errorf("pages found %v, want %s", got, want)
			}
			body := b.mustGet(t, "/runs/"+runB+"/items?size=2&q=q", http.StatusOK).body
			if strings.Contains(body, "search-further") {
				t.Error("HTML: a full first page links \"search further\"")
			}
		})
	}
}
