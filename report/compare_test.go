package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/evalrun/evalrun"
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
	// judge pairs with both scores: q2, q4, q6.
	j := c.Scorers.Get("judge")
	if j.Paired != 3 {
		t.Errorf("judge pairs = %d, want 3", j.Paired)
	}
	wantNum(t, "judge mean A", j.MeanA, (0.5+1+sub(0.7, 0.4))/3)
	wantNum(t, "judge mean B", j.MeanB, (0.9+1+0.9)/3)
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
