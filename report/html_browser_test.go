package report

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/browsertest"
)

var screenshot = flag.Bool("screenshot", false, "rewrite docs/img/report-html.png (or set EVALRUN_UPDATE_SCREENSHOTS=1)")

// htmlBrowser starts the tests' headless Chromium (internal/browsertest),
// without scrollbars so that the screenshot shows the page alone.
func htmlBrowser(t *testing.T) context.Context {
	t.Helper()
	return browsertest.Start(t, chromedp.Flag("hide-scrollbars", true))
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// demoReport is a 48-item run of a support bot: three scorers with spread
// scores, tags, latencies, a timeout, a scorer error, a long output and
// one item whose every field is an attack.
func demoReport() *Report {
	run := &evalrun.Run{
		ID: "20260102T030405-5e1f0c2a", Name: "support-bot nightly", Dataset: "support-faq", DatasetVersion: 7,
		Target: evalrun.TargetInfo{Kind: "http", Name: "answer-api"},
		Scorers: []evalrun.ScorerInfo{{Name: "exact_match", Threshold: 0.5}, {Name: "contains", Threshold: 0.5},
			{Name: "similarity", Threshold: 0.8}},
		Status: evalrun.RunCompleted, CreatedAt: t0, StartedAt: t0, CompletedAt: t0.Add(41300 * time.Millisecond),
	}
	tags := []string{"billing", "refund", "shipping", "account"}
	var rs []*evalrun.ItemResult
	for i := range 48 {
		id := fmt.Sprintf("faq-%03d", i)
		q := fmt.Sprintf("Question %d: how do I change my %s settings?", i, tags[i%4])
		it := &evalrun.Item{ID: id, Input: evalrun.String(q), Expected: evalrun.String("Open Settings → " + tags[i%4]),
			Metadata: map[string]any{"tags": []any{tags[i%4]}}}
		r := &evalrun.ItemResult{RunID: run.ID, Index: i, ItemID: id, Item: it, Attempts: 1,
			Latency: time.Duration(180+(i*137)%900) * time.Millisecond,
			Usage:   evalrun.Usage{InputTokens: evalrun.Int64(int64(40 + i%7)), OutputTokens: evalrun.Int64(int64(12 + i%5)), CostUSD: evalrun.Float64(0.00004)}}
		switch {
		case i == 7:
			r.Error, r.ErrorKind, r.Attempts, r.RetryCount = "deadline exceeded after 3 attempts (item_timeout 10s)", evalrun.ErrorTimeout, 3, 2
		case i == 2:
			it.ID, r.ItemID = `<script>alert("id")</script>`, `<script>alert("id")</script>`
			it.Input = evalrun.String(`"><img src=x onerror="window.__xss=1">`)
			it.Metadata["tags"] = []any{`<b onmouseover="window.__xss=1">tag</b>`}
			r.Output = evalrun.String(`javascript:window.__xss=1 https://evil.example/</pre><iframe src="https://evil.example/">`)
			r.Scores = []evalrun.ScorerResult{score("exact_match", 0, 0.5), score("contains", 0, 0.5), score("similarity", 0.1, 0.8)}
			r.Scores[0].Reason = `<svg onload="window.__xss=1">`
		default:
			out := "Open Settings → " + tags[i%4]
			e, c, s := 1.0, 1.0, 1.0
			if i%5 == 1 {
				out, e, s = "Go to your profile, then "+tags[i%4], 0, 0.55+float64(i%4)/10
			}
			if i%9 == 4 {
				out, e, c, s = "I am not sure.", 0, 0, 0.12+float64(i%3)/10
			}
			if i == 11 {
				out = strings.Repeat("A very long answer that goes on. ", 40)
				e, c, s = 0, 1, 0.31
			}
			r.Output = evalrun.String(out)
			r.Scores = []evalrun.ScorerResult{score("exact_match", e, 0.5), score("contains", c, 0.5), score("similarity", s, 0.8)}
			if i == 19 {
				r.Scores[1] = evalrun.ScorerResult{Scorer: "contains", Error: "expected output is not a string", ErrorKind: evalrun.ErrorPermanent}
			}
		}
		rs = append(rs, r)
	}
	for _, r := range rs {
		if r.Failed() {
			run.Failed++
		} else {
			run.Succeeded++
		}
	}
	run.Total = len(rs)
	return Build(run, rs)
}

// TestHTMLInBrowser opens the HTML report in Chromium from a file: the
// layout holds (no horizontal overflow at 1280 or 800 pixels, the
// histograms drawn), the page loads nothing and runs nothing (no script,
// no image or frame element; the attack item's handlers never fire; its
// markup shows as text); and with -screenshot or
// EVALRUN_UPDATE_SCREENSHOTS=1 it saves docs/img/report-html.png.
func TestHTMLInBrowser(t *testing.T) {
	ctx := htmlBrowser(t)
	var buf bytes.Buffer
	conds, _ := ParseConditions([]string{"pass_rate(exact_match) < 0.6", "failed > 0"})
	rep := demoReport()
	if err := WriteHTML(&buf, rep, HTMLOptions{FailOn: conds}); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, buf.Bytes())
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.WaitVisible(chromedp.CSS("#scorers svg.hist"))); err != nil {
		t.Fatal(err)
	}

	if n := eval[int](t, ctx, `document.querySelectorAll("article.it").length`); n != 48 {
		t.Errorf("%d items shown, want 48", n)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("script, img, iframe, object, embed, link, form, input, base").length`); n != 0 {
		t.Errorf("%d script, image, frame or form elements", n)
	}
	if fired := eval[bool](t, ctx, `window.__xss !== undefined`); fired {
		t.Error("a handler from the dataset ran")
	}
	text := eval[string](t, ctx, `document.getElementById("i2").textContent`)
	for _, want := range []string{`<script>alert("id")</script>`, `"><img src=x onerror="window.__xss=1">`, `<svg onload="window.__xss=1">`, "https://evil.example/</pre><iframe"} {
		if !strings.Contains(text, want) {
			t.Errorf("the attack item does not show %s as text:\n%s", want, text)
		}
	}
	// Histograms: 3 scorers × 10 bars and the latency's, all drawn.
	if n := eval[int](t, ctx, `[...document.querySelectorAll("#scorers svg.hist")].filter(s => { const r = s.getBoundingClientRect(); return r.width >= 200 && r.height >= 60 }).length`); n != 3 {
		t.Errorf("%d visible score histograms, want 3", n)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#scorers svg.hist rect").length`); n != 30 {
		t.Errorf("%d score histogram bars, want 30", n)
	}
	if h := eval[float64](t, ctx, `Math.max(...[...document.querySelectorAll("#latency-hist rect")].map(r => r.getBoundingClientRect().height))`); h < 60 {
		t.Errorf("the latency histogram's tallest bar is %v px high", h)
	}
	// A folded long output opens.
	if open := eval[bool](t, ctx, `(() => { const d = document.querySelector("#i11 details"), pre = d.querySelector("pre"); const before = pre.checkVisibility(); d.open = true; return !before && pre.checkVisibility() && pre.getBoundingClientRect().height > 0 })()`); !open {
		t.Error("the long output of #i11 is not folded in <details> that open")
	}
	for _, width := range []int64{1280, 800} {
		if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(width, 900)); err != nil {
			t.Fatal(err)
		}
		if over := eval[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
			t.Errorf("at %d px the page scrolls sideways by %d px", width, over)
		}
	}

	// Printed, the folded values are open (a printout cannot click).
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#i11 details").open = false`)); err != nil {
		t.Fatal(err)
	}
	if shown := eval[bool](t, ctx, `document.querySelector("#i11 details pre").checkVisibility()`); shown {
		t.Error("on screen, a folded value is shown")
	}
	printMedia := func(media string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
			_, err := cdp.Call(ctx, target, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: media})
			return err
		}))
		if err != nil {
			t.Fatal(err)
		}
	}
	printMedia("print")
	if shown := eval[bool](t, ctx, `document.querySelector("#i11 details pre").checkVisibility()`); !shown {
		t.Error("printed, a folded value is not shown")
	}
	printMedia("")

	update := *screenshot || os.Getenv("EVALRUN_UPDATE_SCREENSHOTS") == "1"
	if update {
		if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(1280, 1700)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#i11 details").open = false`)); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil || len(png) < 1000 {
			t.Fatalf("screenshot: %v, %d bytes", err, len(png))
		}
		out := filepath.Join("..", "docs", "img", "report-html.png")
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", out)
	}

	// The experiment report: four variants side by side on one row at
	// 1280 px, and no sideways scrolling of the page at 800 px either
	// (wide tables scroll in their own box).
	buf.Reset()
	if err := WriteExperimentHTML(context.Background(), &buf, expFixtureBuilt(t), HTMLOptions{FailOn: conds[:1]}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.WaitVisible(chromedp.CSS("#hist-table svg.hist"))); err != nil {
		t.Fatal(err)
	}
	if rows := eval[int](t, ctx, `new Set([...document.querySelectorAll("#i0 .xv > div")].map(d => Math.round(d.getBoundingClientRect().top))).size`); rows != 1 {
		t.Errorf("the four variants of #i0 are on %d rows at 1280 px, want 1", rows)
	}
	for _, width := range []int64{1280, 800} {
		if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(width, 900)); err != nil {
			t.Fatal(err)
		}
		if over := eval[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
			t.Errorf("experiment: at %d px the page scrolls sideways by %d px", width, over)
		}
	}
}
