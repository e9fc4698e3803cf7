package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/report"
)

func TestRunsPage(t *testing.T) {
	b := setup(t, Options{})
	body := b.mustGet(t, "/", http.StatusOK).body
	contains(t, "runs page", body, "baseline", "candidate", runA, runB, "support</a>@1", "http: answer-api",
		"77.5%", "100.0%", "1m30s", `href="/runs/`+runB+`"`, `name="a"`, `name="b"`)
	if ia, ib := strings.Index(body, runA), strings.Index(body, runB); ib > ia {
		t.Errorf("run B (newer) at %d after run A at %d: want newest first", ib, ia)
	}

	body = b.mustGet(t, "/?dataset=other", http.StatusOK).body
	contains(t, "filtered runs page", body, "No runs of dataset other")
	lacks(t, "filtered runs page", body, runA)
}

func TestRunPage(t *testing.T) {
	b := setup(t, Options{})
	body := b.mustGet(t, "/runs/"+runB, http.StatusOK).body
	contains(t, "run page", body,
		"candidate", "80.0%", "75.0%", "77.5%", // exact, judge, macro pass rates
		`id="scorers"`, "<svg", `class="bar-pass"`, "[0.9, 1.0]: 4", // histogram of exact: 4 scores of 1
		`id="cohorts"`, "billing", "refund", "login", "untagged",
		`id="usage"`, "$0.0050", // 5 results reported cost 0.001
		`id="failures"`, "deadline exceeded after 30s", "judge returned no JSON", "invalid_output",
		`href="/runs/`+runB+`/items?failed=1"`, `<option value="`+runA+`">`)
	lacks(t, "finished run page", body, "data-live-run")
}

func TestRunPageLive(t *testing.T) {
	b := setup(t, Options{})
	run := fixtureRun("20260304T120000-cccccccc", "live", t0.Add(2*time.Hour))
	run.Status, run.CompletedAt = evalrun.RunRunning, time.Time{}
	if err := b.store.CreateRun(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	body := b.mustGet(t, "/runs/"+run.ID, http.StatusOK).body
	contains(t, "running run page", body, `data-live-run="`+run.ID+`"`, `data-live="succeeded"`, `src="/static/live.js"`)
}

// itemIDs returns the item ids of an items JSON page, in order.
func itemIDs(p ItemsJSON) string {
	var ids []string
	for _, r := range p.Items {
		ids = append(ids, r.ID)
	}
	return strings.Join(ids, ",")
}

func TestItemsFilters(t *testing.T) {
	b := setup(t, Options{})
	tests := []struct {
		query string
		want  string
		total int // -1: not counted
	}{
		{"", "q1,q2,q3,q4,q5,q6", -1},
		{"failed=1", "q4", -1},
		{"scorer=exact", "q2,q4", -1},              // below the threshold, or no score
		{"scorer=judge&below=0.5", "q2,q4,q6", -1}, // 0.3, target failed, scorer error
		{"scorer=judge&below=0.95", "q1,q2,q3,q4,q5,q6", -1},
		{"tag=login", "q4,q6", -1},
		{"q=Q5", "q5", -1},
		{"tag=billing&failed=1", "", -1},
		// Latencies of B: q1 600ms, q2 250ms, q3 400ms, q4 30s, q5 200ms, q6 900ms.
		{"sort=-latency", "q4,q6,q1,q3,q2,q5", 6},
		{"sort=score:judge", "q4,q6,q2,q1,q3,q5", 6}, // missing scores first, then 0.3, then the 0.9s in input order
		{"sort=-score:judge&failed=1", "q4", 1},
		{"sort=latency&size=2&page=2", "q3,q1", 6}, // q5 q2 | q3 q1: the second page comes from a second scan
		{"sort=score:exact&scorer=exact", "q4,q2", 2},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			p := decode[ItemsJSON](t, b.mustGet(t, "/api/runs/"+runB+"/items?"+tt.query, http.StatusOK))
			if got := itemIDs(p); got != tt.want {
				t.Errorf("items = %q, want %q", got, tt.want)
			}
			if tt.total >= 0 && (p.Total == nil || *p.Total != tt.total) {
				t.Errorf("total = %v, want %d", p.Total, tt.total)
			}
			if tt.total < 0 && p.Total != nil {
				t.Errorf("total = %d, want null for an input-order page", *p.Total)
			}
			// The HTML page lists the same items.
			body := b.mustGet(t, "/runs/"+runB+"/items?"+tt.query, http.StatusOK).body
			for _, id := range strings.Split(tt.want, ",") {
				if id != "" && !strings.Contains(body, ">"+id+"</a>") {
					t.Errorf("HTML items page lacks %s", id)
				}
			}
			if tt.want == "" {
				contains(t, "empty items page", body, "No items match.")
			}
		})
	}
}

