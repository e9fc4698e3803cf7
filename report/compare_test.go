package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
	"github.com/google/go-cmp/cmp"
)

// compareRun builds a report of n items "i00".."iNN" with one scorer "s"
// (threshold 0.5) whose score for item i is score(i).
func compareRun(id string, n int, score func(i int) float64) *Report {
	run := &evalrun.Run{ID: id, Name: "cmp", Dataset: "d", DatasetVersion: 1, Status: evalrun.RunCompleted,
		Total: n, Succeeded: n, Scorers: []evalrun.ScorerInfo{{Name: "s", Threshold: 0.5}}}
	rs := make([]*evalrun.ItemResult, n)
	for i := range rs {
		v := score(i)
		id := fmt.Sprintf("i%02d", i)
		rs[i] = &evalrun.ItemResult{Index: i, ItemID: id, Item: &evalrun.Item{ID: id, Input: evalrun.String(id)},
			Output: evalrun.String("o"), Scores: []evalrun.ScorerResult{{Scorer: "s", Score: &v, Passed: v >= 0.5}}}
	}
	return Build(run, rs)
}

// base is a spread of scores in [0.4, 0.99].
func base(i int) float64 { return 0.4 + float64((i*37)%60)/100 }

func TestComparePlantedDifference(t *testing.T) {
	const n = 50
	a := compareRun("a", n, base)
	// b = a − 0.3 on the even half.
	b := compareRun("b", n, func(i int) float64 {
		if i%2 == 0 {
			return base(i) - 0.3
		}
		return base(i)
	})
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := c.Scorers.Get("s")
	if c.Paired != n || d.Paired != n {
		t.Fatalf("paired = %d/%d, want %d", c.Paired, d.Paired, n)
	}
	wantNum(t, "delta", d.Delta, -0.15) // half the items lose 0.3
	if *d.CIHigh >= 0 || *d.CILow > *d.Delta || *d.CIHigh < *d.Delta {
		t.Errorf("CI = [%v, %v], want it to exclude 0 and contain %v", *d.CILow, *d.CIHigh, *d.Delta)
	}
	// Sign test: 25 negative differences of 25: p = 2·0.5²⁵.
	wantNum(t, "p-value", d.PValue, 2*math.Pow(0.5, 25))
	if !d.Significant {
		t.Error("planted difference not significant")
	}
	// Regressed: even items that passed in A (≥ 0.5) and fall below.
	var want []string
	for i := 0; i < n; i += 2 {
		if base(i) >= 0.5 && base(i)-0.3 < 0.5 {
			want = append(want, fmt.Sprintf("i%02d", i))
		}
	}
	var got []string
	for _, r := range c.Regressed {
		got = append(got, r.ItemID)
		if r.Scorer != "s" || !r.PassedA || r.PassedB || r.ScoreA == nil || r.ScoreB == nil {
			t.Errorf("regressed entry = %+v", r)
		}
	}
	if len(want) == 0 || !cmp.Equal(want, got) {
		t.Errorf("regressed = %v, want %v", got, want)
	}
	if len(c.Improved) != 0 || d.Regressed != len(want) || d.Improved != 0 {
		t.Errorf("improved = %v, counts %d/%d", c.Improved, d.Regressed, d.Improved)
	}

	// Reproducible: same seed, same interval; another seed, another one.
	c2, _ := Compare(a, b, CompareOptions{})
	if *c2.Scorers[0].CILow != *d.CILow || *c2.Scorers[0].CIHigh != *d.CIHigh {
		t.Error("the bootstrap is not reproducible")
	}
	if c.Method.Resamples != 10_000 || c.Method.Seed != 1 || c.Method.Confidence != 0.95 {
		t.Errorf("method = %+v", c.Method)
	}
}

func TestCompareIdentical(t *testing.T) {
	a := compareRun("a", 50, base)
	b := compareRun("b", 50, base)
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := c.Scorers.Get("s")
	wantNum(t, "delta", d.Delta, 0)
	wantNum(t, "ci low", d.CILow, 0)
	wantNum(t, "ci high", d.CIHigh, 0)
	wantNum(t, "p-value", d.PValue, 1)
	if d.Significant || len(c.Regressed) != 0 || len(c.Improved) != 0 || len(c.OnlyA) != 0 || len(c.OnlyB) != 0 {
		t.Errorf("identical runs: %+v", c)
	}
	wantNum(t, "pass A", d.PassRateA, *d.PassRateB)
}

