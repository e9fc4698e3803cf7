package web

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/internal/browsertest"
)

var screenshots = flag.Bool("screenshots", false, "rewrite docs/img/run.png and docs/img/compare.png (or set EVALRUN_UPDATE_SCREENSHOTS=1)")

// browser starts the tests' headless Chromium (internal/browsertest):
// skipped without one, unless EVALRUN_REQUIRE_BROWSER=1.
func browser(t *testing.T) context.Context {
	t.Helper()
	return browsertest.Start(t)
}

// serve serves b's handler on 127.0.0.1 for the browser.
func serve(t *testing.T, b *bundle) string {
	t.Helper()
	ts := httptest.NewServer(b.srv)
	t.Cleanup(ts.Close)
	return ts.URL
}

// do runs the steps of one stage of a test, failing it on error.
func do(t *testing.T, ctx context.Context, stage string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", stage, err)
	}
}

// get runs one action that returns a value.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// text returns the visible text of the first element matching the CSS
// selector.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return get(t, ctx, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// TestBrowserFlow opens the runs list, clicks into a run, filters the
// failed items, opens one, and compares two runs, in a real browser.
func TestBrowserFlow(t *testing.T) {
	ctx := browser(t)
	b := setup(t, Options{})
	base := serve(t, b)

	do(t, ctx, "runs list", chromedp.Navigate(base+"/"), chromedp.WaitVisible(css("#runs")))
	if runs := text(t, ctx, "#runs tbody"); !strings.Contains(runs, "candidate") || !strings.Contains(runs, "baseline") || !strings.Contains(runs, "77.5%") {
		t.Fatalf("runs list shows %q", runs)
	}

	do(t, ctx, "click into run B",
		chromedp.Click(css(`a.run-link[href="/runs/`+runB+`"]`)),
		chromedp.WaitVisible(css("#scorers")))
	if title, macro := text(t, ctx, "h1"), text(t, ctx, "#macro"); title != "candidate" || macro != "77.5%" {
		t.Fatalf("run page: title %q macro %q", title, macro)
	}

	do(t, ctx, "filter failed items",
		chromedp.Click(css("#items-link")),
		chromedp.WaitVisible(css("#item-filters")),
		chromedp.Click(css("#failed-only")),
		chromedp.Click(css("#apply")),
		// Only the filtered page has a single row.
		chromedp.WaitVisible(css(`#items tbody tr:only-child a.item-link`)))
	rows := get(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll("#items tbody tr").length`))
	if rowText := text(t, ctx, "#items tbody"); rows != 1 || !strings.Contains(rowText, "q4") || !strings.Contains(rowText, "timeout") {
		t.Fatalf("failed items: %d rows: %q", rows, rowText)
	}
	if loc := get(t, ctx, "location", chromedp.Location()); !strings.Contains(loc, "failed=1") {
		t.Fatalf("filtered URL %q lacks failed=1", loc)
	}

	do(t, ctx, "open the failed item",
		chromedp.Click(css(`#items tbody tr:only-child a.item-link`)),
		chromedp.WaitVisible(css("#item-detail")))
	if title, kind, msg, retries := text(t, ctx, "#item-title"), text(t, ctx, "#error-kind"), text(t, ctx, "#error"), text(t, ctx, "#retries"); title != "q4" || kind != "timeout" || msg != "deadline exceeded after 30s" || retries != "2" {
		t.Fatalf("item page: %q %q %q %q", title, kind, msg, retries)
	}

	do(t, ctx, "compare A and B",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(css("#runs")),
		chromedp.Click(css(`input[name="a"][value="`+runA+`"]`)),
		chromedp.Click(css(`input[name="b"][value="`+runB+`"]`)),
		chromedp.Click(css("#compare-button")),
		chromedp.WaitVisible(css("#deltas")))
	if deltas := text(t, ctx, "#deltas"); !strings.Contains(deltas, "exact") || !strings.Contains(deltas, "-0.333") { // q4 crashed in B: a failure
		t.Fatalf("deltas: %q", deltas)
	}
	if regressed := text(t, ctx, "#regressed"); !strings.Contains(regressed, "q2") || !strings.Contains(regressed, "q6") {
		t.Fatalf("regressed: %q", regressed)
	}
	do(t, ctx, "open side by side",
		chromedp.Click(css(`#regressed tbody tr:first-child summary`)),
		chromedp.WaitVisible(css(`#regressed tbody tr:first-child details[open] .sides`)))
	if sides := text(t, ctx, `#regressed tbody tr:first-child .sides`); !strings.Contains(sides, "output 2 of aaaa") || !strings.Contains(sides, "output 2 of bbbb") {
		t.Fatalf("side by side: %q", sides)
	}
}

