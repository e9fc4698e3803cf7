package report

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
	"github.com/google/go-cmp/cmp"
)

// Verdicts of the repeats fixture, per item and repeat: P passed, F failed
// (scored below the threshold), E scorer error, T the target failed (no
// scores at all, both scorers), "-" no result (cancelled before it ran).
//
//	item  exact      judge      note
//	a     P P P      P P P      cache hits on repeats 1, 2
//	b     P F P      F F F
//	c     T P P      T E P
//	d     F F F      P P P      cache hit on repeat 2
//	e     P - -      F - -      incomplete
//	f     P F -      P P -      incomplete
//
// With k = 3 the complete items are a, b, c, d (4):
//
//	exact: pass@3 = a,b,c = 3/4; pass^3 = a = 1/4; flaky b 2/3, c 2/3, f 1/2 (3)
//	judge: pass@3 = a,c,d = 3/4; pass^3 = a,d = 2/4; flaky c 1/3 (1)
var repeatVerdicts = []struct {
	id           string
	exact, judge string
	cacheHits    []int
}{
	{"a", "PPP", "PPP", []int{1, 2}},
	{"b", "PFP", "FFF", nil},
	{"c", "TPP", "TEP", nil},
	{"d", "FFF", "PPP", []int{2}},
	{"e", "P--", "F--", nil},
	{"f", "PF-", "PP-", nil},
}

func repeatsRun() *evalrun.Run {
	return &evalrun.Run{
		ID: "20260102T030405-repeats", Name: "flaky-bot", Dataset: "support", DatasetVersion: 1,
		Target: evalrun.TargetInfo{Kind: "openai", Name: "gpt-x"},
		Scorers: []evalrun.ScorerInfo{
			{Name: "exact", Kind: "exact_match", Threshold: 0.5},
			{Name: "judge", Kind: "llm_judge", Threshold: 0.7},
		},
		Status: evalrun.RunCanceled, Total: 18, Succeeded: 14, Failed: 1, Skipped: 3, Concurrency: 4,
		CreatedAt: t0, StartedAt: t0, CompletedAt: t0.Add(3000000000),
	}
}

func verdict(scorer string, c byte, threshold float64) evalrun.ScorerResult {
	switch c {
	case 'P':
		return score(scorer, 1, threshold)
	case 'F':
		return score(scorer, 0.25, threshold)
	}
	return evalrun.ScorerResult{Scorer: scorer, Error: "judge returned no verdict", ErrorKind: evalrun.ErrorInvalidOutput}
}

// repeatsResults are the results of the table above, in (index, repeat)
// order.
func repeatsResults() []*evalrun.ItemResult {
	var rs []*evalrun.ItemResult
	for idx, v := range repeatVerdicts {
		for rep := range 3 {
			if v.exact[rep] == '-' {
				continue
			}
			r := &evalrun.ItemResult{
				RunID: "20260102T030405-repeats", Index: idx, Repeat: rep, ItemID: v.id,
				Item: item(v.id, nil), Attempts: 1, CacheHit: slices.Contains(v.cacheHits, rep),
				StartedAt: t0, CompletedAt: t0,
			}
			if v.exact[rep] == 'T' {
				r.Error, r.ErrorKind = "HTTP 503", evalrun.ErrorTransient
			} else {
				r.Output = evalrun.String("answer")
				r.Scores = []evalrun.ScorerResult{verdict("exact", v.exact[rep], 0.5), verdict("judge", v.judge[rep], 0.7)}
			}
			rs = append(rs, r)
		}
	}
	return rs
}