func TestItemsPaging(t *testing.T) {
	b := setup(t, Options{})
	p := decode[ItemsJSON](t, b.mustGet(t, "/api/runs/"+runB+"/items?size=4", http.StatusOK))
	if got := itemIDs(p); got != "q1,q2,q3,q4" || p.Next == nil || *p.Next != "4" {
		t.Fatalf("first page = %q next %v, want q1..q4 next 4", got, p.Next)
	}
	p = decode[ItemsJSON](t, b.mustGet(t, "/api/runs/"+runB+"/items?size=4&from="+*p.Next, http.StatusOK))
	if got := itemIDs(p); got != "q5,q6" || p.Next != nil {
		t.Fatalf("second page = %q next %v, want q5,q6 and no next", got, p.Next)
	}
	body := b.mustGet(t, "/runs/"+runB+"/items?size=4&failed=0", http.StatusOK).body
	contains(t, "items page 1", body, `id="next-page" href="/runs/`+runB+`/items?from=4&amp;size=4"`)

	p = decode[ItemsJSON](t, b.mustGet(t, "/api/runs/"+runB+"/items?sort=latency&size=4", http.StatusOK))
	if p.NextPage == nil || *p.NextPage != 2 {
		t.Fatalf("sorted first page next_page = %v, want 2", p.NextPage)
	}
	body = b.mustGet(t, "/runs/"+runB+"/items?sort=latency&size=4", http.StatusOK).body
	contains(t, "sorted items page", body, "6 matching · page 1 of 2", `items?from=`)

	// page=2 of an input-order listing was the first page again: it pages
	// sorted listings only (input order continues with from=).
	for _, q := range []string{"from=x", "size=-1", "below=abc", "sort=name", "page=two", "page=2", "page=410&size=50"} {
		resp := b.get(t, "/api/runs/"+runB+"/items?"+q)
		if resp.status != http.StatusBadRequest {
			t.Errorf("items?%s: status %d, want 400", q, resp.status)
		}
	}
}

func TestItemPage(t *testing.T) {
	b := setup(t, Options{})
	body := b.mustGet(t, "/runs/"+runB+"/items/3", http.StatusOK).body
	contains(t, "failed item page", body, `id="item-title">q4<`, "deadline exceeded after 30s",
		`id="error-kind">timeout<`, `id="retries">2<`, "30.00 s", "Not scored (the target failed).", "login")

	body = b.mustGet(t, "/runs/"+runB+"/items/1", http.StatusOK).body
	contains(t, "item page", body, "judge says 0.3", "exact compare", "output 2 of bbbb", "answer 2",
		"&#34;question&#34;: &#34;question 2&#34;", // pretty-printed JSON input, escaped
		"0.300", "0.70", "refund")

	body = b.mustGet(t, "/runs/"+runB+"/items/5", http.StatusOK).body
	contains(t, "scorer error item", body, "invalid_output: judge returned no JSON")
	contains(t, "item with metadata", body, `id="metadata"`, "login")
	lacks(t, "item without metadata", b.mustGet(t, "/runs/"+runB+"/items/4", http.StatusOK).body, `id="metadata"`)

	d := decode[ItemJSON](t, b.mustGet(t, "/api/runs/"+runB+"/items/3", http.StatusOK))
	if d.Row.ID != "q4" || d.Result.RetryCount != 2 || d.Result.ErrorKind != evalrun.ErrorTimeout || d.Row.Error == nil {
		t.Fatalf("item JSON = %+v / %+v", d.Row, d.Result)
	}
	if tags, _ := d.Metadata["tags"].(string); tags != "login" {
		t.Errorf("metadata = %v, want tags login", d.Metadata)
	}
}