// TestBrowserRepeats opens the page of a run with repeats: pass@k, pass^k
// and the flaky items are visible, and a flaky item's link lists its
// repeats.
func TestBrowserRepeats(t *testing.T) {
	ctx := browser(t)
	b := setup(t, Options{})
	seedRepeats(t, b.store)
	base := serve(t, b)

	do(t, ctx, "run page with repeats", chromedp.Navigate(base+"/runs/"+runRepeats), chromedp.WaitVisible(css("#repeats")))
	if h := text(t, ctx, "#repeats thead"); !strings.Contains(h, "pass@3") || !strings.Contains(h, "pass^3") {
		t.Fatalf("repeats header: %q", h)
	}
	if exact, judge := text(t, ctx, "#repeats tbody tr:nth-child(1)"), text(t, ctx, "#repeats tbody tr:nth-child(2)"); !strings.Contains(exact, "66.7%\t33.3%") || !strings.Contains(judge, "100.0%\t33.3%") {
		t.Fatalf("repeats rows: %q / %q", exact, judge)
	}
	if rows := get(t, ctx, "flaky rows", chromedp.Evaluate[int](`document.querySelectorAll("#flaky tbody tr").length`)); rows != 3 {
		t.Fatalf("%d flaky rows, want 3", rows)
	}
	if visible := get(t, ctx, "flaky visible", chromedp.Evaluate[bool](`(() => { const r = document.querySelector("#flaky").getBoundingClientRect(); return r.width > 0 && r.height > 0 })()`)); !visible {
		t.Fatal("the flaky items table is not displayed")
	}

	do(t, ctx, "open a flaky item's repeats",
		chromedp.Click(css(`#flaky a[href$="items?id=q2"]`)),
		chromedp.WaitVisible(css("#items")))
	if ids := get(t, ctx, "item ids", chromedp.Evaluate[string](`[...document.querySelectorAll("#items a.item-link")].map(a => a.textContent).join(",")`)); ids != "q2,q2,q2" {
		t.Fatalf("the flaky item's page lists %q, want its three repeats", ids)
	}
}

// TestBrowserLiveRefresh shows a running run and moves its counts: the page
// updates them without a reload, then reloads once the run has finished.
func TestBrowserLiveRefresh(t *testing.T) {
	ctx := browser(t)
	b := setup(t, Options{RefreshInterval: time.Millisecond})
	base := serve(t, b)
	live := fixtureRun("20260304T120000-cccccccc", "live", t0.Add(2*time.Hour))
	live.Status, live.Total, live.Succeeded, live.CompletedAt = evalrun.RunRunning, 10, 2, time.Time{}
	bg := context.Background()
	if err := b.store.CreateRun(bg, live); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "open the running run", chromedp.Navigate(base+"/runs/"+live.ID), chromedp.WaitVisible(css("#live")))
	if before := text(t, ctx, `[data-live="succeeded"]`); before != "2" {
		t.Fatalf("succeeded before = %q", before)
	}
	// A marker on window survives only if the page is not reloaded.
	get(t, ctx, "marker", chromedp.Evaluate[bool](`window.__noReload = true`))
	live.Succeeded, live.Failed = 7, 1
	if err := b.store.UpdateRun(bg, live); err != nil {
		t.Fatal(err)
	}
	get(t, ctx, "counts refresh in place", chromedp.Poll[bool](
		`document.querySelector('[data-live="succeeded"]').textContent === "7" &&
			document.querySelector('[data-live="failed"]').textContent === "1" && window.__noReload === true`,
		chromedp.WithPollingTimeout(20*time.Second)))

	live.Status, live.Succeeded, live.Failed, live.CompletedAt = evalrun.RunCompleted, 9, 1, live.StartedAt.Add(time.Minute)
	if err := b.store.UpdateRun(bg, live); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "finished run reloads", chromedp.WaitNotPresent(css("#live")), chromedp.WaitVisible(css("#status")))
	if status := text(t, ctx, "#status"); status != "completed" {
		t.Fatalf("status after reload = %q", status)
	}
}

