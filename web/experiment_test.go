package web

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
)

// setupExperiment is the run fixture plus the small experiment.
func setupExperiment(t *testing.T) *bundle {
	t.Helper()
	st := inmem.New()
	seed(t, st)
	seedSmallExperiment(t, st)
	return setupStore(t, st, Options{})
}

// itemRowIDs returns the item ids of the rows of the items table, in order.
func itemRowIDs(body string) string {
	var ids []string
	for _, m := range regexp.MustCompile(`<tr data-item="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return strings.Join(ids, ",")
}

// TestExperimentsList lists the experiment (one row, its variants in
// order, each status) newest first, links to it from the nav and from its
// runs on the runs list, and serves the same list as JSON.
func TestExperimentsList(t *testing.T) {
	b := setupExperiment(t)
	seedExperiment(t, b.store, "exp-20260304T080000-older000", "older", "support", t0.Add(-2*time.Hour), []string{"a", "b"}, 6,
		func(v, i int) *evalrun.ItemResult { return fixtureResult("xxxxx", i, 1, 1, time.Millisecond) })

	body := b.mustGet(t, "/experiments", http.StatusOK).body
	contains(t, "experiments list", body,
		`<a class="experiment-link" href="/experiments/`+expID+`">model pick</a>`,
		`support</a> v1`,
		`>mini</a> <span class="muted">(baseline)</span>, <a href="/runs/`+expRunID(expID, 1)+`">big</a>, <a href="/runs/`+expRunID(expID, 2)+`">terse</a>`,
		`<span title="big"><span class="badge st-completed">completed</span></span>`,
		`2026-03-04 12:00:00Z`,
		`href="/experiments" id="nav-experiments"`)
	if i, j := strings.Index(body, expID), strings.Index(body, "exp-20260304T080000-older000"); i < 0 || j < 0 || i > j {
		t.Errorf("experiments not newest first: positions %d, %d", i, j)
	}
	if n := strings.Count(body, `class="experiment-link"`); n != 2 {
		t.Errorf("%d experiment rows, want 2", n)
	}
	// The runs list shows a variant's run with its variant and experiment;
	// a run of no experiment shows neither.
	runs := b.mustGet(t, "/", http.StatusOK).body
	contains(t, "runs list", runs, `variant <strong>big</strong> of <a class="experiment-link" href="/experiments/`+expID+`">`+expID+`</a>`)
	if n := strings.Count(runs, `class="sub variant-of"`); n != 5 {
		t.Errorf("%d runs marked as variants, want 5 (3 + 2)", n)
	}
	contains(t, "run page", b.mustGet(t, "/runs/"+expRunID(expID, 2), http.StatusOK).body,
		`variant <strong>terse</strong> of experiment <a id="experiment-link" href="/experiments/`+expID+`">`)

	list := decode[ExperimentsJSON](t, b.mustGet(t, "/api/experiments", http.StatusOK))
	if len(list.Experiments) != 2 || list.More {
		t.Fatalf("API: %d experiments (more %v), want 2", len(list.Experiments), list.More)
	}
	e := list.Experiments[0]
	if e.ID != expID || e.Name != "model pick" || e.Dataset.Name != "support" || e.Dataset.Version != 1 || len(e.Variants) != 3 ||
		e.Variants[0].Name != "mini" || e.Variants[2].RunID != expRunID(expID, 2) || e.Variants[1].Status != evalrun.RunCompleted {
		t.Errorf("API first experiment: %+v", e)
	}
	one := decode[ExperimentsJSON](t, b.mustGet(t, "/api/experiments?limit=1", http.StatusOK))
	if len(one.Experiments) != 1 || !one.More || one.Experiments[0].ID != expID {
		t.Errorf("limit=1: %+v", one)
	}
}

// TestExperimentsListEmpty: a store without experiments says how to make
// one.
func TestExperimentsListEmpty(t *testing.T) {
	b := setup(t, Options{})
	contains(t, "empty list", b.mustGet(t, "/experiments", http.StatusOK).body, `id="no-experiments"`, "variants")
	if l := decode[ExperimentsJSON](t, b.mustGet(t, "/api/experiments", http.StatusOK)); len(l.Experiments) != 0 {
		t.Errorf("API lists %d experiments", len(l.Experiments))
	}
}

// TestExperimentPage shows the matrix (per variant: pass rates with their
// intervals, means, macro pass rate, failures, tokens, cost, latency), a
// histogram per scorer and variant, and every item side by side with a
// link to each variant's item page.
func TestExperimentPage(t *testing.T) {
	b := setupExperiment(t)
	body := b.mustGet(t, "/experiments/"+expID, http.StatusOK).body
	matrix := between(t, body, `id="matrix"`, "</table>")
	rows := strings.Split(matrix, "<tr data-variant=")
	if len(rows) != 4 {
		t.Fatalf("matrix has %d variant rows, want 3:\n%s", len(rows)-1, matrix)
	}
	// mini: exact 6/6; judge 5/6; big: exact 5/5 scored, judge 3/5; one
	// failure; terse: exact 5/6.
	contains(t, "mini", rows[1], `"mini"`, `<span class="badge">baseline</span>`, "100.0%", "83.3%", "91.7%", "model-mini")
	contains(t, "big", rows[2], `"big"`, "60.0%", `<td class="n bad">1</td>`, "500 / 100") // tokens of the 5 results
	contains(t, "big", rows[2], `href="/compare?a=`+expRunID(expID, 0)+`&amp;b=`+expRunID(expID, 1)+`">compare</a>`)
	contains(t, "terse", rows[3], `"terse"`, "83.3%")
	if !regexp.MustCompile(`100\.0%</span> <span class="sub ci">\[\d+\.\d, 100\.0\]</span>`).MatchString(rows[1]) {
		t.Errorf("mini's exact pass rate lacks its interval:\n%s", rows[1])
	}
	contains(t, "matrix costs and latency", matrix, "$0.0060", "$0.0050", "ms / ")
	// Histograms: 2 scorers × 3 variants, 10 bars each.
	hists := between(t, body, `id="histograms"`, "</table>")
	if n := strings.Count(hists, "<svg"); n != 6 {
		t.Errorf("%d histograms, want 6", n)
	}
	if n := strings.Count(hists, "<rect"); n != 60 {
		t.Errorf("%d bars, want 60", n)
	}
	// Items: all six, each cell linking to its run's item page.
	if ids := itemRowIDs(body); ids != "q1,q2,q3,q4,q5,q6" {
		t.Errorf("items %q", ids)
	}
	contains(t, "items", body,
		`href="/runs/`+expRunID(expID, 1)+`/items/3"`, "deadline exceeded after 30s", "answer 2 by big",
		`judge 0.300 ✗`, `exact 1.000 ✓`, `≠ disagree`)
	if n := strings.Count(body, `class="cell-link"`); n != 18 {
		t.Errorf("%d cell links, want 18", n)
	}
	// The report JSON, without item rows.
	sum := decode[experimentSummary](t, b.mustGet(t, "/api/experiments/"+expID, http.StatusOK))
	if sum.SchemaVersion != 3 || sum.Experiment.ID != expID || sum.Experiment.Baseline != "mini" || len(sum.Variants) != 3 ||
		sum.Variants[1].Scorers["judge"] == nil || sum.Variants[0].VsBaseline == nil {
		t.Errorf("API report: %+v", sum)
	}
	if raw := b.mustGet(t, "/api/experiments/"+expID, http.StatusOK).body; !strings.Contains(raw, `"items": []`) {
		t.Errorf("API report has item rows: %.500s", raw)
	}
}

// between returns the part of s from the first from to the next to.
func between(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("no %q in:\n%s", from, s)
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		t.Fatalf("no %q after %q", to, from)
	}
	return s[i : i+j]
}

// TestExperimentFilters: "variants disagree", "baseline passes, variant
// fails" for one variant or any, by tag, and combined; the page and the
// API agree.
func TestExperimentFilters(t *testing.T) {
	b := setupExperiment(t)
	tests := []struct{ query, ids string }{
		{"", "q1,q2,q3,q4,q5,q6"},
		{"show=all", "q1,q2,q3,q4,q5,q6"},
		{"show=disagree", "q2,q3,q4"},
		{"show=regressed", "q2,q3,q4"},
		{"show=regressed&variant=big", "q2,q4"},
		{"show=regressed&variant=terse", "q3"},
		{"tag=billing", "q1,q3"},
		{"tag=login&show=disagree", "q4"},
		{"tag=refund&show=regressed&variant=terse", ""},
		{"tag=nope", ""},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			body := b.mustGet(t, "/experiments/"+expID+"?"+tt.query, http.StatusOK).body
			if got := itemRowIDs(body); got != tt.ids {
				t.Errorf("page rows %q, want %q", got, tt.ids)
			}
			if tt.ids == "" {
				contains(t, "empty", body, `id="no-items"`)
			}
			api := decode[ExperimentItemsJSON](t, b.mustGet(t, "/api/experiments/"+expID+"/items?"+tt.query, http.StatusOK))
			var ids []string
			for _, it := range api.Items {
				ids = append(ids, it.ID)
				if len(it.Variants) != 3 {
					t.Errorf("item %s has %d variants", it.ID, len(it.Variants))
				}
			}
			if got := strings.Join(ids, ","); got != tt.ids || api.Total != len(ids) {
				t.Errorf("API rows %q (total %d), want %q", got, api.Total, tt.ids)
			}
		})
	}
	// The cells where the variant fails and the baseline passes are
	// marked, with text.
	body := b.mustGet(t, "/experiments/"+expID+"?show=regressed&variant=big", http.StatusOK).body
	if n := strings.Count(body, "▼ fails where the baseline passes"); n != 2 {
		t.Errorf("%d regressed cells, want 2 (big on q2 and q4; terse passes both)", n)
	}
	contains(t, "filter form keeps the selection", body, `value="regressed" id="show-regressed" checked`, `<option value="big" selected>`)
	api := decode[ExperimentItemsJSON](t, b.mustGet(t, "/api/experiments/"+expID+"/items?show=disagree", http.StatusOK))
	if q4 := api.Items[2]; q4.ID != "q4" || !q4.Disagree || q4.Variants["big"] == nil || q4.Variants["big"].Error == nil ||
		*q4.Variants["big"].Error != "deadline exceeded after 30s" || q4.Variants["mini"].Error != nil {
		t.Errorf("q4: %+v", q4)
	}
}

// TestExperimentSignificant: a variant much worse (or better) than the
// baseline has its cells marked with a class and a text marker; cells that
// do not differ significantly carry neither.
func TestExperimentSignificant(t *testing.T) {
	st := inmem.New()
	const n = 40
	items := make([]*evalrun.Item, n)
	for i := range items {
		items[i] = &evalrun.Item{ID: fmt.Sprintf("q%d", i+1), Input: evalrun.String("x")}
	}
	if _, _, err := st.ImportDataset(context.Background(), "sig", items); err != nil {
		t.Fatal(err)
	}
	seedExperiment(t, st, expID, "sig", "sig", t0, []string{"base", "worse", "better"}, n, func(v, i int) *evalrun.ItemResult {
		exact := 0.0
		switch v {
		case 0:
			exact = float64((i + 1) % 2) // half pass
		case 2:
			exact = 1
		}
		return fixtureResult("xxxxx", i, exact, 0.8, time.Millisecond)
	})
	b := setupStore(t, st, Options{})
	body := b.mustGet(t, "/experiments/"+expID, http.StatusOK).body
	rows := strings.Split(between(t, body, `id="matrix"`, "</table>"), "<tr data-variant=")
	if strings.Contains(rows[1], "sig-") || strings.Contains(rows[1], "▲") || strings.Contains(rows[1], "▼") {
		t.Errorf("the baseline is marked:\n%s", rows[1])
	}
	contains(t, "worse", rows[2], `class="n cell sig-worse"`, "▼ worse")
	contains(t, "better", rows[3], `class="n cell sig-better"`, "▲ better")
	// judge is the same everywhere: never marked.
	if strings.Count(rows[2], "sig-") != 1 || strings.Count(rows[3], "sig-") != 1 {
		t.Errorf("more than the exact cell marked:\n%s\n%s", rows[2], rows[3])
	}
}

// TestExperimentPagination: the items table is paged (a large experiment
// renders one page), with previous and next links that keep the filter.
func TestExperimentPagination(t *testing.T) {
	st := inmem.New()
	const n = 5000
	items := make([]*evalrun.Item, n)
	for i := range items {
		items[i] = &evalrun.Item{ID: fmt.Sprintf("q%d", i+1), Input: evalrun.String("x"), Metadata: map[string]any{"tags": []string{"even", "odd"}[i%2]}}
	}
	if _, _, err := st.ImportDataset(context.Background(), "big", items); err != nil {
		t.Fatal(err)
	}
	seedExperiment(t, st, expID, "big", "big", t0, []string{"a", "b"}, n, func(v, i int) *evalrun.ItemResult {
		exact := 1.0
		if v == 1 && i%10 == 0 {
			exact = 0 // 500 disagreements
		}
		return fixtureResult("xxxxx", i, exact, 0.8, time.Millisecond)
	})
	b := setupStore(t, st, Options{})
	body := b.mustGet(t, "/experiments/"+expID, http.StatusOK).body
	if n := strings.Count(body, "<tr data-item="); n != 50 {
		t.Fatalf("%d rows on the first page, want 50", n)
	}
	contains(t, "first page", body, "5,000 matching · page 1 of 100", `id="next-page" href="/experiments/`+expID+`?page=2#items"`)
	lacks(t, "first page", body, `id="prev-page"`)

	body = b.mustGet(t, "/experiments/"+expID+"?show=disagree&tag=even&page=3&size=20", http.StatusOK).body
	// Disagreements are items 0, 10, 20…, all even: the third page of 20
	// starts at the 41st, q401.
	if ids := itemRowIDs(body); !strings.HasPrefix(ids, "q401,q411,") || strings.Count(ids, ",") != 19 {
		t.Errorf("page 3 rows %q", ids)
	}
	contains(t, "page 3", body, "500 matching · page 3 of 25",
		`id="prev-page" href="/experiments/`+expID+`?page=2&amp;show=disagree&amp;size=20&amp;tag=even#items"`,
		`id="next-page" href="/experiments/`+expID+`?page=4&amp;show=disagree&amp;size=20&amp;tag=even#items"`)
	// Past the last page: no rows, a link back.
	body = b.mustGet(t, "/experiments/"+expID+"?page=1000", http.StatusOK).body
	contains(t, "past the end", body, `id="no-items"`, `id="prev-page" href="/experiments/`+expID+`?page=100#items"`)
	api := decode[ExperimentItemsJSON](t, b.mustGet(t, "/api/experiments/"+expID+"/items?size=500&page=10", http.StatusOK))
	if len(api.Items) != 500 || api.Items[0].ID != "q4501" || api.Pages != 10 || api.Total != n {
		t.Errorf("API last page: %d items from %s, pages %d, total %d", len(api.Items), api.Items[0].ID, api.Pages, api.Total)
	}
}

// fullScanStore counts the scans of results that build an experiment's
// index (with the report, in the same cached computation): they alone skip
// the agent data; a page's reads do not.
type fullScanStore struct {
	evalrun.Store
	full atomic.Int32
}

func (c *fullScanStore) ScanResults(ctx context.Context, runID string, q evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	if q.SkipAgentData {
		c.full.Add(1)
	}
	return c.Store.ScanResults(ctx, runID, q, fn)
}

// TestExperimentCached: a finished experiment's report and index are built
// once, whatever the number of requests and filters; a change of one of its
// runs rebuilds them.
func TestExperimentCached(t *testing.T) {
	inner := inmem.New()
	seed(t, inner)
	seedSmallExperiment(t, inner)
	st := &fullScanStore{Store: inner}
	b := setupStore(t, st, Options{})
	b.mustGet(t, "/experiments/"+expID, http.StatusOK)
	built := st.full.Load()
	if built == 0 {
		t.Fatal("no full scan counted: the counter sees nothing")
	}
	for _, q := range []string{"", "?show=disagree", "?show=regressed&variant=big", "?tag=billing&page=2&size=1"} {
		b.mustGet(t, "/experiments/"+expID+q, http.StatusOK)
		b.mustGet(t, "/api/experiments/"+expID+"/items"+q, http.StatusOK)
	}
	b.mustGet(t, "/api/experiments/"+expID, http.StatusOK)
	if got := st.full.Load(); got != built {
		t.Errorf("%d full scans after more requests, want %d (built once)", got, built)
	}
	run, err := inner.GetRun(context.Background(), expRunID(expID, 2))
	if err != nil {
		t.Fatal(err)
	}
	run.Failed++
	if err := inner.UpdateRun(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	b.mustGet(t, "/experiments/"+expID, http.StatusOK)
	if got := st.full.Load(); got <= built {
		t.Errorf("a changed run did not rebuild the experiment (%d full scans)", got)
	}
}

// TestExperimentErrors: an unknown experiment is a 404 page (and JSON);
// bad parameters are 400s naming the parameter and what it takes.
func TestExperimentErrors(t *testing.T) {
	b := setupExperiment(t)
	const huge = "9223372036854775807"
	tests := []struct {
		path   string
		status int
		want   string
	}{
		{"/experiments/exp-20990101T000000-nope0000", 404, "not found"},
		{"/experiments/" + runA, 404, "not found"},
		{"/experiments/%3Cscript%3E", 404, "not found"},
		{"/experiments?limit=0", 400, "from 1 to 1000"},
		{"/experiments?limt=3", 400, "did you mean limit="},
		{"/experiments/" + expID + "?show=bogus", 400, "want disagree"},
		{"/experiments/" + expID + "?variant=bigg", 400, "did you mean big?"},
		{"/experiments/" + expID + "?variant=mini", 400, `besides its baseline "mini"`},
		{"/experiments/" + expID + "?page=" + huge, 400, "page="},
		{"/experiments/" + expID + "?page=0", 400, "page="},
		{"/experiments/" + expID + "?size=501", 400, "from 1 to 500"},
		{"/experiments/" + expID + "?filter=disagree", 400, `unknown parameter "filter"`},
		{"/experiments/" + expID + "?tag=a&tag=b", 400, "given 2 times"},
		{"/experiments/" + expID + "?tag=" + strings.Repeat("t", maxTextParam+1), 400, "at most 4096 bytes"},
	}
	for _, tt := range tests {
		paths := []string{tt.path, "/api" + tt.path}
		if strings.HasPrefix(tt.path, "/experiments/"+expID+"?") {
			// The JSON report takes no parameters: the items API does.
			paths[1] = "/api/experiments/" + expID + "/items?" + strings.SplitN(tt.path, "?", 2)[1]
		}
		for _, path := range paths {
			t.Run(path[:min(len(path), 90)], func(t *testing.T) { b.wantError(t, path, tt.status, tt.want) })
		}
	}
	// The JSON report takes no parameters.
	if resp := b.get(t, "/api/experiments/"+expID+"?show=disagree"); resp.status != 400 {
		t.Errorf("report with a parameter: status %d", resp.status)
	}
}

// TestExperimentEscaped stores an experiment whose name, variant names,
// item ids, tags, outputs, errors and reasons hold markup, and proves that
// the experiments list, the experiment page (filtered too), the runs list
// and the items API show them as text.
func TestExperimentEscaped(t *testing.T) {
	st := inmem.New()
	evil := xssScript + xssImg
	items := []*evalrun.Item{
		{ID: evil, Input: evalrun.String(evil), Metadata: map[string]any{"tags": []any{xssImg}}},
		{ID: "ok", Input: evalrun.String("fine")},
	}
	if _, _, err := st.ImportDataset(context.Background(), "evil", items); err != nil {
		t.Fatal(err)
	}
	variants := []string{evil, "v2" + xssImg}
	seedExperiment(t, st, expID, evil, "evil", t0, variants, 2, func(v, i int) *evalrun.ItemResult {
		r := fixtureResult("xxxxx", i, float64(1-v), 0.8, time.Millisecond)
		r.Output = evalrun.String(evil)
		r.Scores[0].Reason = evil
		if v == 1 && i == 1 {
			return &evalrun.ItemResult{Error: evil, ErrorKind: evalrun.ErrorPermanent, Attempts: 1}
		}
		return r
	})
	// seedExperiment names items q1, q2: give them the hostile id.
	ctx := context.Background()
	for v := range variants {
		var results []*evalrun.ItemResult
		err := st.ScanResults(ctx, expRunID(expID, v), evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
			if r.Index == 0 {
				r.ItemID = evil
			}
			results = append(results, r)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.WriteResults(ctx, results); err != nil {
			t.Fatal(err)
		}
	}
	b := setupStore(t, st, Options{})
	tag := strings.NewReplacer(" ", "+", `"`, "%22", "<", "%3C", ">", "%3E", "=", "%3D").Replace(xssImg)
	pages := []string{"/", "/experiments", "/experiments/" + expID, "/experiments/" + expID + "?show=disagree",
		"/experiments/" + expID + "?show=regressed&tag=" + tag, "/runs/" + expRunID(expID, 0)}
	for _, p := range pages {
		body := b.mustGet(t, p, http.StatusOK).body
		lacks(t, p, body, "<script>alert", "<img src=x", "onerror=alert(1)>", `"><img`)
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") && !strings.Contains(body, "&lt;img src=x") {
			t.Errorf("%s: the markup is not shown as text", p)
		}
	}
	body := b.mustGet(t, "/experiments/"+expID+"?show=regressed&tag="+tag, http.StatusOK).body
	if ids := itemRowIDs(body); ids != htmlEscaped(evil) {
		t.Errorf("filtered by the hostile tag: rows %q", ids)
	}
	api := decode[ExperimentItemsJSON](t, b.mustGet(t, "/api/experiments/"+expID+"/items", http.StatusOK))
	if len(api.Items) != 2 || api.Items[0].ID != evil || api.Items[0].Variants[evil] == nil {
		t.Errorf("API items: %+v", api.Items)
	}
}