func TestLongOutputCollapsed(t *testing.T) {
	b := setup(t, Options{})
	long := strings.Repeat("a long line of output\n", 50)
	r := fixtureResult(runA, 0, 1, 1, time.Second)
	r.Output = evalrun.String(long)
	if err := b.store.WriteResults(context.Background(), []*evalrun.ItemResult{r}); err != nil {
		t.Fatal(err)
	}
	body := b.mustGet(t, "/runs/"+runA+"/items/0", http.StatusOK).body
	contains(t, "long output", body, "<details><summary>51 lines")
}

func TestNotFound(t *testing.T) {
	b := setup(t, Options{})
	for _, path := range []string{
		"/runs/nope", "/runs/nope/items", "/runs/nope/items/0", "/runs/" + runB + "/items/99",
		"/runs/" + runB + "/items/x", "/runs/" + runB + "/items/0?repeat=3", "/compare?a=nope&b=" + runB,
		"/nothing", "/static/nothing.css",
	} {
		resp := b.get(t, path)
		if resp.status != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, resp.status)
		}
	}
	for _, path := range []string{
		"/api/runs/nope", "/api/runs/nope/items", "/api/runs/" + runB + "/items/99",
		"/api/compare?a=" + runA + "&b=nope", "/api/nothing",
	} {
		resp := b.get(t, path)
		if resp.status != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, resp.status)
			continue
		}
		if e := decode[apiError](t, resp); e.Status != 404 || !strings.Contains(e.Error, "not found") {
			t.Errorf("GET %s: error body %+v", path, e)
		}
	}
	if resp := b.get(t, "/api/compare?a="+runA); resp.status != http.StatusBadRequest {
		t.Errorf("compare with one run: status %d, want 400", resp.status)
	}
}

func TestComparePage(t *testing.T) {
	b := setup(t, Options{})
	body := b.mustGet(t, "/compare?a="+runA+"&b="+runB, http.StatusOK).body
	contains(t, "compare page", body, `id="deltas"`, "baseline", "candidate",
		// exact: mean 1 → 4/6 over 6 pairs, q4's failed target counting 0 in B.
		"6 paired items (target failed: 0 in A, 1 in B)", `id="regressed"`, "-0.333",
		"output 2 of aaaa", "output 2 of bbbb", "target: deadline exceeded after 30s",
		"Improved <span class=\"count\">0</span>")

	c := decode[report.Comparison](t, b.mustGet(t, "/api/compare?a="+runA+"&b="+runB, http.StatusOK))
	var got []string
	for _, ch := range c.Regressed {
		got = append(got, ch.ItemID+"/"+ch.Scorer)
	}
	if want := "q2/exact,q2/judge,q4/exact,q4/judge,q6/judge"; strings.Join(got, ",") != want {
		t.Errorf("regressed = %v, want %s", got, want)
	}

	body = b.mustGet(t, "/compare", http.StatusOK).body
	contains(t, "compare form", body, `id="compare-pick"`, `<option value="`+runA+`">`)
}

func TestAPIRuns(t *testing.T) {
	b := setup(t, Options{})
	runs := decode[RunsJSON](t, b.mustGet(t, "/api/runs", http.StatusOK))
	if len(runs.Runs) != 2 || runs.Runs[0].ID != runB || runs.Runs[1].ID != runA || runs.More {
		t.Fatalf("runs = %+v", runs)
	}
	if p := runs.Runs[0].MacroPassRate; p == nil || *p != 0.775 {
		t.Errorf("macro pass rate of B = %v, want 0.775", p)
	}
	if d := runs.Runs[0].DurationMS; d == nil || *d != 90_000 {
		t.Errorf("duration = %v, want 90000", d)
	}
	runs = decode[RunsJSON](t, b.mustGet(t, "/api/runs?limit=1", http.StatusOK))
	if len(runs.Runs) != 1 || !runs.More {
		t.Errorf("limit=1: %d runs, more %v", len(runs.Runs), runs.More)
	}
	if resp := b.get(t, "/api/runs?limit=x"); resp.status != http.StatusBadRequest {
		t.Errorf("limit=x: status %d", resp.status)
	}

	resp := b.mustGet(t, "/api/runs/"+runB, http.StatusOK)
	rep, err := report.ReadJSON(strings.NewReader(resp.body))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Run.ID != runB || rep.Items != nil || *rep.Scorer("exact").PassRate != 0.8 || len(rep.Failures) != 2 {
		t.Errorf("report = run %s items %v exact %v failures %d", rep.Run.ID, rep.Items, rep.Scorer("exact").PassRate, len(rep.Failures))
	}
}