func TestRepeatsHandComputed(t *testing.T) {
	rep := Build(repeatsRun(), repeatsResults())
	if rep.Repeats() != 3 {
		t.Fatalf("Repeats() = %d, want 3", rep.Repeats())
	}
	want := map[string]RepeatStats{
		"exact": {K: 3, Items: 4, PassAtK: evalrun.Float64(0.75), PassAllK: evalrun.Float64(0.25), FlakyCount: 3},
		"judge": {K: 3, Items: 4, PassAtK: evalrun.Float64(0.75), PassAllK: evalrun.Float64(0.5), FlakyCount: 1},
	}
	for name, w := range want {
		got := rep.Scorer(name).RepeatStats
		if got == nil {
			t.Fatalf("%s: no repeat stats", name)
		}
		if diff := cmp.Diff(w, *got); diff != "" {
			t.Errorf("%s repeat stats (-want +got):\n%s", name, diff)
		}
	}
	wantFlaky := []FlakyItem{
		{Index: 1, ItemID: "b", Scorer: "exact", Passed: 2, Runs: 3},
		{Index: 2, ItemID: "c", Scorer: "exact", Passed: 2, Runs: 3},
		{Index: 2, ItemID: "c", Scorer: "judge", Passed: 1, Runs: 3},
		{Index: 5, ItemID: "f", Scorer: "exact", Passed: 1, Runs: 2},
	}
	if diff := cmp.Diff(wantFlaky, rep.Flaky); diff != "" {
		t.Errorf("flaky (-want +got):\n%s", diff)
	}
	if rep.Run.CacheHits != 3 {
		t.Errorf("cache hits = %d, want 3", rep.Run.CacheHits)
	}
	if rep.Run.Concurrency == nil || *rep.Run.Concurrency != 4 {
		t.Errorf("concurrency = %v, want 4", rep.Run.Concurrency)
	}
	// The mean and the pass rate stay over results: exact scored 14 of the
	// 15 results (c's first is a target failure), 9 of them passed.
	ex := rep.Scorer("exact")
	if ex.Count != 14 || *ex.PassRate != 9.0/14 {
		t.Errorf("exact count/pass rate = %d/%v, want 14 and 9/14", ex.Count, *ex.PassRate)
	}
	// Cohorts carry no repeat reducers.
	for _, c := range rep.Cohorts {
		for _, s := range c.Scorers {
			if s.RepeatStats != nil {
				t.Errorf("cohort %s scorer %s has repeat stats", c.Key, s.Name)
			}
		}
	}

	// Results in any order give the same report.
	shuffled := repeatsResults()
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if diff := cmp.Diff(rep, Build(repeatsRun(), shuffled), cmp.Comparer(sameJSON)); diff != "" {
		t.Errorf("report of shuffled results differs (-ordered +shuffled):\n%s", diff)
	}
}

