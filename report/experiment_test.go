package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/google/go-cmp/cmp"
)

func nearPtr(t *testing.T, what string, got *float64, want, tol float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = null, want %.6g", what, want)
		return
	}
	if math.Abs(*got-want) > tol {
		t.Errorf("%s = %.10g, want %.10g (±%g)", what, *got, want, tol)
	}
}

func nearCI(t *testing.T, what string, got *[2]float64, lo, hi, tol float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = null, want [%.6g, %.6g]", what, lo, hi)
		return
	}
	if math.Abs(got[0]-lo) > tol || math.Abs(got[1]-hi) > tol {
		t.Errorf("%s = [%.10g, %.10g], want [%.10g, %.10g] (±%g)", what, got[0], got[1], lo, hi, tol)
	}
}

// TestWilson checks the interval against hand computations, z = 1.959964,
// z² = 3.841459:
//
//	0/10:  p = 0, 1 + z²/n = 1.384146, centre = (0 + 0.192073)/1.384146 =
//	       0.138766, half = 1.959964/1.384146 · √(0 + 3.841459/400) =
//	       1.416009 · 0.097998 = 0.138766 → [0, 0.277533]; in closed form
//	       hi = z²/(n + z²) = 3.841459/13.841459.
//	10/10: symmetric: [n/(n + z²), 1] = [10/13.841459, 1] = [0.722467, 1].
//	4/10:  centre = (0.4 + 0.192073)/1.384146 = 0.427753, half = 1.416009 ·
//	       √(0.024 + 0.009604) = 1.416009 · 0.183314 = 0.259573 →
//	       [0.168180, 0.687326].
//	2/3:   1 + z²/3 = 2.280486, centre = (0.666667 + 0.640243)/2.280486 =
//	       0.573084, half = 0.859449 · √(0.074074 + 0.106715) = 0.859449 ·
//	       0.425193 = 0.365424 → [0.207660, 0.938508].
//
// A normal approximation (p ± z·√(p(1−p)/n)) would give [0, 0] at 0/10 and
// [1, 1] at 10/10.
func TestWilson(t *testing.T) {
	z := wilsonZ95
	z2 := z * z
	cases := []struct {
		passed, n int
		lo, hi    float64
		tol       float64
	}{
		{0, 10, 0, z2 / (10 + z2), 1e-15},
		{10, 10, 10 / (10 + z2), 1, 1e-15},
		{0, 10, 0, 0.277533, 5e-7},
		{10, 10, 0.722467, 1, 5e-7},
		{4, 10, 0.168180, 0.687326, 5e-7},
		{2, 3, 0.207660, 0.938508, 5e-7},
		{1, 1, 1 / (1 + z2), 1, 1e-15},
	}
	for _, c := range cases {
		lo, hi := wilson(c.passed, c.n, z)
		if math.Abs(lo-c.lo) > c.tol || math.Abs(hi-c.hi) > c.tol {
			t.Errorf("wilson(%d/%d) = [%.10g, %.10g], want [%.10g, %.10g]", c.passed, c.n, lo, hi, c.lo, c.hi)
		}
		if lo < 0 || hi > 1 || lo > float64(c.passed)/float64(c.n) || hi < float64(c.passed)/float64(c.n) {
			t.Errorf("wilson(%d/%d) = [%g, %g] does not hold the rate inside [0, 1]", c.passed, c.n, lo, hi)
		}
	}
	// The ends are exact, not left to rounding (10/10 computes as
	// 0.9999999999999999).
	if lo, hi := wilson(10, 10, z); hi != 1 || lo >= 1 {
		t.Errorf("wilson(10/10) = [%v, %v], want hi exactly 1", lo, hi)
	}
	if lo, _ := wilson(0, 7, z); lo != 0 {
		t.Errorf("wilson(0/7) lo = %v, want exactly 0", lo)
	}
	if got := zOf(0.05); got != wilsonZ95 {
		t.Errorf("zOf(0.05) = %v", got)
	}
	if got := zOf(0.10); math.Abs(got-1.6448536269514722) > 1e-12 {
		t.Errorf("zOf(0.10) = %v, want 1.6448536", got)
	}
}