func TestSecurityHeaders(t *testing.T) {
	b := setup(t, Options{})
	for _, path := range []string{"/", "/runs/" + runB, "/runs/" + runB + "/items", "/runs/" + runB + "/items/1",
		"/compare?a=" + runA + "&b=" + runB, "/api/runs", "/static/style.css", "/nothing"} {
		resp := b.get(t, path)
		csp := resp.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if resp.header.Get("X-Content-Type-Options") != "nosniff" || resp.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", path, resp.header)
		}
		if strings.HasPrefix(resp.header.Get("Content-Type"), "text/html") {
			// No inline script or style: every script has a src, no style attribute.
			for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(resp.body, -1) {
				if !strings.Contains(m, ` src="/static/`) {
					t.Errorf("%s: inline script %s", path, m)
				}
			}
			if strings.Contains(resp.body, " style=") || strings.Contains(resp.body, "<style") || strings.Contains(resp.body, "http://") || strings.Contains(resp.body, "https://") {
				t.Errorf("%s: inline style or external URL in the page", path)
			}
		}
	}
	for _, asset := range []struct{ path, ctype string }{{"/static/style.css", "text/css"}, {"/static/live.js", "javascript"}} {
		resp := b.mustGet(t, asset.path, http.StatusOK)
		if !strings.Contains(resp.header.Get("Content-Type"), asset.ctype) {
			t.Errorf("%s: Content-Type %q", asset.path, resp.header.Get("Content-Type"))
		}
	}
}

func TestReadOnly(t *testing.T) {
	b := setup(t, Options{})
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		for _, path := range []string{"/", "/runs/" + runB, "/api/runs", "/api/runs/" + runB + "/items"} {
			req, _ := http.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader("x=1"))
			rec := newRecorder()
			b.srv.ServeHTTP(rec, req)
			if rec.Code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: status %d, want 405", method, path, rec.Code)
			}
		}
	}
	req, _ := http.NewRequest(http.MethodHead, "http://127.0.0.1/runs/"+runB, nil)
	rec := newRecorder()
	b.srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("HEAD: status %d, %d bytes of body", rec.Code, rec.Body.Len())
	}
}

func TestHostCheckWithoutToken(t *testing.T) {
	b := setup(t, Options{})
	for host, want := range map[string]int{
		"127.0.0.1:8080": 200, "localhost:8080": 200, "[::1]:8080": 200, "localhost": 200,
		"evil.example:8080": 403, "evil.example": 403, "10.0.0.5:8080": 403,
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://x/api/runs", nil)
		req.Host = host
		rec := newRecorder()
		b.srv.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: status %d, want %d", host, rec.Code, want)
		}
	}
}

func TestToken(t *testing.T) {
	const token = "s3cret-token-0123"
	b := setup(t, Options{Token: token})
	path := "/runs/" + runB
	if r := b.get(t, path); r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" {
		t.Errorf("no token: status %d", r.status)
	}
	if strings.Contains(b.get(t, "/api/runs").body, runB) {
		t.Error("no token: the API leaked a run id")
	}
	for _, auth := range []string{"Bearer wrong", "Bearer " + token + "x", "Basic " + token, "Bearer"} {
		if r := b.get(t, path, "Authorization: "+auth); r.status != http.StatusUnauthorized {
			t.Errorf("Authorization %q: status %d, want 401", auth, r.status)
		}
	}
	if r := b.get(t, path, "Authorization: Bearer "+token); r.status != http.StatusOK {
		t.Errorf("right bearer: status %d", r.status)
	}
	// A token works with any Host (the viewer may be behind a name).
	req, _ := http.NewRequest(http.MethodGet, "http://viewer.example/api/runs", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := newRecorder()
	b.srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("bearer with a non-loopback Host: status %d", rec.Code)
	}

	// Cookie flow: ?token= sets the cookie and redirects to the URL without it.
	if r := b.get(t, path+"/items?failed=1&token=wrong"); r.status != http.StatusUnauthorized || r.header.Get("Set-Cookie") != "" {
		t.Errorf("?token=wrong: status %d, cookie %q", r.status, r.header.Get("Set-Cookie"))
	}
	r := b.get(t, path+"/items?failed=1&token="+token)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != path+"/items?failed=1" {
		t.Fatalf("?token=: status %d, Location %q", r.status, r.header.Get("Location"))
	}
	cookies, err := http.ParseSetCookie(r.header.Get("Set-Cookie"))
	if err != nil {
		t.Fatal(err)
	}
	if cookies.Name != CookieName || !cookies.HttpOnly || cookies.SameSite != http.SameSiteStrictMode || strings.Contains(cookies.Value, token) {
		t.Errorf("cookie = %+v", cookies)
	}
	if r := b.get(t, path, "Cookie: "+CookieName+"="+cookies.Value); r.status != http.StatusOK {
		t.Errorf("with the cookie: status %d", r.status)
	}
	if r := b.get(t, path, "Cookie: "+CookieName+"=forged"); r.status != http.StatusUnauthorized {
		t.Errorf("forged cookie: status %d", r.status)
	}
	if r := b.get(t, "/static/style.css"); r.status != http.StatusUnauthorized {
		t.Errorf("assets without token: status %d, want 401", r.status)
	}
}