func TestCompareNoise(t *testing.T) {
	// Small noise (0.03·sin i) around 0: no significant change.
	a := compareRun("a", 50, base)
	b := compareRun("b", 50, func(i int) float64 { return base(i) + 0.03*math.Sin(float64(i)) })
	c, _ := Compare(a, b, CompareOptions{})
	d := c.Scorers.Get("s")
	if d.Significant || *d.PValue < 0.05 || *d.CILow > 0 || *d.CIHigh < 0 {
		t.Errorf("noise found significant: p %v, CI [%v, %v]", *d.PValue, *d.CILow, *d.CIHigh)
	}
	// The seed decides the resamples: another seed, another interval.
	c2, _ := Compare(a, b, CompareOptions{Seed: 7})
	if d2 := c2.Scorers[0]; *d2.CILow == *d.CILow && *d2.CIHigh == *d.CIHigh {
		t.Error("the seed has no effect")
	}
}

func TestComparePairingAndVerdicts(t *testing.T) {
	a := fixtureReport(t)
	rs := fixtureResults()
	// B: q1 gone, q5 now succeeds and passes exact, q3's target fails, a new
	// item q7, and the judge now passes q1..q6 at 0.9 — except q4.
	rs = rs[1:]
	for _, r := range rs {
		for k := range r.Scores {
			if r.Scores[k].Scorer == "judge" && r.ItemID != "q4" {
				r.Scores[k] = score("judge", 0.9, 0.7)
			}
		}
	}
	rs[3].Error, rs[3].ErrorKind, rs[3].Output = "", "", evalrun.String("ok")
	rs[3].Scores = []evalrun.ScorerResult{score("exact", 1, 0.5)}
	rs[1].Error, rs[1].ErrorKind, rs[1].Output, rs[1].Scores = "HTTP 500", evalrun.ErrorTransient, nil, nil
	v := 1.0
	rs = append(rs, &evalrun.ItemResult{Index: 6, ItemID: "q7", Item: item("q7", nil), Output: evalrun.String("x"),
		Scores: []evalrun.ScorerResult{{Scorer: "exact", Score: &v, Passed: true}}})
	b := Build(fixtureRun(), rs)

	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Paired != 5 || !cmp.Equal(c.OnlyA, []string{"q1"}) || !cmp.Equal(c.OnlyB, []string{"q7"}) {
		t.Errorf("paired %d, only A %v, only B %v", c.Paired, c.OnlyA, c.OnlyB)
	}
	type change struct{ item, scorer string }
	var reg, imp []change
	for _, x := range c.Regressed {
		reg = append(reg, change{x.ItemID, x.Scorer})
	}
	for _, x := range c.Improved {
		imp = append(imp, change{x.ItemID, x.Scorer})
	}
	// q3 passed exact and judge in A; its target failed in B.
	if diff := cmp.Diff([]change{{"q3", "exact"}, {"q3", "judge"}}, reg, cmp.AllowUnexported(change{})); diff != "" {
		t.Errorf("regressed (-want +got):\n%s", diff)
	}
	if x := c.Regressed[0]; x.ErrorB == nil || *x.ErrorB != "target: HTTP 500" || x.ScoreB != nil {
		t.Errorf("q3 regression = %+v", x)
	}
	// q2 and q6 judge rose above 0.7; q5 (failed in A) now passes exact.
	if diff := cmp.Diff([]change{{"q2", "judge"}, {"q5", "exact"}, {"q6", "judge"}}, imp, cmp.AllowUnexported(change{})); diff != "" {
		t.Errorf("improved (-want +got):\n%s", diff)
	}
	// judge pairs with a score in at least one run: q2, q3 (B's target
	// failed: 0), q4, q6; q5 has none in either (A's target failed, B has
	// no judge score).
	j := c.Scorers.Get("judge")
	if j.Paired != 4 || j.FailedA != 0 || j.FailedB != 1 {
		t.Errorf("judge pairs = %d, failed A/B %d/%d; want 4, 0/1", j.Paired, j.FailedA, j.FailedB)
	}
	wantNum(t, "judge mean A", j.MeanA, (0.5+0.75+1+sub(0.7, 0.4))/4)
	wantNum(t, "judge mean B", j.MeanB, (0.9+0+1+0.9)/4)
	wantNum(t, "judge pass A", j.PassRateA, 2.0/4) // q3, q4 at ≥ 0.7
	wantNum(t, "judge pass B", j.PassRateB, 3.0/4) // q2, q4, q6
	if c.CrashedA != 1 || c.CrashedB != 1 {
		t.Errorf("crashed A/B = %d/%d, want 1/1 (q5 in A, q3 in B)", c.CrashedA, c.CrashedB)
	}
	if br := c.Scorers.Get("broken"); br.Paired != 0 || br.Delta != nil || br.PValue != nil || br.CILow != nil {
		t.Errorf("broken (never scored) = %+v, want nulls", br)
	}

	if _, err := Compare(fixtureReport(t, WithoutItems()), b, CompareOptions{}); !errors.Is(err, ErrNoItems) {
		t.Errorf("without items: %v", err)
	}
}