// TestExperimentMatrix checks the fixture's matrix (see expFixture) by
// hand.
//
// Pass rates and Wilson intervals (TestWilson's arithmetic):
//
//	mini   exact 4/10 [0.168180, 0.687326]  judge 9/10 [0.595850, 0.982124]  macro (0.4+0.9)/2 = 0.65
//	big    exact 10/10 [0.722467, 1]        judge 7/10 [0.396778, 0.892209]  macro (1+0.7)/2 = 0.85
//	terse  exact 0/10 [0, 0.277533]         judge 10/10 [0.722467, 1]        macro 0.5
//	broken exact null, judge null (count 0)                                  macro null
//
// Against mini, pairs by (id, repeat) q0…q9 (big's q10 has no partner),
// x = passed(variant) − passed(mini):
//
//	big exact:    x = +1 on q4…q9 (6), 0 else. delta = 6/10 = 0.6; sign test
//	              m = 6 all positive: p = 2·(1/2)⁶ = 0.03125 < 0.05 and the
//	              bootstrap interval cannot reach 0 unless all ten draws are
//	              one of the four zeros → better.
//	big judge:    x = −1 on q0, q1, q2, +1 on q9. delta = −2/10 = −0.2; m = 4,
//	              k = 1: p = 2·(C(4,0) + C(4,1))/2⁴ = 10/16 = 0.625 → same.
//	terse exact:  x = −1 on q0…q3. delta = −0.4; p = 2·(1/2)⁴ = 0.125 → same.
//	terse judge:  x = +1 on q9. delta = 0.1; p = min(1, 2·1/2) = 1 → same.
//	broken exact: its target failed everywhere: not passed. x = −1 on q0…q3,
//	              10 pairs (mini scored each). delta = −0.4, p = 0.125 → same.
//	broken judge: x = −1 on q0…q8. delta = −0.9; p = 2·(1/2)⁹ = 0.00390625,
//	              the interval is below 0 → worse.
func TestExperimentMatrix(t *testing.T) {
	e := expFixtureBuilt(t)
	if e.SchemaVersion != 3 || e.Experiment.Baseline != "mini" || e.Experiment.Name != "support-bot" ||
		e.Experiment.Dataset != (DatasetRef{Name: "support", Version: 3}) || e.Experiment.ID != "exp-20260102T030405-00000001" {
		t.Errorf("experiment = %+v", e.Experiment)
	}
	var names []string
	for _, v := range e.Variants {
		names = append(names, v.Name)
	}
	if diff := cmp.Diff([]string{"mini", "big", "terse", "broken"}, names); diff != "" {
		t.Fatalf("variants (-want +got):\n%s", diff)
	}

	const tol = 5e-7
	type rate struct {
		variant, scorer string
		rate            float64
		lo, hi          float64
	}
	for _, c := range []rate{
		{"mini", "exact", 0.4, 0.168180, 0.687326},
		{"mini", "judge", 0.9, 0.595850, 0.982124},
		{"big", "exact", 1, 0.722467, 1},
		{"big", "judge", 0.7, 0.396778, 0.892209},
		{"terse", "exact", 0, 0, 0.277533},
		{"terse", "judge", 1, 0.722467, 1},
	} {
		s := e.Variant(c.variant).Scorers.Get(c.scorer)
		nearPtr(t, c.variant+" "+c.scorer+" pass_rate", s.PassRate, c.rate, 1e-12)
		nearCI(t, c.variant+" "+c.scorer+" pass_rate_ci", s.PassRateCI, c.lo, c.hi, tol)
		if s.Count != 10 {
			t.Errorf("%s %s count = %d, want 10", c.variant, c.scorer, s.Count)
		}
	}
	nearPtr(t, "mini macro", e.Variant("mini").MacroPassRate, 0.65, 1e-12)
	nearPtr(t, "big macro", e.Variant("big").MacroPassRate, 0.85, 1e-12)
	nearPtr(t, "terse macro", e.Variant("terse").MacroPassRate, 0.5, 1e-12)
	// mini judge mean: (9·0.9 + 0.3)/10 = 0.84.
	nearPtr(t, "mini judge mean", e.Variant("mini").Scorers.Get("judge").Mean, 0.84, 1e-12)

	if vb := e.Variant("mini").VsBaseline; vb == nil || len(vb) != 0 {
		t.Errorf("baseline vs_baseline = %#v, want empty", vb)
	}
	type delta struct {
		variant, scorer string
		delta, p        float64
		paired, up, dn  int
		verdict         string
		diffs           []float64
	}
	ones := func(n int, x float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = x
		}
		return out
	}
	cases := []delta{
		{"big", "exact", 0.6, 0.03125, 10, 6, 0, "better", append(ones(4, 0), ones(6, 1)...)},
		{"big", "judge", -0.2, 0.625, 10, 1, 3, "same", append(append(ones(3, -1), ones(6, 0)...), 1)},
		{"terse", "exact", -0.4, 0.125, 10, 0, 4, "same", append(ones(4, -1), ones(6, 0)...)},
		{"terse", "judge", 0.1, 1, 10, 1, 0, "same", append(ones(9, 0), 1)},
		{"broken", "exact", -0.4, 0.125, 10, 0, 4, "same", append(ones(4, -1), ones(6, 0)...)},
		{"broken", "judge", -0.9, 0.00390625, 10, 0, 9, "worse", append(ones(9, -1), 0)},
	}
	for _, c := range cases {
		d := e.Variant(c.variant).VsBaseline.Get(c.scorer)
		if d == nil {
			t.Errorf("%s vs_baseline has no %s", c.variant, c.scorer)
			continue
		}
		what := c.variant + " vs mini " + c.scorer
		nearPtr(t, what+" delta", d.Delta, c.delta, 1e-12)
		nearPtr(t, what+" p", d.PValue, c.p, 1e-12)
		if d.Verdict != c.verdict || d.Paired != c.paired || d.Improved != c.up || d.Regressed != c.dn {
			t.Errorf("%s: verdict %s paired %d improved %d regressed %d, want %s %d %d %d",
				what, d.Verdict, d.Paired, d.Improved, d.Regressed, c.verdict, c.paired, c.up, c.dn)
		}
		// The interval is compare's bootstrap of the same differences
		// with the default resamples and seed.
		lo, hi := bootstrapCI(c.diffs, 10_000, 1, 0.05)
		nearCI(t, what+" ci", d.CI, lo, hi, 0)
		// A verdict needs both p < 0.05 and an interval excluding 0:
		// terse's exact interval excludes 0 but p is 0.125.
		if sig := c.verdict != "same"; sig != (*d.PValue < 0.05 && (d.CI[0] > 0 || d.CI[1] < 0)) {
			t.Errorf("%s: ci %v, p %v against verdict %s", what, *d.CI, *d.PValue, c.verdict)
		}
	}

	// The all-error variant is in the matrix with its counts and nulls.
	br := e.Variant("broken")
	if br.Total != 10 || br.Failed != 10 || br.Succeeded != 0 || br.Failures != 10 || br.MacroPassRate != nil {
		t.Errorf("broken: total %d failed %d succeeded %d failures %d macro %v", br.Total, br.Failed, br.Succeeded, br.Failures, br.MacroPassRate)
	}
	for _, s := range br.Scorers {
		if s.Count != 0 || s.PassRate != nil || s.Mean != nil || s.PassRateCI != nil {
			t.Errorf("broken %s = %+v, want count 0 and nulls", s.Name, s)
		}
	}
	if br.Usage.InputTokens.Total != nil || br.Usage.LatencyMS.P50 == nil {
		t.Errorf("broken usage = %+v", br.Usage)
	}
	if b := e.Variant("big"); b.Total != 11 || b.Failed != 1 || b.Failures != 1 || b.Target.Name != "gpt-big" {
		t.Errorf("big = %+v", b)
	}
}