func TestCheckAddr(t *testing.T) {
	tests := []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8080", "", true},
		{"localhost:8080", "", true},
		{"[::1]:8080", "", true},
		{"127.0.0.2:0", "", true},
		{"0.0.0.0:8080", "", false},
		{":8080", "", false},
		{"192.168.1.10:8080", "", false},
		{"example.com:80", "", false},
		{"0.0.0.0:8080", "0123456789abcdef", true},
		{":8080", "0123456789abcdef", true},
		{"no-port", "", false},
		// A token given must be strong, on any address.
		{"0.0.0.0:8080", "x", false},
		{"0.0.0.0:8080", "                ", false},
		{"0.0.0.0:8080", " 0123456789abcdef", false},
		{"0.0.0.0:8080", "0123456789abcdef\n", false},
		{"127.0.0.1:8080", "short", false},
	}
	for _, tt := range tests {
		err := CheckAddr(tt.addr, tt.token)
		if (err == nil) != tt.ok {
			t.Errorf("CheckAddr(%q, %q) = %v, want ok=%v", tt.addr, tt.token, err, tt.ok)
		}
		if err != nil && !errors.Is(err, evalrun.ErrInvalid) {
			t.Errorf("CheckAddr(%q): %v is not ErrInvalid", tt.addr, err)
		}
	}
	if err := CheckAddr("0.0.0.0:8080", ""); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("error should name the token: %v", err)
	}
}

// countingStore counts the scans of results.
type countingStore struct {
	evalrun.Store
	scans atomic.Int64
}

func (s *countingStore) ScanResults(ctx context.Context, runID string, q evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	s.scans.Add(1)
	return s.Store.ScanResults(ctx, runID, q, fn)
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *fakeClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestReportCache(t *testing.T) {
	st := &countingStore{Store: inmem.New()}
	seed(t, st)
	clock := &fakeClock{now: t0}
	b := setupStore(t, st, Options{Clock: clock, RefreshInterval: 3 * time.Second})

	b.mustGet(t, "/runs/"+runA, http.StatusOK)
	b.mustGet(t, "/runs/"+runA, http.StatusOK)
	b.mustGet(t, "/api/runs/"+runA, http.StatusOK)
	if n := st.scans.Load(); n != 1 {
		t.Fatalf("finished run: %d scans for 3 requests, want 1 (cached)", n)
	}

	// A running run is recomputed once its report is older than 3 s.
	run := fixtureRun("20260304T120000-cccccccc", "live", t0.Add(2*time.Hour))
	run.Status = evalrun.RunRunning
	ctx := context.Background()
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	st.scans.Store(0)
	b.mustGet(t, "/api/runs/"+run.ID, http.StatusOK)
	clock.advance(2 * time.Second)
	b.mustGet(t, "/api/runs/"+run.ID, http.StatusOK)
	if n := st.scans.Load(); n != 1 {
		t.Fatalf("running run within 3 s: %d scans, want 1", n)
	}
	if err := st.WriteResults(ctx, []*evalrun.ItemResult{fixtureResult(run.ID, 0, 1, 1, time.Second)}); err != nil {
		t.Fatal(err)
	}
	clock.advance(2 * time.Second)
	rep, err := report.ReadJSON(strings.NewReader(b.mustGet(t, "/api/runs/"+run.ID, http.StatusOK).body))
	if err != nil {
		t.Fatal(err)
	}
	if n := st.scans.Load(); n != 2 || rep.Scorer("exact").Count != 1 {
		t.Fatalf("running run after 4 s: %d scans (want 2), exact count %d (want 1)", n, rep.Scorer("exact").Count)
	}

	// When the run finishes (its record changes), the report is rebuilt.
	run.Status, run.Succeeded = evalrun.RunCompleted, 1
	if err := st.UpdateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	body := b.mustGet(t, "/runs/"+run.ID, http.StatusOK).body
	if n := st.scans.Load(); n != 3 {
		t.Fatalf("finished run: %d scans, want 3", n)
	}
	lacks(t, "finished run", body, "data-live-run")
}

func TestServe(t *testing.T) {
	b := setup(t, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, b.srv) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/api/runs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve after cancel = %v, want nil", err)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
		t.Error("server still answers after shutdown")
	}
}