func TestCompareRemovedScorerIsNoRegression(t *testing.T) {
	a := compareRun("a", 10, func(int) float64 { return 1 })
	b := compareRun("b", 10, func(int) float64 { return 1 })
	b.Scorers[0].Name = "t"
	for i := range b.Items {
		b.Items[i].Scores[0].Scorer = "t"
	}
	c, _ := Compare(a, b, CompareOptions{})
	if len(c.Regressed) != 0 || len(c.Improved) != 0 || len(c.Scorers) != 2 {
		t.Errorf("renamed scorer: %d regressed, %d improved, %d scorers", len(c.Regressed), len(c.Improved), len(c.Scorers))
	}
}

func TestSignTest(t *testing.T) {
	tests := []struct {
		diffs []float64
		want  float64
	}{
		{nil, 1},
		{[]float64{0, 0}, 1},
		{[]float64{1}, 1},                     // 2·0.5
		{[]float64{1, 1, 1}, 0.25},            // 2·(1/8)
		{[]float64{1, -1, 1, 0}, 1},           // 2·(1+3)/8 capped
		{[]float64{-1, -1, -1, -1, 1}, 0.375}, // 2·(1+5)/32
	}
	for _, tt := range tests {
		if got := signTest(tt.diffs); !near(got, tt.want) {
			t.Errorf("signTest(%v) = %v, want %v", tt.diffs, got, tt.want)
		}
	}
}

func TestCompareRenderers(t *testing.T) {
	a := compareRun("a", 50, base)
	b := compareRun("b", 50, func(i int) float64 {
		if i%2 == 0 {
			return base(i) - 0.3
		}
		return base(i)
	})
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.md", render(t, func(w *bytes.Buffer) error { return WriteComparisonMarkdown(w, c, MarkdownOptions{MaxFailures: 5}) }))
	data := render(t, func(w *bytes.Buffer) error { return WriteComparisonJSON(w, c) })
	golden(t, "compare.json", data)
	var back Comparison
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, &back); diff != "" {
		t.Errorf("comparison JSON round trip (-want +got):\n%s", diff)
	}
}

func TestResamplesFor(t *testing.T) {
	for _, tt := range []struct{ want, n, got int }{
		{10_000, 50, 10_000}, {10_000, 10_000, 10_000}, {10_000, 20_000, 5_000}, {10_000, 1_000_000, 1000},
	} {
		if r := resamplesFor(tt.want, tt.n); r != tt.got {
			t.Errorf("resamplesFor(%d, %d) = %d, want %d", tt.want, tt.n, r, tt.got)
		}
	}
}

// outcome is one item's result in a hand-made comparison: a score, a
// target crash or a scorer error.
type outcome struct {
	score     float64
	crash     bool
	scorerErr bool
}

func ok(v float64) outcome { return outcome{score: v} }

var (
	crashed   = outcome{crash: true}
	scoreless = outcome{scorerErr: true}
)