// TestExperimentUsesCompare: on a 0/1 scorer a pass is a score of 1, so
// the delta against the baseline is exactly compare's delta of scores.
func TestExperimentUsesCompare(t *testing.T) {
	exp, results := expFixture()
	reps := expReports(exp, results)
	e, err := BuildExperiment(exp, reps, CompareOptions{Resamples: 2000, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare(reps[0], reps[1], CompareOptions{Resamples: 2000, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	want, got := c.Scorers.Get("exact"), e.Variant("big").VsBaseline.Get("exact")
	if *want.Delta != *got.Delta || *want.CILow != got.CI[0] || *want.CIHigh != got.CI[1] || *want.PValue != *got.PValue ||
		want.Significant != (got.Verdict != VerdictSame) || want.Paired != got.Paired {
		t.Errorf("experiment %+v differs from compare %+v", got, want)
	}
	if e.Method.Resamples != 2000 || e.Method.Seed != 7 || e.Method.Alpha != 0.05 || e.Method.Z != wilsonZ95 {
		t.Errorf("method = %+v", e.Method)
	}
}

func TestExperimentItems(t *testing.T) {
	e := expFixtureBuilt(t)
	if len(e.Items) != 11 {
		t.Fatalf("%d items, want 11 (q0…q9 and big's q10)", len(e.Items))
	}
	q0 := e.Items[0]
	if q0.ID != "q0" || q0.Index != 0 || string(q0.Input) != `"question q0"` || string(q0.Expected) != `"answer q0"` ||
		!slices.Equal(q0.Tags, []string{"t0"}) || !q0.Disagree {
		t.Errorf("q0 = %+v", q0)
	}
	var vs []string
	for _, r := range q0.Variants {
		vs = append(vs, r.Variant)
	}
	if !slices.Equal(vs, []string{"mini", "big", "terse", "broken"}) {
		t.Errorf("q0 variants = %v", vs)
	}
	mini := q0.Variants.Get("mini")
	if s, ok := mini.Scores.Get("exact"); !ok || *s != 1 || !mini.Passed.Get("exact") || string(mini.Output) != `"mini says q0"` || mini.Error != nil {
		t.Errorf("q0 mini = %+v", mini)
	}
	broken := q0.Variants.Get("broken")
	if broken.Output != nil || broken.Error == nil || *broken.Error != "connection refused" || len(broken.Scores) != 0 ||
		broken.ErrorKind == nil || *broken.ErrorKind != evalrun.ErrorTransient {
		t.Errorf("q0 broken = %+v", broken)
	}
	q10 := e.Items[10]
	if q10.ID != "q10" || len(q10.Variants) != 1 || q10.Variants[0].Variant != "big" || q10.Disagree {
		t.Errorf("q10 (only in big) = %+v", q10)
	}
}

// TestExperimentRepeats pairs by (item id, repeat), and compares items:
// an item's difference is the mean of its repeats'. Two items, two
// repeats, exact only.
//
//	          a#0  a#1  b#0  b#1
//	base      1    0    0    0
//	cand      1    1    1    —  (b#1 missing: cancelled)
//
// Pairs: a#0 (x 0), a#1 (+1), b#0 (+1); b#1 only in base. Items: a
// (0+1)/2 = 0.5, b 1. delta = (0.5+1)/2 = 0.75, p = 2·(1/2)² = 0.5 (two
// items, both positive) → same. Wilson: base 1/4, cand 3/3 = [3/(3+z²), 1].
func TestExperimentRepeats(t *testing.T) {
	mk := func(variant string, vi int, verdicts map[[2]int]bool) (*evalrun.Run, []*evalrun.ItemResult) {
		run := expRun(variant, vi)
		run.Scorers = expScorers[:1]
		var rs []*evalrun.ItemResult
		for idx, id := range []string{"a", "b"} {
			for rep := range 2 {
				pass, ok := verdicts[[2]int{idx, rep}]
				if !ok {
					continue
				}
				v := 0.0
				if pass {
					v = 1
				}
				rs = append(rs, &evalrun.ItemResult{RunID: run.ID, Index: idx, Repeat: rep, ItemID: id, Item: item(id, nil),
					Output: evalrun.String(variant), Scores: []evalrun.ScorerResult{score("exact", v, 0.5)}})
			}
		}
		return run, rs
	}
	baseRun, baseRes := mk("base", 0, map[[2]int]bool{{0, 0}: true, {0, 1}: false, {1, 0}: false, {1, 1}: false})
	candRun, candRes := mk("cand", 1, map[[2]int]bool{{0, 0}: true, {0, 1}: true, {1, 0}: true})
	exp, _ := evalrun.ExperimentOf("exp-r", []*evalrun.Run{candRun, baseRun})
	e, err := BuildExperiment(exp, []*Report{Build(baseRun, baseRes), Build(candRun, candRes)}, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := e.Variant("cand").VsBaseline.Get("exact")
	nearPtr(t, "delta", d.Delta, 0.75, 1e-12)
	nearPtr(t, "p", d.PValue, 0.5, 1e-12)
	if d.Paired != 3 || d.Verdict != VerdictSame {
		t.Errorf("delta = %+v", d)
	}
	z2 := wilsonZ95 * wilsonZ95
	nearCI(t, "cand ci", e.Variant("cand").Scorers.Get("exact").PassRateCI, 3/(3+z2), 1, 1e-15)
	if k := e.Variant("base").Scorers.Get("exact").RepeatStats; k == nil || k.K != 2 {
		t.Errorf("base repeat stats = %+v, want k 2", k)
	}
	var keys []string
	for _, it := range e.Items {
		keys = append(keys, keyText(it.ID, it.Repeat)+"/"+strings.Join(variantNames(it.Variants), "+"))
	}
	if diff := cmp.Diff([]string{"a/base+cand", "a#1/base+cand", "b/base+cand", "b#1/base"}, keys); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if e.Items[0].Disagree || !e.Items[1].Disagree || e.Items[3].Disagree {
		t.Errorf("disagree = %v %v %v %v", e.Items[0].Disagree, e.Items[1].Disagree, e.Items[2].Disagree, e.Items[3].Disagree)
	}
	var buf bytes.Buffer
	if err := WriteExperimentJSON(&buf, e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"repeat": 1,`) || strings.Contains(buf.String(), `"repeat": 0`) {
		t.Errorf("repeat is not written only when > 0")
	}
}

func variantNames(rs VariantResults) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Variant)
	}
	return out
}

func TestExperimentErrors(t *testing.T) {
	exp, results := expFixture()
	reps := expReports(exp, results)
	if _, err := BuildExperiment(exp, reps[:2], CompareOptions{}); !errors.Is(err, evalrun.ErrInvalid) {
		t.Errorf("too few reports: %v", err)
	}
	swapped := slices.Clone(reps)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	if _, err := BuildExperiment(exp, swapped, CompareOptions{}); !errors.Is(err, evalrun.ErrInvalid) || !strings.Contains(err.Error(), "variant mini") {
		t.Errorf("reports in the wrong order: %v", err)
	}
	noItems := slices.Clone(reps)
	noItems[2] = Build(exp.Runs[2], results[2], WithoutItems())
	if _, err := BuildExperiment(exp, noItems, CompareOptions{}); !errors.Is(err, ErrNoItems) || !strings.Contains(err.Error(), "terse") {
		t.Errorf("report without items: %v", err)
	}
	if _, err := BuildExperiment(&evalrun.Experiment{ID: "exp-x"}, nil, CompareOptions{}); !errors.Is(err, evalrun.ErrInvalid) {
		t.Errorf("no runs: %v", err)
	}
	dup := *exp
	dup.Runs = slices.Clone(exp.Runs)
	r := *dup.Runs[1]
	r.Variant = "mini"
	dup.Runs[1] = &r
	if _, err := BuildExperiment(&dup, reps, CompareOptions{}); !errors.Is(err, evalrun.ErrInvalid) || !strings.Contains(err.Error(), `"mini"`) {
		t.Errorf("duplicate variant names: %v", err)
	}
}

func renderExperimentJSON(t *testing.T, e *Experiment) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteExperimentJSON(&buf, e); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExperimentDeterministic(t *testing.T) {
	first := renderExperimentJSON(t, expFixtureBuilt(t))
	for range 3 {
		if got := renderExperimentJSON(t, expFixtureBuilt(t)); !bytes.Equal(first, got) {
			t.Fatal("the same inputs gave different JSON")
		}
	}
	// From storage: the same bytes as from the reports.
	exp, results := expFixture()
	got, err := BuildExperimentStore(context.Background(), expStore(exp, results), exp, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(first), string(renderExperimentJSON(t, got))); diff != "" {
		t.Errorf("from storage differs from the reports (-reports +store):\n%s", diff)
	}
}

// objectKeys returns the keys of the JSON object raw, in order.
func objectKeys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var keys []string
	if err := unmarshalObject(raw, func(k string, _ json.RawMessage) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// member returns the member key of the JSON object raw (raw JSON, so
// that nested objects keep their key order).
func member(t *testing.T, raw json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	v, ok := m[key]
	if !ok {
		t.Fatalf("no %q in %.200s", key, raw)
	}
	return v
}

// element returns the i-th element of the JSON array raw.
func element(t *testing.T, raw json.RawMessage, i int) json.RawMessage {
	t.Helper()
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	if i >= len(a) {
		t.Fatalf("array of %d, want element %d", len(a), i)
	}
	return a[i]
}

// TestExperimentJSONShape checks the PRODUCT.md keys in their order, with
// the added ones where they are.
func TestExperimentJSONShape(t *testing.T) {
	data := json.RawMessage(renderExperimentJSON(t, expFixtureBuilt(t)))
	check := func(what string, raw json.RawMessage, want ...string) {
		t.Helper()
		if diff := cmp.Diff(want, objectKeys(t, raw)); diff != "" {
			t.Errorf("%s keys (-want +got):\n%s", what, diff)
		}
	}
	check("top", data, "schema_version", "experiment", "method", "variants", "items")
	exp := member(t, data, "experiment")
	check("experiment", exp, "id", "name", "baseline", "dataset")
	check("experiment.dataset", member(t, exp, "dataset"), "name", "version")
	check("method", member(t, data, "method"), "pass_rate_interval", "z", "delta", "interval", "confidence", "resamples", "seed", "test", "alpha")

	variants := member(t, data, "variants")
	big := element(t, variants, 1)
	check("variant", big, "name", "run_id", "status", "target", "total", "succeeded", "failed",
		"skipped", "failures", "duration_ms", "cache_hits", "scorers", "macro_pass_rate", "usage", "vs_baseline")
	check("variant.target", member(t, big, "target"), "kind", "name")
	check("variant.scorers", member(t, big, "scorers"), "exact", "judge")
	check("variant scorer", member(t, member(t, big, "scorers"), "exact"),
		"count", "errors", "mean", "p50", "p95", "pass_rate", "threshold", "histogram", "pass_rate_ci")
	check("variant.usage", member(t, big, "usage"), "input_tokens", "output_tokens", "cost_usd", "latency_ms", "scorers")
	check("variant.usage.latency_ms", member(t, member(t, big, "usage"), "latency_ms"), "mean", "p50", "p95", "max", "reported")
	check("variant.vs_baseline", member(t, big, "vs_baseline"), "exact", "judge")
	exact := member(t, member(t, big, "vs_baseline"), "exact")
	check("vs_baseline entry", exact, "delta", "ci", "p_value", "verdict", "paired", "improved", "regressed")
	var ci []float64
	if err := json.Unmarshal(member(t, exact, "ci"), &ci); err != nil || len(ci) != 2 || ci[0] > ci[1] {
		t.Errorf("ci = %v (%v), want [lo, hi]", ci, err)
	}
	if v := string(member(t, exact, "verdict")); v != `"better"` {
		t.Errorf("verdict = %s", v)
	}
	if got := string(member(t, element(t, variants, 0), "vs_baseline")); got != "{}" {
		t.Errorf("baseline vs_baseline = %s, want {}", got)
	}
	brokenJudge := member(t, member(t, element(t, variants, 3), "scorers"), "judge")
	for _, k := range []string{"mean", "pass_rate", "pass_rate_ci"} {
		if v := string(member(t, brokenJudge, k)); v != "null" {
			t.Errorf("broken judge %s = %s, want null", k, v)
		}
	}
	if v := string(member(t, member(t, member(t, element(t, variants, 3), "vs_baseline"), "judge"), "verdict")); v != `"worse"` {
		t.Errorf("broken judge verdict = %s, want worse", v)
	}

	items := member(t, data, "items")
	q0 := element(t, items, 0)
	check("item", q0, "index", "id", "tags", "input", "expected_output", "disagree", "variants")
	check("item.variants", member(t, q0, "variants"), "mini", "big", "terse", "broken")
	mini := member(t, member(t, q0, "variants"), "mini")
	check("item variant", mini, "output", "error", "error_kind", "latency_ms", "scores", "passed")
	if got := string(member(t, mini, "scores")); !sameJSON(json.RawMessage(got), json.RawMessage(`{"exact": 1, "judge": 0.9}`)) {
		t.Errorf("q0 mini scores = %s", got)
	}
	if got := string(member(t, member(t, member(t, q0, "variants"), "broken"), "scores")); got != "{}" {
		t.Errorf("q0 broken scores = %s, want {}", got)
	}
}

func TestExperimentJSONRoundTrip(t *testing.T) {
	e := expFixtureBuilt(t)
	data := renderExperimentJSON(t, e)
	got, err := ReadExperimentJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if again := renderExperimentJSON(t, got); !bytes.Equal(data, again) {
		t.Errorf("read and written again differs:\n%s", cmp.Diff(string(data), string(again)))
	}
	if got.Report("mini") != nil || got.Evaluate([]Condition{mustCondition(t, "failed > 0")}) != nil {
		t.Error("an experiment read from JSON has run reports")
	}
	for _, v := range []string{`{"schema_version": 2}`, `{}`, `[`} {
		if _, err := ReadExperimentJSON(strings.NewReader(v)); !errors.Is(err, evalrun.ErrInvalid) {
			t.Errorf("ReadExperimentJSON(%s): err = %v, want ErrInvalid", v, err)
		}
	}
}

func mustCondition(t *testing.T, s string) Condition {
	t.Helper()
	c, err := ParseCondition(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExperimentEvaluate(t *testing.T) {
	e := expFixtureBuilt(t)
	conds := []Condition{mustCondition(t, "pass_rate(judge) < 0.8"), mustCondition(t, "failed > 0")}
	var got []string
	for _, b := range e.Evaluate(conds) {
		got = append(got, b.String())
	}
	want := []string{
		"variant big: pass_rate(judge) < 0.8 (actual 0.7)",
		"variant big: failed > 0 (actual 1)",
		"variant broken: pass_rate(judge) < 0.8 (actual null: nothing to measure)",
		"variant broken: failed > 0 (actual 10)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("breaches (-want +got):\n%s", diff)
	}
	if e.Report("big") == nil || e.Report("big").Run.ID != "20260102T030405-big" || e.Report("nope") != nil {
		t.Error("Report(variant) does not return the variant's report")
	}
}

// TestExperimentEmptyVariant: a variant with no result yet (pending, or
// interrupted before its first item) has no pair with the baseline: null
// numbers and "same", and the report still matches the schema.
func TestExperimentEmptyVariant(t *testing.T) {
	exp, results := expFixture()
	exp.Runs[1].Status, exp.Runs[1].Succeeded, exp.Runs[1].Failed = evalrun.RunPending, 0, 0
	results[1] = nil
	e, err := BuildExperiment(exp, expReports(exp, results), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	big := e.Variant("big")
	for _, d := range big.VsBaseline {
		if d.Delta != nil || d.CI != nil || d.PValue != nil || d.Verdict != VerdictSame || d.Paired != 0 {
			t.Errorf("empty variant vs baseline %s = %+v", d.Name, d)
		}
	}
	if big.Status != evalrun.RunPending || big.MacroPassRate != nil || big.Scorers.Get("exact").PassRateCI != nil {
		t.Errorf("empty variant = %+v", big)
	}
	if e.Items[0].Variants.Get("big") != nil || len(e.Items) != 10 {
		t.Errorf("the empty variant has item results")
	}
	if err := validate(t, compileExperimentSchema(t), renderExperimentJSON(t, e)); err != nil {
		t.Errorf("schema: %v", err)
	}
}