// demoSeed stores two 400-item runs with spread scores, for screenshots.
func demoSeed(t *testing.T, st evalrun.Store) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 5))
	tags := []string{"billing", "refund", "login", "shipping"}
	var items []*evalrun.Item
	for i := range 400 {
		items = append(items, &evalrun.Item{
			ID:       fmt.Sprintf("ticket-%04d", i+1),
			Input:    evalrun.String(fmt.Sprintf("Customer question #%d about %s", i+1, tags[i%4])),
			Expected: evalrun.String("A helpful answer"),
			Metadata: map[string]any{"tags": tags[i%4]},
		})
	}
	if _, _, err := st.ImportDataset(ctx, "support-tickets", items); err != nil {
		t.Fatal(err)
	}
	for k, id := range []string{runA, runB} {
		created := t0.Add(time.Duration(k) * time.Hour)
		r := &evalrun.Run{
			ID: id, Name: []string{"gpt-4o-mini baseline", "gpt-4o-mini + new prompt"}[k],
			Dataset: "support-tickets", DatasetVersion: 1,
			Target: evalrun.TargetInfo{Kind: "openai", Name: "gpt-4o-mini"},
			Scorers: []evalrun.ScorerInfo{
				{Name: "exact_match", Kind: "exact_match", Threshold: 1},
				{Name: "helpfulness", Kind: "llm_judge", Threshold: 0.7},
				{Name: "similarity", Kind: "embedding", Threshold: 0.8},
			},
			Status: evalrun.RunCompleted, Total: 400, CreatedAt: created, StartedAt: created,
			CompletedAt: created.Add(3*time.Minute + 12*time.Second),
		}
		if err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		var results []*evalrun.ItemResult
		for i := range 400 {
			res := &evalrun.ItemResult{
				RunID: id, Index: i, ItemID: items[i].ID, Attempts: 1,
				Latency:   time.Duration(300+rng.IntN(1500)) * time.Millisecond,
				Usage:     evalrun.Usage{InputTokens: iptr(int64(200 + rng.IntN(300))), OutputTokens: iptr(int64(50 + rng.IntN(200))), CostUSD: fptr(0.0004)},
				StartedAt: created, CompletedAt: created.Add(time.Second),
			}
			if rng.IntN(100) < 2+k {
				res.Error, res.ErrorKind, res.Attempts, res.RetryCount = "HTTP 503: upstream unavailable", evalrun.ErrorTransient, 3, 2
				r.Failed++
			} else {
				r.Succeeded++
				res.Output = evalrun.String(fmt.Sprintf("Thanks for reaching out! Here is how to fix %s (run %d).", tags[i%4], k))
				shift := 0.04 * float64(k)
				if i%4 == 1 {
					shift = -0.12 * float64(k) // refunds got worse
				}
				h := min(max(0.35+rng.Float64()*0.65+shift, 0), 1)
				sim := min(max(0.72+rng.NormFloat64()*0.12+shift, 0), 1)
				ex := 0.0
				if rng.IntN(10) < 3+k {
					ex = 1
				}
				res.Scores = []evalrun.ScorerResult{
					{Scorer: "exact_match", Score: &ex, Passed: ex >= 1},
					{Scorer: "helpfulness", Score: &h, Passed: h >= 0.7, Reason: "judge: answers the question"},
					{Scorer: "similarity", Score: &sim, Passed: sim >= 0.8},
				}
			}
			results = append(results, res)
		}
		if err := st.WriteResults(ctx, results); err != nil {
			t.Fatal(err)
		}
		if err := st.UpdateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBrowserScreenshots renders the run and compare pages of a 400-item
// run, checks that the histograms are drawn, and, with -screenshots or
// EVALRUN_UPDATE_SCREENSHOTS=1, saves them to docs/img/.
func TestBrowserScreenshots(t *testing.T) {
	ctx := browser(t)
	st := inmem.New()
	demoSeed(t, st)
	b := setupStore(t, st, Options{})
	base := serve(t, b)
	update := *screenshots || os.Getenv("EVALRUN_UPDATE_SCREENSHOTS") == "1"

	do(t, ctx, "run page", chromedp.Navigate(base+"/runs/"+runB), chromedp.WaitVisible(css("#scorers svg.hist")))
	if bars := get(t, ctx, "bars", chromedp.Evaluate[int](`document.querySelectorAll("#scorers svg.hist rect").length`)); bars != 30 {
		t.Fatalf("%d histogram bars, want 3 scorers × 10", bars)
	}
	runPNG := get(t, ctx, "run screenshot", chromedp.FullScreenshot(100))

	do(t, ctx, "compare page",
		chromedp.Navigate(base+"/compare?a="+runA+"&b="+runB),
		chromedp.WaitVisible(css("#deltas")),
		chromedp.Click(css(`#regressed tbody tr:first-child summary`)),
		chromedp.WaitVisible(css(`#regressed tbody tr:first-child .sides`)))
	if rows := get(t, ctx, "delta rows", chromedp.Evaluate[int](`document.querySelectorAll("#deltas tbody tr").length`)); rows != 3 {
		t.Fatalf("%d delta rows, want 3", rows)
	}
	comparePNG := get(t, ctx, "compare screenshot", chromedp.CaptureScreenshot())
	if len(runPNG) < 1000 || len(comparePNG) < 1000 {
		t.Fatalf("screenshots too small: %d, %d bytes", len(runPNG), len(comparePNG))
	}
	if !update {
		return
	}
	dir := filepath.Join("..", "docs", "img")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, png := range map[string][]byte{"run.png": runPNG, "compare.png": comparePNG} {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %s/run.png and compare.png", dir)
}

// screenshot takes a full-page screenshot (label names the step in
// errors), fails the test when it is under 1000 bytes and, with
// -screenshots or EVALRUN_UPDATE_SCREENSHOTS=1, writes it to docs/img/name.
func screenshot(t *testing.T, ctx context.Context, label, name string) {
	t.Helper()
	png := get(t, ctx, label, chromedp.FullScreenshot(100))
	if len(png) < 1000 {
		t.Fatalf("screenshot of %d bytes", len(png))
	}
	if *screenshots || os.Getenv("EVALRUN_UPDATE_SCREENSHOTS") == "1" {
		if err := os.WriteFile(filepath.Join("..", "docs", "img", name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("wrote docs/img/" + name)
	}
}

// TestBrowserAgentItem opens an agent item in a real browser: the timeline
// shows the calls in order, the mocked badge on the mocked call, the
// failed call's error drawn as one, a collapsed argument that opens on a
// click; markup from the model or the tools is shown as text and never
// runs; the conversation input lists its messages.
func TestBrowserAgentItem(t *testing.T) {
	ctx := browser(t)
	b := setupAgent(t)
	base := serve(t, b)

	do(t, ctx, "run page", chromedp.Navigate(base+"/runs/"+runAgent), chromedp.WaitVisible(css("#agent")))
	if steps, calls := text(t, ctx, "#mean-steps"), text(t, ctx, "#mean-calls"); steps != "2.00" || calls != "1.67" {
		t.Fatalf("agent figures: mean steps %q, mean calls %q", steps, calls)
	}
	do(t, ctx, "items", chromedp.Click(css("#items-link")), chromedp.WaitVisible(css("#items")))
	if cells := get(t, ctx, "calls column", chromedp.Evaluate[string](`[...document.querySelectorAll("#items td.calls")].map(td => td.textContent).join("|")`)); cells != "4 (1 failed)|0|1" {
		t.Fatalf("calls column %q", cells)
	}
	do(t, ctx, "open the agent item",
		chromedp.Click(css(`#items a.item-link[href$="/items/0"]`)),
		chromedp.WaitVisible(css("#timeline")))

	if h := text(t, ctx, "#trajectory-summary"); h != "3 steps · 4 tool calls · 1 failed · 1 mocked" {
		t.Fatalf("trajectory header %q", h)
	}
	names := get(t, ctx, "call names", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#timeline > li.call .call-name")].map(e => e.textContent)`))
	if want := []string{"get_weather", "search", "lookup_many", "x" + pwnImg}; strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Fatalf("calls in the timeline: %q, want %q", names, want)
	}
	mocked := get(t, ctx, "mocked badges", chromedp.Evaluate[[]bool](`[...document.querySelectorAll("#timeline > li.call")].map(li => li.querySelector(".badge.mocked") !== null)`))
	if len(mocked) != 4 || !mocked[0] || mocked[1] || mocked[2] || mocked[3] {
		t.Fatalf("mocked badges %v, want on the first call only", mocked)
	}
	latencies := get(t, ctx, "latencies", chromedp.Evaluate[string](`[...document.querySelectorAll("#timeline .call-latency")].map(e => e.textContent).join("|")`))
	if latencies != "< 1 ms|121 ms|—|1.50 s" {
		t.Fatalf("latencies %q", latencies)
	}

	// The failed call: its error in place of an output, drawn in red.
	failed := get(t, ctx, "failed call", chromedp.Evaluate[map[string]any](`(() => {
		const li = document.querySelectorAll("#timeline > li.call")[1];
		const pre = li.querySelector(".call-error pre");
		return {failed: li.classList.contains("call-failed"), output: li.querySelector(".call-output") !== null,
			error: pre.textContent, color: getComputedStyle(pre).color};
	})()`))
	if failed["failed"] != true || failed["output"] != false || failed["error"] != "HTTP 500: <b>down</b> "+pwnImg || failed["color"] != "rgb(127, 29, 29)" {
		t.Fatalf("failed call: %v", failed)
	}

	if a := text(t, ctx, "#timeline > li.call:nth-child(2) .call-args pre"); !strings.Contains(a, `"q": "`+pwnScript+`"`) {
		t.Fatalf("arguments with markup shown as %q", a)
	}

	// The long arguments are collapsed; a click opens them.
	const args = `#timeline > li.call:nth-child(3) .call-args`
	if open := get(t, ctx, "collapsed", chromedp.Evaluate[bool](`document.querySelector("`+args+` details").open`)); open {
		t.Fatal("the long arguments are not collapsed")
	}
	do(t, ctx, "expand the arguments", chromedp.Click(css(args+" summary")), chromedp.WaitVisible(css(args+" details[open] pre")))
	if a := text(t, ctx, args+" pre"); !strings.Contains(a, `"field_a": "value of a"`) || !strings.Contains(a, `"field_y": "value of y"`) {
		t.Fatalf("expanded arguments: %q", a)
	}
	if out := text(t, ctx, "#timeline > li.call:nth-child(3) .call-output pre"); out != pwnScript+pwnImg {
		t.Fatalf("output with markup shown as %q, want the text itself", out)
	}

	// Nothing the model or the tools wrote became markup or ran.
	injected := get(t, ctx, "injected", chromedp.Evaluate[map[string]any](`({pwned: typeof window.__pwned,
		scripts: document.querySelectorAll("main script").length, imgs: document.querySelectorAll("main img").length})`))
	if injected["pwned"] != "undefined" || injected["scripts"] != float64(0) || injected["imgs"] != float64(0) {
		t.Fatalf("injected markup: %v", injected)
	}

	// The conversation input.
	roles := get(t, ctx, "roles", chromedp.Evaluate[string](`[...document.querySelectorAll("#conversation > li .role")].map(e => e.textContent).join(",")`))
	if roles != "system,user,assistant,user" {
		t.Fatalf("conversation roles %q", roles)
	}
	if msg := text(t, ctx, "#conversation > li:nth-child(2) pre"); msg != "Weather in Paris? "+pwnScript {
		t.Fatalf("user message %q", msg)
	}
}

// demoAgentSeed stores a small travel agent's run, for the screenshot.
func demoAgentSeed(t *testing.T, st evalrun.Store) (runID string) {
	t.Helper()
	ctx := context.Background()
	conv := `[{"role":"system","content":"You are a travel assistant."},{"role":"user","content":"I am flying to Tokyo tomorrow."},` +
		`{"role":"assistant","content":"Great! How can I help?"},{"role":"user","content":"What should I wear?"}]`
	if _, _, err := st.ImportDataset(ctx, "travel", []*evalrun.Item{{ID: "wear-tokyo", Input: json.RawMessage(conv), Metadata: map[string]any{"tags": "weather"}}}); err != nil {
		t.Fatal(err)
	}
	run := &evalrun.Run{ID: "20260304T140000-travel01", Name: "travel agent", Dataset: "travel", DatasetVersion: 1,
		Target:  evalrun.TargetInfo{Kind: "openai", Name: "gpt-4o-mini"},
		Scorers: []evalrun.ScorerInfo{{Name: "called_weather", Kind: "tool_called", Threshold: 1}},
		Status:  evalrun.RunCompleted, Total: 1, Succeeded: 1, CreatedAt: t0, StartedAt: t0, CompletedAt: t0.Add(3 * time.Second)}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	one := 1.0
	res := &evalrun.ItemResult{RunID: run.ID, Index: 0, ItemID: "wear-tokyo", Attempts: 1, Latency: 2400 * time.Millisecond,
		Output:    evalrun.String("Bring a raincoat: 18 °C and rain in Tokyo tomorrow."),
		Usage:     evalrun.Usage{InputTokens: iptr(1830), OutputTokens: iptr(96), CostUSD: fptr(0.00033)},
		StartedAt: t0, CompletedAt: t0.Add(2400 * time.Millisecond),
		Scores: []evalrun.ScorerResult{{Scorer: "called_weather", Score: &one, Passed: true, Reason: "get_weather called with {\"city\": \"Tokyo\"}"}},
		Trajectory: &evalrun.Trajectory{Steps: 3, Calls: []evalrun.ToolCall{
			{Name: "get_weather", Args: json.RawMessage(`{"city":"Tokyo"}`), Output: json.RawMessage(`{"temp_c":18,"sky":"rain"}`), Mocked: true, LatencyMS: fptr(0.03)},
			{Name: "get_forecast", Args: json.RawMessage(`{"city":"Tokyo","days":3}`), Error: "HTTP 503: forecast service unavailable", LatencyMS: fptr(212.4)},
			{Name: "search_web", Args: json.RawMessage(`{"query":"what to wear in Tokyo when it rains","max_results":2}`),
				Output: json.RawMessage(`{"results":[{"title":"What to wear in Tokyo in the rainy season","url":"https://example.com/a"},{"title":"Tokyo weather guide","url":"https://example.com/b"}]}`), LatencyMS: fptr(840)},
		}},
	}
	if err := st.WriteResults(ctx, []*evalrun.ItemResult{res}); err != nil {
		t.Fatal(err)
	}
	return run.ID
}

// TestBrowserAgentScreenshot renders a travel agent's item page and, with
// -screenshots or EVALRUN_UPDATE_SCREENSHOTS=1, saves it to
// docs/img/trajectory.png.
func TestBrowserAgentScreenshot(t *testing.T) {
	ctx := browser(t)
	st := inmem.New()
	id := demoAgentSeed(t, st)
	base := serve(t, setupStore(t, st, Options{}))
	do(t, ctx, "agent item", chromedp.Navigate(base+"/runs/"+id+"/items/0"), chromedp.WaitVisible(css("#timeline")))
	if n := get(t, ctx, "calls", chromedp.Evaluate[int](`document.querySelectorAll("#timeline > li.call").length`)); n != 3 {
		t.Fatalf("%d calls drawn, want 3", n)
	}
	screenshot(t, ctx, "item screenshot", "trajectory.png")
}