func TestListenAndServeRefusesPublicAddr(t *testing.T) {
	err := ListenAndServe(context.Background(), "0.0.0.0:0", inmem.New(), Options{})
	if !errors.Is(err, evalrun.ErrInvalid) {
		t.Fatalf("ListenAndServe on 0.0.0.0 without token = %v, want ErrInvalid", err)
	}
}

func TestPrewarm(t *testing.T) {
	st := &countingStore{Store: inmem.New()}
	seed(t, st)
	b := setupStore(t, st, Options{Prewarm: 1})
	<-b.srv.prewarmed
	if n := st.scans.Load(); n != 1 {
		t.Fatalf("prewarm of the newest run: %d scans, want 1", n)
	}
	b.mustGet(t, "/runs/"+runB, http.StatusOK)
	if n := st.scans.Load(); n != 1 {
		t.Fatalf("page of a prewarmed run: %d scans, want 1 (served from memory)", n)
	}
}

// reportStore keeps reports in memory, as a store implementing ReportStore
// would in a table.
type reportStore struct {
	*countingStore
	reports map[string][]byte
}

func (s *reportStore) GetReportJSON(_ context.Context, runID string) ([]byte, error) {
	if r, ok := s.reports[runID]; ok {
		return r, nil
	}
	return nil, evalrun.ErrNotFound
}

func TestStoredReport(t *testing.T) {
	st := &reportStore{countingStore: &countingStore{Store: inmem.New()}, reports: map[string][]byte{}}
	seed(t, st)
	ctx := context.Background()
	rep, err := report.FromStore(ctx, st, runB)
	if err != nil {
		t.Fatal(err)
	}
	rep.MacroPassRate = fptr(0.123) // a marker: proves the stored report is served
	var buf strings.Builder
	if err := report.WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	st.reports[runB] = []byte(buf.String())
	st.scans.Store(0)
	b := setupStore(t, st, Options{})
	contains(t, "run page from a stored report", b.mustGet(t, "/runs/"+runB, http.StatusOK).body, "12.3%")
	if n := st.scans.Load(); n != 0 {
		t.Fatalf("%d scans with a stored report, want 0", n)
	}
	// No stored report for A: built from the results.
	contains(t, "run page without a stored report", b.mustGet(t, "/runs/"+runA, http.StatusOK).body, "100.0%")
	if n := st.scans.Load(); n != 1 {
		t.Fatalf("%d scans, want 1", n)
	}
	// A stale stored report (the run was resumed) is ignored.
	run, _ := st.GetRun(ctx, runB)
	run.Succeeded = 6
	if err := st.UpdateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	lacks(t, "stale stored report", b.mustGet(t, "/runs/"+runB, http.StatusOK).body, "12.3%")
}

func TestItemsTagSuggestions(t *testing.T) {
	b := setup(t, Options{})
	lacks(t, "items page before the report", b.mustGet(t, "/runs/"+runB+"/items", http.StatusOK).body, `<datalist id="tags">`)
	b.mustGet(t, "/runs/"+runB, http.StatusOK) // computes the report
	contains(t, "items page after the report", b.mustGet(t, "/runs/"+runB+"/items", http.StatusOK).body,
		`<datalist id="tags"><option value="billing"></option><option value="login"></option><option value="refund"></option></datalist>`)
}
