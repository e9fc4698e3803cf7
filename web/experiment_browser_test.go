package web

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
)

// TestBrowserExperiment opens the experiments list from the nav, clicks
// into the experiment, reads its matrix, applies the "variants disagree"
// filter and checks the rows shown, then opens a variant's cell.
func TestBrowserExperiment(t *testing.T) {
	ctx := browser(t)
	b := setupExperiment(t)
	base := serve(t, b)

	do(t, ctx, "experiments list",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(css("#runs")),
		chromedp.Click(css("#nav-experiments")),
		chromedp.WaitVisible(css("#experiments")))
	if row := text(t, ctx, "#experiments tbody tr"); !strings.Contains(row, "model pick") || !strings.Contains(row, "mini (baseline), big, terse") {
		t.Fatalf("experiments list row %q", row)
	}

	do(t, ctx, "experiment page",
		chromedp.Click(css(`#experiments a.experiment-link`)),
		chromedp.WaitVisible(css("#matrix")))
	variants := get(t, ctx, "matrix rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#matrix tbody tr")].map(tr => tr.dataset.variant)`))
	if strings.Join(variants, ",") != "mini,big,terse" {
		t.Fatalf("matrix rows %q", variants)
	}
	if big := text(t, ctx, `#matrix tr[data-variant="big"]`); !strings.Contains(big, "60.0%") {
		t.Fatalf("big's matrix row %q", big)
	}
	if bars := get(t, ctx, "bars", chromedp.Evaluate[int](`document.querySelectorAll("#histograms svg.hist rect").length`)); bars != 60 {
		t.Fatalf("%d histogram bars, want 2 scorers × 3 variants × 10", bars)
	}
	ids := `[...document.querySelectorAll("#experiment-items tbody tr[data-item]")].map(tr => tr.dataset.item).join(",")`
	if all := get(t, ctx, "all rows", chromedp.Evaluate[string](ids)); all != "q1,q2,q3,q4,q5,q6" {
		t.Fatalf("rows before filtering %q", all)
	}

	do(t, ctx, "filter: variants disagree",
		chromedp.Click(css("#show-disagree")),
		chromedp.Click(css("#apply")),
		// The box is already checked on the page before the filtered one
		// loads: wait for the filtered page, where q1 (on which every
		// variant agrees) is gone.
		chromedp.WaitNotPresent(css(`#experiment-items tr[data-item="q1"]`)),
		chromedp.WaitVisible(css(`#show-disagree:checked`)))
	if shown := get(t, ctx, "disagreeing rows", chromedp.Evaluate[string](ids)); shown != "q2,q3,q4" {
		t.Fatalf("rows where the variants disagree %q, want q2,q3,q4", shown)
	}
	if loc := get(t, ctx, "location", chromedp.Location()); !strings.Contains(loc, "show=disagree") {
		t.Fatalf("filtered URL %q lacks show=disagree", loc)
	}
	// Each row is marked with text, not colour only.
	if badges := get(t, ctx, "badges", chromedp.Evaluate[int](`document.querySelectorAll("#experiment-items .disagree-badge").length`)); badges != 3 {
		t.Fatalf("%d disagree badges, want 3", badges)
	}
	if q4 := text(t, ctx, `#experiment-items tr[data-item="q4"]`); !strings.Contains(q4, "deadline exceeded after 30s") || !strings.Contains(q4, "answer 4 by mini") {
		t.Fatalf("q4 side by side %q", q4)
	}

	do(t, ctx, "open big's q4",
		chromedp.Click(css(`#experiment-items tr[data-item="q4"] a.cell-link[href="/runs/`+expRunID(expID, 1)+`/items/3"]`)),
		chromedp.WaitVisible(css("#item-detail")))
	if title, kind := text(t, ctx, "#item-title"), text(t, ctx, "#error-kind"); title != "q4" || kind != "timeout" {
		t.Fatalf("item page: %q %q", title, kind)
	}
}

// demoExperimentSeed stores a 300-item experiment of three variants whose
// differences are significant, for the screenshot.
func demoExperimentSeed(t *testing.T, st evalrun.Store) (id string) {
	t.Helper()
	id = "exp-20260304T150000-5e1ec7ed"
	const n = 300
	tags := []string{"billing", "refund", "login", "shipping"}
	items := make([]*evalrun.Item, n)
	for i := range items {
		items[i] = &evalrun.Item{ID: fmt.Sprintf("ticket-%04d", i+1), Input: evalrun.String(fmt.Sprintf("Customer question #%d about %s", i+1, tags[i%4])),
			Expected: evalrun.String("A helpful answer"), Metadata: map[string]any{"tags": tags[i%4]}}
	}
	if _, _, err := st.ImportDataset(context.Background(), "support-tickets", items); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	names := []string{"gpt-4o-mini", "gpt-4o", "terse-prompt"}
	shift := []float64{0, 0.12, -0.15}
	seedExperiment(t, st, id, "support bot: model and prompt", "support-tickets", t0.Add(5*time.Hour), names, n, func(v, i int) *evalrun.ItemResult {
		runID := expRunID(id, v)
		if rng.IntN(100) < 2 {
			return &evalrun.ItemResult{RunID: runID, ItemID: items[i].ID, Error: "HTTP 503: upstream unavailable", ErrorKind: evalrun.ErrorTransient,
				Attempts: 3, RetryCount: 2, Latency: 2 * time.Second}
		}
		h := min(max(0.45+rng.Float64()*0.55+shift[v], 0), 1)
		ex := 0.0
		if rng.Float64() < 0.45+shift[v]*2 {
			ex = 1
		}
		r := fixtureResult(runID, i, ex, h, time.Duration(300+rng.IntN(900)*(v+1))*time.Millisecond)
		r.ItemID = items[i].ID
		r.Scores[1].Passed = h >= 0.7
		r.Output = evalrun.String(fmt.Sprintf("Thanks for reaching out! Here is how to fix your %s issue (%s).", tags[i%4], names[v]))
		return r
	})
	return id
}

// TestBrowserExperimentScreenshot renders the experiment page of a
// 300-item, 3-variant experiment: significant cells are marked, the
// histograms drawn; with -screenshots or EVALRUN_UPDATE_SCREENSHOTS=1 it
// saves docs/img/experiment.png.
func TestBrowserExperimentScreenshot(t *testing.T) {
	ctx := browser(t)
	st := inmem.New()
	id := demoExperimentSeed(t, st)
	base := serve(t, setupStore(t, st, Options{}))
	do(t, ctx, "experiment page",
		chromedp.Navigate(base+"/experiments/"+id+"?show=disagree&size=6"),
		chromedp.WaitVisible(css("#matrix")))
	marks := get(t, ctx, "marked cells", chromedp.Evaluate[string](`[...document.querySelectorAll("#matrix td.sig-better, #matrix td.sig-worse")].map(td => td.querySelector(".verdict").textContent.split(" (")[0].trim()).join(",")`))
	if !strings.Contains(marks, "▲ better") || !strings.Contains(marks, "▼ worse") {
		t.Fatalf("significant cells %q, want both a better and a worse", marks)
	}
	if rows := get(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll("#experiment-items tbody tr[data-item]").length`)); rows != 6 {
		t.Fatalf("%d item rows, want a page of 6", rows)
	}
	screenshot(t, ctx, "experiment screenshot", "experiment.png")
}
