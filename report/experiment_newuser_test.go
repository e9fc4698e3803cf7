package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// newuserRepeatsExperiment is two variants over two items run three times each:
// six result rows per variant, but two items.
func newuserRepeatsExperiment(t *testing.T) *Experiment {
	t.Helper()
	var runs []*evalrun.Run
	var reps []*Report
	for vi, variant := range []string{"base", "cand"} {
		run := expRun(variant, vi)
		run.Scorers = expScorers[:1]
		var rs []*evalrun.ItemResult
		for idx, id := range []string{"a", "b"} {
			for rep := range 3 {
				rs = append(rs, &evalrun.ItemResult{RunID: run.ID, Index: idx, Repeat: rep, ItemID: id, Item: item(id, nil),
					Output: evalrun.String(variant), Scores: []evalrun.ScorerResult{score("exact", 1, 0.5)}})
			}
		}
		runs = append(runs, run)
		reps = append(reps, Build(run, rs))
	}
	exp, err := evalrun.ExperimentOf("exp-r", runs)
	if err != nil {
		t.Fatal(err)
	}
	e, err := BuildExperiment(exp, reps, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestExperimentHeaderCountsItemsNotRepeats: with --repeat 3, the header
// of the matrix and of the Markdown says 2 items run 3 times, not "items
// 6" (the rows), which contradicted the "2 items" evalrun run printed when
// the experiment started.
func TestExperimentHeaderCountsItemsNotRepeats(t *testing.T) {
	e := newuserRepeatsExperiment(t)
	var table, md bytes.Buffer
	if err := WriteExperimentTable(&table, e); err != nil {
		t.Fatal(err)
	}
	if err := WriteExperimentMarkdown(&md, e); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(table.String(), "\n")
	if !strings.HasSuffix(first, "variants 2  items 2 × 3 repeats") {
		t.Errorf("table header = %q, want it to end with %q", first, "variants 2  items 2 × 3 repeats")
	}
	if want := "| `exp-r` | support v3 | base | 2 | 2 × 3 repeats |"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}
}

// TestExperimentMarkdownMatrixShowsFailures: a variant whose target failed
// on some items has a pass rate over the items it answered only; the
// Markdown matrix, the first table of a PR comment, says how many failed
// next to it (as the terminal matrix and the viewer do), so that a
// "completed" variant at 100% does not hide its failures.
func TestExperimentMarkdownMatrixShowsFailures(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteExperimentMarkdown(&buf, expFixtureBuilt(t)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"| variant | target | run | status | exact | judge | macro | failures |",
		"| **mini** (baseline) | openai gpt-mini | `20260102T030405-mini` | completed | 40.0% [16.8–68.7] | 90.0% [59.6–98.2] | 65.0% | 0 |",
		"| big | openai gpt-big | `20260102T030405-big` | completed | 100.0% [72.2–100.0] ▲ | 70.0% [39.7–89.2] | 85.0% | 1 |",
		"| broken | openai gpt-broken | `20260102T030405-broken` | completed | — | — ▼ | — | 10 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

// TestExperimentCacheHits: a variant served from the response cache
// (evalrun run --cache a second time) reports no tokens, no cost and a
// latency of a cache lookup. The experiment report says how many of each
// variant's results came from the cache, as a run report does
// (run.cache_hits), in the JSON, the terminal matrix and the Markdown, so
// that "cost —, p50 0ms" is not read as a free, instant model.
func TestExperimentCacheHits(t *testing.T) {
	exp, results := expFixture()
	for _, r := range results[0] { // mini: every result from the cache
		r.CacheHit = true
	}
	results[2][0].CacheHit = true // terse: one
	e, err := BuildExperiment(exp, expReports(exp, results), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"mini": 10, "big": 0, "terse": 1, "broken": 0} {
		if got := e.Variant(name).CacheHits; got != want {
			t.Errorf("variant %s: cache hits %d, want %d", name, got, want)
		}
	}
	var js bytes.Buffer
	if err := WriteExperimentJSON(&js, e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"cache_hits": 10,`) {
		t.Errorf("JSON lacks the cache hits:\n%s", js.String()[:2000])
	}
	if err := validate(t, compileExperimentSchema(t), js.Bytes()); err != nil {
		t.Errorf("the report does not validate: %v", err)
	}
	// Read back, it keeps them.
	back, err := ReadExperimentJSON(bytes.NewReader(js.Bytes()))
	if err != nil || back.Variant("mini").CacheHits != 10 {
		t.Errorf("read back: %v, %+v", err, back)
	}

	var table, md bytes.Buffer
	if err := WriteExperimentTable(&table, e); err != nil {
		t.Fatal(err)
	}
	if err := WriteExperimentMarkdown(&md, e); err != nil {
		t.Fatal(err)
	}
	const want = "cache hits: mini 10 of 10 results, terse 1 of 10"
	if !strings.Contains(table.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, table.String())
	}
	if !strings.Contains(md.String(), "**Cache hits:** mini 10 of 10 results, terse 1 of 10") {
		t.Errorf("markdown lacks the cache hits:\n%s", md.String())
	}

	// Without cache hits, no line.
	table.Reset()
	if err := WriteExperimentTable(&table, expFixtureBuilt(t)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(table.String(), "cache hits") {
		t.Errorf("a table without cache hits mentions them:\n%s", table.String())
	}
}