// outcomeRun builds a report of items "i0".."iN" of dataset d v1 with one
// scorer "s" (threshold 0.5).
func outcomeRun(id, dataset string, version int, prefix string, outs ...outcome) (*evalrun.Run, []*evalrun.ItemResult) {
	run := &evalrun.Run{ID: id, Name: "cmp", Dataset: dataset, DatasetVersion: version, Status: evalrun.RunCompleted,
		Total: len(outs), Scorers: []evalrun.ScorerInfo{{Name: "s", Threshold: 0.5}}}
	rs := make([]*evalrun.ItemResult, len(outs))
	for i, o := range outs {
		iid := fmt.Sprintf("%s%d", prefix, i)
		r := &evalrun.ItemResult{RunID: id, Index: i, ItemID: iid, Item: &evalrun.Item{ID: iid, Input: evalrun.String(iid)}}
		switch {
		case o.crash:
			r.Error, r.ErrorKind = "boom", evalrun.ErrorPermanent
		case o.scorerErr:
			r.Output = evalrun.String("o")
			r.Scores = []evalrun.ScorerResult{{Scorer: "s", Error: "bad json", ErrorKind: evalrun.ErrorPermanent}}
		default:
			v := o.score
			r.Output = evalrun.String("o")
			r.Scores = []evalrun.ScorerResult{{Scorer: "s", Score: &v, Passed: v >= 0.5}}
		}
		rs[i] = r
	}
	return run, rs
}

func outcomeReport(id string, outs ...outcome) *Report {
	run, rs := outcomeRun(id, "d", 1, "i", outs...)
	return Build(run, rs)
}

// compareCounts compares b against a and checks the comparison's (paired,
// crashed A, crashed B) and scorer s's (paired, failed A, failed B).
func compareCounts(t *testing.T, a, b *Report, pairs, scorer [3]int) (*Comparison, *ScorerDelta) {
	t.Helper()
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := [3]int{c.Paired, c.CrashedA, c.CrashedB}; got != pairs {
		t.Errorf("paired, crashed A, crashed B = %v, want %v", got, pairs)
	}
	d := c.Scorers.Get("s")
	if got := [3]int{d.Paired, d.FailedA, d.FailedB}; got != scorer {
		t.Errorf("scorer pairs, failed A, failed B = %v, want %v", got, scorer)
	}
	return c, d
}

// TestCompareCrashCountsAsFailure is the case: ten items that pass
// in A and whose target crashes in B are ten failed pairs, not zero pairs.
func TestCompareCrashCountsAsFailure(t *testing.T) {
	outsA, outsB := make([]outcome, 10), make([]outcome, 10)
	for i := range outsA {
		outsA[i], outsB[i] = ok(1), crashed
	}
	c, d := compareCounts(t, outcomeReport("a", outsA...), outcomeReport("b", outsB...), [3]int{10, 0, 10}, [3]int{10, 0, 10})
	wantNum(t, "mean A", d.MeanA, 1)
	wantNum(t, "mean B", d.MeanB, 0)
	wantNum(t, "delta", d.Delta, -1)
	wantNum(t, "ci low", d.CILow, -1) // every difference is −1
	wantNum(t, "ci high", d.CIHigh, -1)
	wantNum(t, "p-value", d.PValue, 2*math.Pow(0.5, 10)) // 10 of 10 negative
	wantNum(t, "pass A", d.PassRateA, 1)
	wantNum(t, "pass B", d.PassRateB, 0)
	if !d.Significant || d.Regressed != 10 || len(c.Regressed) != 10 {
		t.Errorf("significant %v, regressed %d/%d; want true, 10", d.Significant, d.Regressed, len(c.Regressed))
	}
	if x := c.Regressed[0]; x.ErrorB == nil || *x.ErrorB != "target: boom" || x.ScoreB != nil || x.ScoreA == nil {
		t.Errorf("first regression = %+v", x)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings = %q, want none", c.Warnings)
	}
}