// TestExperimentRunning: while a variant runs, the page says so and its
// data is refreshed once older than RefreshInterval, not before.
func TestExperimentRunning(t *testing.T) {
	st := inmem.New()
	seed(t, st)
	seedSmallExperiment(t, st)
	ctx := context.Background()
	run, err := st.GetRun(ctx, expRunID(expID, 2))
	if err != nil {
		t.Fatal(err)
	}
	run.Status, run.CompletedAt = evalrun.RunRunning, time.Time{}
	if err := st.UpdateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: t0}
	b := setupStore(t, st, Options{Clock: clock, RefreshInterval: 3 * time.Second})
	terse := func() string {
		body := b.mustGet(t, "/experiments/"+expID, http.StatusOK).body
		contains(t, "running experiment", body, `id="live"`, `<span class="badge st-running">running</span>`)
		return strings.Split(between(t, body, `id="matrix"`, "</table>"), "<tr data-variant=")[3]
	}
	// exact and judge: 5 of 6 each.
	const rate83, rate100 = `<span class="strong">83.3%</span>`, `<span class="strong">100.0%</span>`
	if row := terse(); strings.Count(row, rate83) != 2 {
		t.Fatalf("before: %s", row)
	}
	// terse's q3 is rescored as a pass: the cached data holds until the
	// refresh interval has passed.
	r := fixtureResult(expRunID(expID, 2), 2, 1, 0.8, time.Millisecond)
	if err := st.WriteResults(ctx, []*evalrun.ItemResult{r}); err != nil {
		t.Fatal(err)
	}
	if row := terse(); strings.Count(row, rate83) != 2 {
		t.Fatalf("refreshed before its time: %s", row)
	}
	clock.advance(4 * time.Second)
	if row := terse(); strings.Count(row, rate83) != 1 || !strings.Contains(row, rate100) {
		t.Fatalf("not refreshed: %s", row)
	}
}