func TestRepeatsJSON(t *testing.T) {
	data := renderJSON(t, Build(repeatsRun(), repeatsResults()))
	golden(t, "report-repeats.json", data)
	if err := validate(t, compileSchema(t), data); err != nil {
		t.Fatalf("repeats report does not match the schema: %v", err)
	}
	var m struct {
		Run struct {
			CacheHits   int  `json:"cache_hits"`
			Concurrency *int `json:"concurrency"`
		} `json:"run"`
		Scorers map[string]map[string]any `json:"scorers"`
		Flaky   []map[string]any          `json:"flaky"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Run.CacheHits != 3 || m.Run.Concurrency == nil || *m.Run.Concurrency != 4 {
		t.Errorf("run cache_hits/concurrency = %d/%v", m.Run.CacheHits, m.Run.Concurrency)
	}
	j := m.Scorers["judge"]
	if j["k"] != 3.0 || j["items"] != 4.0 || j["pass_at_k"] != 0.75 || j["pass_all_k"] != 0.5 || j["flaky_count"] != 1.0 {
		t.Errorf("scorers.judge = %v", j)
	}
	if len(m.Flaky) != 4 || m.Flaky[3]["item_id"] != "f" || m.Flaky[3]["passed"] != 1.0 || m.Flaky[3]["runs"] != 2.0 {
		t.Errorf("flaky = %v", m.Flaky)
	}
	got, err := ReadJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Build(repeatsRun(), repeatsResults()), got, cmp.Comparer(sameJSON), cmpIgnoreIndex,
		cmpIgnoreFlakyIndex); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// cmpIgnoreFlakyIndex ignores FlakyItem.Index, which is not written.
var cmpIgnoreFlakyIndex = cmp.FilterPath(func(p cmp.Path) bool {
	sf, ok := p.Last().(cmp.StructField)
	return ok && sf.Name() == "Index" && p.Index(-2).Type().Name() == "FlakyItem"
}, cmp.Ignore())

func TestRepeatsRenderers(t *testing.T) {
	rep := Build(repeatsRun(), repeatsResults())
	md := render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, rep, MarkdownOptions{}) })
	golden(t, "report-repeats.md", md)
	for _, want := range []string{"### Repeats (k = 3)", "| exact | 4 | 75.0% | 25.0% | 3 |", "| judge | 4 | 75.0% | 50.0% | 1 |",
		"#### Flaky items (4)", "| c | judge | 1 | 3 |", "**Cache hits:** 3 of 15 results", "**Concurrency:** settled at 4"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	capped := string(render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, rep, MarkdownOptions{MaxFlaky: 1}) }))
	if !strings.Contains(capped, "| b | exact | 2 | 3 |") || strings.Contains(capped, "| c | exact") || !strings.Contains(capped, "… and 3 more") {
		t.Errorf("markdown with MaxFlaky 1:\n%s", capped)
	}

	txt := render(t, func(b *bytes.Buffer) error { return WriteTerminal(b, rep) })
	golden(t, "report-repeats.txt", txt)
	for _, want := range []string{"cache hits 3", "concurrency 4", "PASS@3", "PASS^3", "flaky 4", "f  exact: passed 1 of 2", "c#1  scorer judge invalid_output"} {
		if !bytes.Contains(txt, []byte(want)) {
			t.Errorf("terminal output lacks %q", want)
		}
	}

	// Without repeats, cache hits or concurrency none of it shows.
	plain := fixtureReport(t)
	for _, out := range [][]byte{
		render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, plain, MarkdownOptions{}) }),
		render(t, func(b *bytes.Buffer) error { return WriteTerminal(b, plain) }),
	} {
		for _, absent := range []string{"Repeats", "REPEATS", "lak", "ache hits", "oncurrency"} {
			if bytes.Contains(out, []byte(absent)) {
				t.Errorf("report without repeats shows %q", absent)
			}
		}
	}
}

func TestNoRepeatsNoReducers(t *testing.T) {
	rep := fixtureReport(t)
	if rep.Repeats() != 0 || rep.Flaky != nil || rep.Run.CacheHits != 0 || rep.Run.Concurrency != nil {
		t.Fatalf("plain report: repeats %d, flaky %v, cache hits %d, concurrency %v", rep.Repeats(), rep.Flaky, rep.Run.CacheHits, rep.Run.Concurrency)
	}
	for _, s := range rep.Scorers {
		if s.RepeatStats != nil {
			t.Errorf("%s has repeat stats without repeats", s.Name)
		}
	}
	data := renderJSON(t, rep)
	for _, absent := range []string{`"flaky"`, `"pass_at_k"`, `"k"`} {
		if bytes.Contains(data, []byte(absent)) {
			t.Errorf("JSON without repeats has %s", absent)
		}
	}
	if !bytes.Contains(data, []byte(`"cache_hits": 0`)) || !bytes.Contains(data, []byte(`"concurrency": null`)) {
		t.Error("JSON lacks cache_hits 0 or concurrency null")
	}

	// Repeats where nothing is flaky: "flaky": [] and pass@k = pass^k.
	rs := repeatsResults()[:3] // item a only
	rep = Build(repeatsRun(), rs)
	if rep.Flaky == nil || len(rep.Flaky) != 0 || !bytes.Contains(renderJSON(t, rep), []byte(`"flaky": []`)) {
		t.Errorf("flaky = %#v, want [] written", rep.Flaky)
	}
	if s := rep.Scorer("exact").RepeatStats; s == nil || *s.PassAtK != 1 || *s.PassAllK != 1 || s.Items != 1 {
		t.Errorf("exact repeat stats = %+v", s)
	}

	// No complete item: the reducers are null, not 0.
	rep = Build(repeatsRun(), repeatsResults()[len(repeatsResults())-3:]) // e/0, f/0, f/1: k = 2, f complete
	if s := rep.Scorer("judge").RepeatStats; s == nil || s.K != 2 || s.Items != 1 || *s.PassAllK != 1 {
		t.Errorf("judge over e, f = %+v", s)
	}
	rep = Build(repeatsRun(), []*evalrun.ItemResult{repeatsResults()[1]}) // a/1 alone: k = 2, incomplete
	if s := rep.Scorer("exact").RepeatStats; s == nil || s.Items != 0 || s.PassAtK != nil || s.PassAllK != nil {
		t.Errorf("exact over one incomplete item = %+v, want items 0 and null rates", s)
	}
}

// TestRepeatsFromStore writes the repeats through a real store: the same
// report, cache hits and concurrency included.
func TestRepeatsFromStore(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	t.Cleanup(func() { st.Close() })
	var items []*evalrun.Item
	for _, v := range repeatVerdicts {
		items = append(items, item(v.id, nil))
	}
	if _, _, err := st.ImportDataset(ctx, "support", items); err != nil {
		t.Fatal(err)
	}
	run := repeatsRun()
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	stored := repeatsResults()
	slices.Reverse(stored)
	for _, r := range stored {
		r.Item = nil
	}
	if err := st.WriteResults(ctx, stored); err != nil {
		t.Fatal(err)
	}
	got, err := FromStore(ctx, st, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Build(run, repeatsResults()), got, cmp.Comparer(sameJSON)); diff != "" {
		t.Errorf("report from the store differs (-memory +store):\n%s", diff)
	}
}

// TestCompareWithRepeats pairs by (item id, repeat): a verdict that changes
// in one repeat is one change, with its repeat.
func TestCompareWithRepeats(t *testing.T) {
	a := Build(repeatsRun(), repeatsResults())
	rs := repeatsResults()
	for _, r := range rs {
		if r.ItemID == "b" && r.Repeat == 2 { // b/2 exact: pass → fail
			r.Scores[0] = score("exact", 0, 0.5)
		}
	}
	rs = slices.DeleteFunc(rs, func(r *evalrun.ItemResult) bool { return r.ItemID == "f" && r.Repeat == 1 })
	b := Build(repeatsRun(), rs)
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Paired != 14 || len(c.OnlyA) != 1 || c.OnlyA[0] != "f#1" || len(c.OnlyB) != 0 {
		t.Fatalf("paired %d, only_a %v, only_b %v; want 14, [f#1], []", c.Paired, c.OnlyA, c.OnlyB)
	}
	if len(c.Regressed) != 1 || c.Regressed[0].ItemID != "b" || c.Regressed[0].Repeat != 2 || c.Regressed[0].Scorer != "exact" {
		t.Fatalf("regressed = %+v, want b#2 exact", c.Regressed)
	}
	if len(c.Improved) != 0 {
		t.Fatalf("improved = %+v, want none", c.Improved)
	}
	if c.SchemaVersion != CompareSchemaVersion || CompareSchemaVersion != 3 {
		t.Errorf("comparison schema_version = %d, want 3", c.SchemaVersion)
	}
}

// TestRepeatConditions gates on the repeat reducers; without repeats they
// are null, so a condition on them is breached.
func TestRepeatConditions(t *testing.T) {
	rep := Build(repeatsRun(), repeatsResults())
	plain := fixtureReport(t)
	for _, tt := range []struct {
		cond          string
		value         *float64
		breached      bool
		breachedPlain bool
	}{
		{"pass_all_k(judge) < 0.6", evalrun.Float64(0.5), true, true},
		{"pass_all_k(exact) >= 25%", evalrun.Float64(0.25), true, true},
		{"pass_at_k(exact) < 0.7", evalrun.Float64(0.75), false, true},
		{"flaky(exact) > 2", evalrun.Float64(3), true, true},
		{"flaky(judge) > 2", evalrun.Float64(1), false, true},
	} {
		c, err := ParseCondition(tt.cond)
		if err != nil {
			t.Fatalf("ParseCondition(%q): %v", tt.cond, err)
		}
		v, breached := c.Eval(rep)
		if v == nil || *v != *tt.value || breached != tt.breached {
			t.Errorf("%s on the repeats report = %v, %v; want %v, %v", tt.cond, v, breached, *tt.value, tt.breached)
		}
		if v, breached := c.Eval(plain); v != nil || breached != tt.breachedPlain {
			t.Errorf("%s without repeats = %v, %v; want null, breached", tt.cond, v, breached)
		}
	}
}