// TestCompareMixedFailures: target and scorer failures on either side,
// hand-computed.
func TestCompareMixedFailures(t *testing.T) {
	a := outcomeReport("a", ok(1), ok(0.8), ok(0.6), ok(0.2), crashed)
	b := outcomeReport("b", crashed, ok(0.8), scoreless, ok(0.9), crashed)
	// i4 crashed in both runs: paired, but no scorer compares it.
	c, d := compareCounts(t, a, b, [3]int{5, 1, 2}, [3]int{4, 0, 2})
	// Differences: 0 − 1, 0.8 − 0.8, 0 − 0.6, 0.9 − 0.2.
	wantNum(t, "mean A", d.MeanA, (1+0.8+0.6+0.2)/4)
	wantNum(t, "mean B", d.MeanB, (0+0.8+0+0.9)/4)
	wantNum(t, "delta", d.Delta, (-1+0-0.6+0.7)/4)
	wantNum(t, "p-value", d.PValue, 1) // one up, two down: 2·(1+3)/8 capped
	wantNum(t, "pass A", d.PassRateA, 3.0/4)
	wantNum(t, "pass B", d.PassRateB, 2.0/4)
	type change struct{ id, err string }
	var reg []change
	for _, x := range c.Regressed {
		reg = append(reg, change{x.ItemID, strOr(x.ErrorB, "")})
	}
	if diff := cmp.Diff([]change{{"i0", "target: boom"}, {"i2", "bad json"}}, reg, cmp.AllowUnexported(change{})); diff != "" {
		t.Errorf("regressed (-want +got):\n%s", diff)
	}
	if len(c.Improved) != 1 || c.Improved[0].ItemID != "i3" {
		t.Errorf("improved = %+v, want i3", c.Improved)
	}
}

// TestCompareNoSharedItems: runs of different datasets pair nothing and say
// so instead of showing an empty table.
func TestCompareNoSharedItems(t *testing.T) {
	runA, rsA := outcomeRun("a", "faq", 1, "f", ok(1), ok(1))
	runB, rsB := outcomeRun("b", "chat", 2, "c", ok(1), ok(1), ok(0))
	c, err := Compare(Build(runA, rsA), Build(runB, rsB), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"runs share no items: A is dataset faq v1 (2 results), B is dataset chat v2 (3 results); nothing was compared"}
	if c.Paired != 0 || !cmp.Equal(c.Warnings, want) {
		t.Errorf("paired %d, warnings %q; want 0, %q", c.Paired, c.Warnings, want)
	}
	var md bytes.Buffer
	if err := WriteComparisonMarkdown(&md, c, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(md.Bytes(), []byte("**Warning:** runs share no items: A is dataset faq v1")) {
		t.Errorf("markdown lacks the warning:\n%s", md.String())
	}
	// Different datasets that share some ids: compared, with a warning.
	runB2, rsB2 := outcomeRun("b", "faq", 2, "f", ok(1))
	c, _ = Compare(Build(runA, rsA), Build(runB2, rsB2), CompareOptions{})
	if c.Paired != 1 || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "different dataset versions: A is dataset faq v1, B is dataset faq v2; only the items in both (1,") {
		t.Errorf("paired %d, warnings %q", c.Paired, c.Warnings)
	}
}

// TestCompareStoreMatchesCompare: the streaming comparison of stored runs
// equals the comparison of their full reports.
func TestCompareStoreMatchesCompare(t *testing.T) {
	ctx := context.Background()
	st := inmem.New()
	t.Cleanup(func() { st.Close() })
	runA, rsA := outcomeRun("a", "d", 1, "i", ok(1), ok(0.8), ok(0.6), ok(0.2), crashed)
	runB, rsB := outcomeRun("b", "d", 1, "i", crashed, ok(0.8), scoreless, ok(0.9), crashed, ok(1))
	items := make([]*evalrun.Item, len(rsB))
	for i, r := range rsB {
		items[i] = r.Item
	}
	if _, _, err := st.ImportDataset(ctx, "d", items); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		run *evalrun.Run
		rs  []*evalrun.ItemResult
	}{{runA, rsA}, {runB, rsB}} {
		if err := st.CreateRun(ctx, x.run); err != nil {
			t.Fatal(err)
		}
		if err := st.WriteResults(ctx, x.rs); err != nil {
			t.Fatal(err)
		}
	}
	got, err := CompareStore(ctx, st, "a", "b", CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Compare(Build(runA, rsA), Build(runB, rsB), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CompareStore differs from Compare (-reports +store):\n%s", diff)
	}
	if !cmp.Equal(got.OnlyB, []string{"i5"}) || got.CrashedB != 2 {
		t.Errorf("only B %v, crashed B %d", got.OnlyB, got.CrashedB)
	}
	if _, err := CompareStore(ctx, st, "a", "nope", CompareOptions{}); !errors.Is(err, evalrun.ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown run: %v", err)
	}
}
