package web

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

const runRepeats = "20260304T140000-rrrrrrrr"

// seedRepeats stores a run of items q1..q3 of dataset "support" repeated
// three times. Verdicts by repeat (P passed, F failed):
//
//	      exact  judge
//	q1    PPP    PPF   judge flaky
//	q2    PFP    PPP   exact flaky
//	q3    FFF    PFF   judge flaky
//
// exact: pass@3 2/3, pass^3 1/3, 1 flaky; judge: pass@3 3/3, pass^3 1/3,
// 2 flaky.
func seedRepeats(t testing.TB, s evalrun.Store) {
	t.Helper()
	ctx := context.Background()
	run := fixtureRun(runRepeats, "repeated", t0.Add(4*time.Hour))
	run.Total, run.Succeeded = 9, 9
	if err := s.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	verdicts := [][2]string{{"PPP", "PPF"}, {"PFP", "PPP"}, {"FFF", "PFF"}}
	score := func(v byte) float64 { return map[byte]float64{'P': 1, 'F': 0}[v] }
	var rs []*evalrun.ItemResult
	for i, v := range verdicts {
		for rep := range 3 {
			r := fixtureResult(runRepeats, i, score(v[0][rep]), score(v[1][rep]), time.Duration(rep+1)*100*time.Millisecond)
			r.Repeat = rep
			rs = append(rs, r)
		}
	}
	if err := s.WriteResults(ctx, rs); err != nil {
		t.Fatal(err)
	}
}

// TestRunPageRepeats: the page of a run with repeats shows pass@k, pass^k
// and the flaky items, each linked to its repeats; a run without repeats
// shows none of it.
func TestRunPageRepeats(t *testing.T) {
	b := setup(t, Options{})
	seedRepeats(t, b.store)
	body := b.mustGet(t, "/runs/"+runRepeats, http.StatusOK).body
	contains(t, "run page with repeats", body,
		`id="repeats"`, "Repeats (k = 3)", "pass@3", "pass^3",
		"<tr><td>exact</td><td class=\"n\">3</td><td class=\"n strong\">66.7%</td><td class=\"n strong\">33.3%</td><td class=\"n warn\">1</td></tr>",
		"<tr><td>judge</td><td class=\"n\">3</td><td class=\"n strong\">100.0%</td><td class=\"n strong\">33.3%</td><td class=\"n warn\">2</td></tr>",
		"Flaky items (3)", `id="flaky"`,
		`<a href="/runs/`+runRepeats+`/items?id=q1">q1</a></td><td>judge</td><td class="n">2 of 3</td>`,
		`<a href="/runs/`+runRepeats+`/items?id=q2">q2</a></td><td>exact</td><td class="n">2 of 3</td>`,
		`<a href="/runs/`+runRepeats+`/items?id=q3">q3</a></td><td>judge</td><td class="n">1 of 3</td>`)

	// The flaky item's link lists its three repeats, and only them.
	p := decode[ItemsJSON](t, b.mustGet(t, "/api/runs/"+runRepeats+"/items?id=q2", http.StatusOK))
	if got := itemIDs(p); got != "q2,q2,q2" || p.Items[0].Repeat != 0 || p.Items[2].Repeat != 2 {
		t.Errorf("items?id=q2 = %q, want the three repeats of q2", got)
	}
	contains(t, "items of a flaky item", b.mustGet(t, "/runs/"+runRepeats+"/items?id=q2", http.StatusOK).body,
		`href="/runs/`+runRepeats+`/items/1?repeat=2"`, "item <strong>q2</strong> (3 results)",
		`<input type="hidden" name="id" value="q2">`) // the filter form keeps it

	lacks(t, "run page without repeats", b.mustGet(t, "/runs/"+runB, http.StatusOK).body, `id="repeats"`, "Flaky items")
}
