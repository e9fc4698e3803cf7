package report

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/google/go-cmp/cmp"
)

const eps = 1e-12

func near(a, b float64) bool { return math.Abs(a-b) <= eps }

func wantNum(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = null, want %v", what, want)
	} else if !near(*got, want) {
		t.Errorf("%s = %v, want %v", what, *got, want)
	}
}

func wantNull(t *testing.T, what string, got *float64) {
	t.Helper()
	if got != nil {
		t.Errorf("%s = %v, want null", what, *got)
	}
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{[]float64{0, .25, .5, .75, 1}, 0.95, 0.95},
		{[]float64{0, .25, .5, .75, 1}, 0.5, 0.5},
		{[]float64{0, .25, .5, .75, 1}, 0, 0},
		{[]float64{0, .25, .5, .75, 1}, 1, 1},
		{[]float64{0, 1}, 0.5, 0.5},
		{[]float64{0, 1}, 0.95, 0.95},
		{[]float64{0.2, 0.4, 0.9}, 0.5, 0.4},
		{[]float64{0.2, 0.4, 0.9}, 0.95, 0.4 + 0.9*0.5}, // rank 1.9
		{[]float64{0.3}, 0.95, 0.3},
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
	}
	for _, tt := range tests {
		if got := percentile(tt.xs, tt.p); !near(got, tt.want) {
			t.Errorf("percentile(%v, %v) = %v, want %v", tt.xs, tt.p, got, tt.want)
		}
	}
	if got := percentile(nil, 0.5); !math.IsNaN(got) {
		t.Errorf("percentile(nil) = %v, want NaN", got)
	}
}

func TestBucket(t *testing.T) {
	tests := []struct {
		s    float64
		k    int
		want int
	}{
		{0, 10, 0},
		{0.05, 10, 0},
		{0.1, 10, 1},
		{sub(0.7, 0.4), 10, 3},  // 0.29999999999999993 rounds to 0.3
		{sub(0.1, -0.2), 10, 3}, // 0.30000000000000004
		{0.29, 10, 2},
		{0.0999999999, 10, 1}, // rounds to 0.1 at 9 decimals
		{0.099999999, 10, 0},  // already 9 decimals: stays below 0.1
		{0.95, 10, 9},
		{0.9999999, 10, 9},
		{1.0, 10, 9},
		{1.0 / 3, 3, 1}, // the second of three buckets
		{2.0 / 3, 3, 2},
		{0.333333332, 3, 0},
		{1.0, 3, 2},
	}
	for _, tt := range tests {
		if got := bucket(tt.s, tt.k); got != tt.want {
			t.Errorf("bucket(%v, %d) = %d, want %d", tt.s, tt.k, got, tt.want)
		}
	}
}

func TestBuilderAggregates(t *testing.T) {
	rep := fixtureReport(t)

	if rep.SchemaVersion != 3 {
		t.Errorf("schema_version = %d, want 3", rep.SchemaVersion)
	}
	run := rep.Run
	if run.Total != 6 || run.Succeeded != 5 || run.Failed != 1 || run.Skipped != 0 || !run.CompletedWithErrors || run.PersistErrors != 1 {
		t.Errorf("run counts = %+v", run)
	}
	if run.DurationMS == nil || *run.DurationMS != 12500 {
		t.Errorf("duration_ms = %v, want 12500", run.DurationMS)
	}
	if got := rep.ScorerNames(); !slices.Equal(got, []string{"exact", "judge", "broken"}) {
		t.Fatalf("scorers = %v, want suite order", got)
	}

	// exact: 1, 0, 1, 0, 1 (q5's target failed: not counted).
	ex := rep.Scorer("exact")
	if ex.Count != 5 || ex.Errors != 0 || ex.Threshold != 0.5 {
		t.Errorf("exact count/errors/threshold = %d/%d/%v", ex.Count, ex.Errors, ex.Threshold)
	}
	wantNum(t, "exact mean", ex.Mean, 0.6)
	wantNum(t, "exact p50", ex.P50, 1)
	wantNum(t, "exact p95", ex.P95, 1)
	wantNum(t, "exact pass_rate", ex.PassRate, 0.6)
	if want := [10]int{2, 0, 0, 0, 0, 0, 0, 0, 0, 3}; ex.Histogram != want {
		t.Errorf("exact histogram = %v, want %v (1.0 in the last bucket, empty buckets kept)", ex.Histogram, want)
	}

	// judge: .25, .5, .75, 1, 0.7-0.4 → sorted .25 .3 .5 .75 1.
	j := rep.Scorer("judge")
	if j.Count != 5 || j.Errors != 0 {
		t.Errorf("judge count/errors = %d/%d", j.Count, j.Errors)
	}
	if sub(0.7, 0.4) >= 0.3 {
		t.Fatal("the fixture must hold 0.29999999999999993")
	}
	wantNum(t, "judge mean", j.Mean, 2.8/5)
	wantNum(t, "judge p50", j.P50, 0.5)
	wantNum(t, "judge p95", j.P95, 0.95) // rank 3.8: .75 + .8·.25
	wantNum(t, "judge pass_rate", j.PassRate, 0.4)
	if want := [10]int{0, 0, 1, 1, 0, 1, 0, 1, 0, 1}; j.Histogram != want {
		t.Errorf("judge histogram = %v, want %v (0.7-0.4 in bucket 3)", j.Histogram, want)
	}

	// broken failed on all five scored items: a row with nulls.
	b := rep.Scorer("broken")
	if b.Count != 0 || b.Errors != 5 || b.Histogram != [10]int{} {
		t.Errorf("broken = %+v, want count 0, errors 5, empty histogram", b)
	}
	wantNull(t, "broken mean", b.Mean)
	wantNull(t, "broken p50", b.P50)
	wantNull(t, "broken p95", b.P95)
	wantNull(t, "broken pass_rate", b.PassRate)

	// Macro pass rate: mean of the non-null pass rates (.6 and .4).
	wantNum(t, "macro_pass_rate", rep.MacroPassRate, 0.5)
}

func TestBuilderCohorts(t *testing.T) {
	rep := fixtureReport(t)
	var keys []string
	for _, c := range rep.Cohorts {
		keys = append(keys, c.Key)
	}
	// Tags in byte order, the literal tag "untagged" escaped, the untagged
	// bucket last.
	if want := []string{"billing", "refund", "tag:untagged", "untagged"}; !slices.Equal(keys, want) {
		t.Fatalf("cohort keys = %v, want %v", keys, want)
	}
	tests := []struct {
		key         string
		tag         *string
		count       int
		exactCount  int
		exactMean   float64
		exactPass   float64
		judgePass   float64
		brokenError int
	}{
		// q1 and q2 (q2 has billing twice and a blank tag: counted once).
		{"billing", ptr("billing"), 2, 2, 0.5, 0.5, 0, 2},
		// q2 (list) and q6 (string tag).
		{"refund", ptr("refund"), 2, 2, 0.5, 0.5, 0, 2},
		// q4, tagged literally "untagged": never merged with the bucket.
		{"tag:untagged", ptr("untagged"), 1, 1, 0, 0, 1, 1},
		// q3 (no metadata) and q5 (empty tag list, target failed).
		{"untagged", nil, 2, 1, 1, 1, 1, 1},
	}
	for _, tt := range tests {
		c := rep.Cohorts.Get(tt.key)
		if c == nil {
			t.Errorf("cohort %q missing", tt.key)
			continue
		}
		if !cmp.Equal(c.Tag, tt.tag) {
			t.Errorf("cohort %q tag = %v, want %v", tt.key, c.Tag, tt.tag)
		}
		if c.Count != tt.count {
			t.Errorf("cohort %q count = %d, want %d", tt.key, c.Count, tt.count)
		}
		ex := c.Scorers.Get("exact")
		if ex.Count != tt.exactCount {
			t.Errorf("cohort %q exact count = %d, want %d", tt.key, ex.Count, tt.exactCount)
		}
		wantNum(t, tt.key+" exact mean", ex.Mean, tt.exactMean)
		wantNum(t, tt.key+" exact pass_rate", ex.PassRate, tt.exactPass)
		wantNum(t, tt.key+" judge pass_rate", c.Scorers.Get("judge").PassRate, tt.judgePass)
		if got := c.Scorers.Get("broken").Errors; got != tt.brokenError {
			t.Errorf("cohort %q broken errors = %d, want %d", tt.key, got, tt.brokenError)
		}
		wantNull(t, tt.key+" broken mean", c.Scorers.Get("broken").Mean)
	}
}

func ptr[T any](v T) *T { return &v }

func TestCohortKey(t *testing.T) {
	tests := map[string]string{
		"billing":      "billing",
		"untagged":     "tag:untagged",
		"tag:untagged": "tag:tag:untagged",
		"tag:x":        "tag:tag:x",
		"Untagged":     "Untagged",
		"tags":         "tags",
	}
	seen := map[string]string{UntaggedCohort: "(bucket)"}
	for tag, want := range tests {
		got := CohortKey(tag)
		if got != want {
			t.Errorf("CohortKey(%q) = %q, want %q", tag, got, want)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("CohortKey(%q) = %q collides with %s", tag, got, other)
		}
		seen[got] = tag
	}
}

func TestBuilderUsage(t *testing.T) {
	u := fixtureReport(t).Usage
	// Input tokens: q1 10, q2 a reported 0, q5 (failed, its attempts) 7.
	if u.InputTokens.Total == nil || *u.InputTokens.Total != 17 || u.InputTokens.Reported != 3 {
		t.Errorf("input_tokens = %v/%d, want 17 reported by 3", u.InputTokens.Total, u.InputTokens.Reported)
	}
	if u.OutputTokens.Total == nil || *u.OutputTokens.Total != 5 || u.OutputTokens.Reported != 1 {
		t.Errorf("output_tokens = %v/%d, want 5 reported by 1", u.OutputTokens.Total, u.OutputTokens.Reported)
	}
	wantNum(t, "cost total", u.CostUSD.Total, 0.001)
	if u.CostUSD.Reported != 1 {
		t.Errorf("cost reported = %d, want 1", u.CostUSD.Reported)
	}
	// The judge's own usage is apart.
	if s := u.Scorers; s.InputTokens.Total == nil || *s.InputTokens.Total != 50 || s.InputTokens.Reported != 1 ||
		*s.OutputTokens.Total != 3 || s.CostUSD.Reported != 1 {
		t.Errorf("scorer usage = %+v", s)
	}
	// Latency: 100..500 ms; q6 has none (not reported).
	l := u.LatencyMS
	if l.Reported != 5 {
		t.Errorf("latency reported = %d, want 5", l.Reported)
	}
	wantNum(t, "latency mean", l.Mean, 300)
	wantNum(t, "latency p50", l.P50, 300)
	wantNum(t, "latency p95", l.P95, 480)
	wantNum(t, "latency max", l.Max, 500)

	// Nothing reported at all: totals null, reported 0.
	empty := Build(&evalrun.Run{}, []*evalrun.ItemResult{{ItemID: "a", Output: evalrun.String("x")}}).Usage
	if empty.InputTokens.Total != nil || empty.InputTokens.Reported != 0 || empty.CostUSD.Total != nil ||
		empty.LatencyMS.Mean != nil || empty.LatencyMS.Max != nil || empty.LatencyMS.Reported != 0 {
		t.Errorf("usage of an unreported run = %+v, want nulls", empty)
	}
}

func TestBuilderFailures(t *testing.T) {
	f := fixtureReport(t).Failures
	type row struct{ item, stage, scorer, kind, msg string }
	var got []row
	for _, x := range f {
		got = append(got, row{strOr(x.ItemID, "-"), x.Stage, strOr(x.Scorer, "-"), kindText(x.Kind), x.Message})
	}
	want := []row{
		{"q1", "scorer", "broken", "permanent", "undefined: foo"},
		{"q2", "scorer", "broken", "permanent", "undefined: foo"},
		{"q3", "scorer", "broken", "permanent", "undefined: foo"},
		{"q4", "scorer", "broken", "permanent", "undefined: foo"},
		{"q5", "target", "-", "timeout", "deadline exceeded after 3 attempts"},
		{"q6", "scorer", "broken", "permanent", "undefined: foo"},
		{"-", "persist", "-", "—", "1 result could not be stored"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(row{})); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
}

func TestBuilderItems(t *testing.T) {
	rep := fixtureReport(t)
	if len(rep.Items) != 6 {
		t.Fatalf("items = %d, want 6", len(rep.Items))
	}
	for i, it := range rep.Items {
		if it.Index != i || it.ID != []string{"q1", "q2", "q3", "q4", "q5", "q6"}[i] {
			t.Errorf("item %d = %d %s, want input order", i, it.Index, it.ID)
		}
	}
	q2 := rep.Items[1]
	if !slices.Equal(q2.Tags, []string{"billing", "refund"}) {
		t.Errorf("q2 tags = %q, want deduplicated, blank dropped", q2.Tags)
	}
	if got := q2.Scores.Get("judge"); got == nil || *got.Score != 0.5 || got.Passed || *got.Reason != "r:judge" || got.Error != nil {
		t.Errorf("q2 judge = %+v", got)
	}
	if got := q2.Scores.Get("broken"); got.Score != nil || got.Passed || got.Error == nil || *got.Error != "undefined: foo" {
		t.Errorf("q2 broken = %+v", got)
	}
	q5 := rep.Items[4]
	if !q5.Failed() || *q5.ErrorKind != evalrun.ErrorTimeout || q5.RetryCount != 2 || len(q5.Scores) != 0 || q5.Output != nil {
		t.Errorf("q5 = %+v", q5)
	}
	if q5.Tags == nil || len(q5.Tags) != 0 {
		t.Errorf("q5 tags = %#v, want empty, not nil", q5.Tags)
	}
	q6 := rep.Items[5]
	if q6.LatencyMS != nil {
		t.Errorf("q6 latency = %v, want null (not measured)", *q6.LatencyMS)
	}
	want := &AdversarialInfo{Category: "prompt_injection", Label: ptr("ignore previous"), Severity: "high",
		Frameworks: []string{"MITRE ATLAS", "OWASP-LLM01"}}
	if diff := cmp.Diff(want, q6.Adversarial); diff != "" {
		t.Errorf("q6 adversarial (-want +got):\n%s", diff)
	}
	if rep.Items[0].Adversarial != nil {
		t.Errorf("q1 adversarial = %+v, want none", rep.Items[0].Adversarial)
	}
}

func TestBuilderAdversarial(t *testing.T) {
	a := fixtureReport(t).Adversarial
	if a == nil {
		t.Fatal("no adversarial block")
	}
	if a.Count != 1 || a.Severities != (SeverityCounts{High: 1}) {
		t.Errorf("adversarial count/severities = %d/%+v", a.Count, a.Severities)
	}
	if diff := cmp.Diff(map[string]int{"MITRE ATLAS": 1, "OWASP-LLM01": 1}, a.Frameworks); diff != "" {
		t.Errorf("frameworks (-want +got):\n%s", diff)
	}
	if len(a.Categories) != 1 || a.Categories[0].Category != "prompt_injection" || a.Categories[0].Count != 1 {
		t.Fatalf("categories = %+v", a.Categories)
	}
	wantNum(t, "prompt_injection judge mean", a.Categories[0].Scorers.Get("judge").Mean, sub(0.7, 0.4))

	// No item carries it: no block.
	rs := fixtureResults()[:5]
	if got := Build(fixtureRun(), rs).Adversarial; got != nil {
		t.Errorf("adversarial = %+v, want nil", got)
	}
}

func TestAdversarialNormalization(t *testing.T) {
	tests := []struct {
		meta map[string]any
		want *AdversarialInfo
	}{
		{nil, nil},
		{map[string]any{"adversarial": "yes"}, nil},
		{map[string]any{"adversarial": false}, nil},
		{map[string]any{"adversarial": true}, &AdversarialInfo{Category: "uncategorized", Severity: "unknown", Frameworks: []string{}}},
		{map[string]any{"adversarial": map[string]any{"category": " Jail<b>Break ", "severity": "Crit", "framework": "X"}},
			&AdversarialInfo{Category: "jail_b_break", Severity: "critical", Frameworks: []string{"X"}}},
		{map[string]any{"adversarial": map[string]any{"severity": 9, "label": "\x1b[31m"}},
			&AdversarialInfo{Category: "uncategorized", Label: ptr("[31m"), Severity: "unknown", Frameworks: []string{}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, adversarialOf(tt.meta)); diff != "" {
			t.Errorf("adversarialOf(%v) (-want +got):\n%s", tt.meta, diff)
		}
	}
}

func TestBuilderWithoutItems(t *testing.T) {
	full := fixtureReport(t)
	lean := fixtureReport(t, WithoutItems())
	if lean.Items != nil {
		t.Errorf("items = %d rows, want nil", len(lean.Items))
	}
	full.Items = nil
	if diff := cmp.Diff(full, lean); diff != "" {
		t.Errorf("aggregates differ without items (-full +lean):\n%s", diff)
	}
}

func TestBuilderOutOfOrder(t *testing.T) {
	rs := fixtureResults()
	want := Build(fixtureRun(), rs)
	rev := slices.Clone(rs)
	slices.Reverse(rev)
	got := Build(fixtureRun(), rev)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("report of reversed results differs (-in order +reversed):\n%s", diff)
	}
}

func TestBuilderReportTwice(t *testing.T) {
	rs := fixtureResults()
	b := NewBuilder(fixtureRun())
	for _, r := range rs[:3] {
		b.Add(r)
	}
	first := b.Report()
	firstMean := *first.Scorer("exact").Mean
	for _, r := range rs[3:] {
		b.Add(r)
	}
	second := b.Report()
	if !near(firstMean, 2.0/3) || len(first.Items) != 3 || len(first.Failures) != 4 {
		t.Errorf("first report changed: mean %v, %d items, %d failures", firstMean, len(first.Items), len(first.Failures))
	}
	if diff := cmp.Diff(Build(fixtureRun(), rs), second); diff != "" {
		t.Errorf("second report differs from a one-shot build (-want +got):\n%s", diff)
	}
}

func TestBuilderUnknownScorerAndCounts(t *testing.T) {
	// A run record without scorers or counts (still pending).
	run := &evalrun.Run{ID: "r", Status: evalrun.RunRunning}
	v := 0.8
	rep := Build(run, []*evalrun.ItemResult{
		{Index: 0, ItemID: "a", Output: evalrun.String("x"), Scores: []evalrun.ScorerResult{{Scorer: "s", Score: &v, Passed: true}}},
		{Index: 1, ItemID: "b", Error: "boom"},
	})
	if s := rep.Scorer("s"); s == nil || s.Threshold != evalrun.DefaultThreshold || s.Count != 1 {
		t.Errorf("scorer s = %+v, want added with the default threshold", s)
	}
	if rep.Run.Total != 2 || rep.Run.Succeeded != 1 || rep.Run.Failed != 1 || rep.Run.CompletedWithErrors {
		t.Errorf("run = %+v, want counts from the results", rep.Run)
	}
	if rep.Run.StartedAt != nil || rep.Run.DurationMS != nil {
		t.Errorf("times = %v %v, want null", rep.Run.StartedAt, rep.Run.DurationMS)
	}
	if *rep.Failures[0].Kind != evalrun.ErrorPermanent {
		t.Errorf("kind of an unclassified error = %v, want permanent", *rep.Failures[0].Kind)
	}
	if rep.Items[0].Input != nil {
		t.Errorf("input without an item = %s, want null", rep.Items[0].Input)
	}
}

func TestErrors(t *testing.T) {
	// 1 target failure + 5 errors of the broken scorer.
	if got := fixtureReport(t).Errors(); got != 6 {
		t.Errorf("Errors() = %d, want 6", got)
	}
}

func TestEmptyRun(t *testing.T) {
	rep := Build(fixtureRun(), nil)
	if len(rep.Scorers) != 3 || rep.MacroPassRate != nil || len(rep.Cohorts) != 0 || len(rep.Failures) != 1 ||
		rep.Items == nil || len(rep.Items) != 0 {
		t.Errorf("empty report = %+v", rep)
	}
}

func TestFromStore(t *testing.T) {
	ctx := context.Background()
	st := &fakeStore{run: fixtureRun(), results: fixtureResults()}
	got, err := FromStore(ctx, st, st.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fixtureReport(t), got); diff != "" {
		t.Errorf("FromStore differs from Build (-want +got):\n%s", diff)
	}
	if _, err := FromStore(ctx, st, "nope"); !errors.Is(err, evalrun.ErrNotFound) {
		t.Errorf("unknown run: err = %v, want ErrNotFound", err)
	}
	st.failAt = 2
	if _, err := FromStore(ctx, st, st.run.ID); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("scan error: err = %v, want it returned", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	st.failAt = 0
	if _, err := FromStore(cctx, st, st.run.ID); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
}

func BenchmarkBuilder(b *testing.B) {
	const n = 100_000
	run := fixtureRun()
	rs := make([]*evalrun.ItemResult, n)
	tags := [][]any{{"billing"}, {"refund", "billing"}, nil, {"untagged"}}
	for i := range rs {
		it := &evalrun.Item{ID: "item-" + time.Duration(i).String(), Input: evalrun.String("q")}
		if tg := tags[i%len(tags)]; tg != nil {
			it.Metadata = map[string]any{"tags": tg}
		}
		s1, s2 := float64(i%11)/10, float64(i%7)/6
		rs[i] = &evalrun.ItemResult{Index: i, ItemID: it.ID, Item: it, Output: evalrun.String("a"),
			Latency: time.Duration(i%500) * time.Millisecond,
			Usage:   evalrun.Usage{InputTokens: evalrun.Int64(10)},
			Scores: []evalrun.ScorerResult{
				{Scorer: "exact", Score: &s1, Passed: s1 >= 0.5},
				{Scorer: "judge", Score: &s2, Passed: s2 >= 0.7, Reason: "ok"},
				{Scorer: "broken", Error: "x"},
			}}
		if i%100 == 0 {
			rs[i].Error, rs[i].Scores = "boom", nil
		}
	}
	for _, bc := range []struct {
		name string
		opts []Option
	}{{"items", nil}, {"without-items", []Option{WithoutItems()}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bl := NewBuilder(run, bc.opts...)
				for _, r := range rs {
					bl.Add(r)
				}
				if rep := bl.Report(); rep.Scorers[0].Count != n-n/100 {
					b.Fatal(rep.Scorers[0].Count)
				}
			}
		})
	}
}

// The scorers' usage is summed over every verdict, a failed one's spend
// included, and counted per verdict that reported it; a cached verdict (no
// call, no usage) and an unpriced model (tokens, no cost) are not
// reported.
func TestBuilderScorerUsageTotals(t *testing.T) {
	judge := func(in, out int64, cost float64) evalrun.Usage {
		return evalrun.Usage{InputTokens: &in, OutputTokens: &out, CostUSD: &cost}
	}
	v := 1.0
	rs := []*evalrun.ItemResult{
		{Index: 0, ItemID: "a", Output: evalrun.String("x"), Usage: evalrun.Usage{InputTokens: evalrun.Int64(9)}, Scores: []evalrun.ScorerResult{
			{Scorer: "judge", Score: &v, Passed: true, Usage: judge(200, 20, 0.00018)},
			{Scorer: "emb", Score: &v, Passed: true, Usage: evalrun.Usage{InputTokens: evalrun.Int64(60)}},
		}},
		{Index: 1, ItemID: "b", Output: evalrun.String("y"), Scores: []evalrun.ScorerResult{
			// Two attempts, the second malformed: both are paid for.
			{Scorer: "judge", Error: "malformed verdict", ErrorKind: evalrun.ErrorInvalidOutput, Usage: judge(400, 45, 0.00038)},
			{Scorer: "emb", Score: &v, Passed: true, Usage: evalrun.Usage{InputTokens: evalrun.Int64(30)}},
		}},
		{Index: 2, ItemID: "c", Output: evalrun.String("z"), CacheHit: true, Scores: []evalrun.ScorerResult{
			{Scorer: "judge", Score: &v, Passed: true}, // from the response cache
			{Scorer: "emb", Score: &v, Passed: true, Usage: evalrun.Usage{InputTokens: evalrun.Int64(0)}},
		}},
		{Index: 3, ItemID: "d", Error: "boom", ErrorKind: evalrun.ErrorPermanent}, // no output, no scores
	}
	s := Build(&evalrun.Run{}, rs).Usage.Scorers
	// Input: 200 + 60 + 400 + 30 + 0; output: 20 + 45; cost: judge only.
	if s.InputTokens.Total == nil || *s.InputTokens.Total != 690 || s.InputTokens.Reported != 5 {
		t.Errorf("scorer input tokens %v reported by %d, want 690 by 5", s.InputTokens.Total, s.InputTokens.Reported)
	}
	if s.OutputTokens.Total == nil || *s.OutputTokens.Total != 65 || s.OutputTokens.Reported != 2 {
		t.Errorf("scorer output tokens %v reported by %d, want 65 by 2", s.OutputTokens.Total, s.OutputTokens.Reported)
	}
	wantNum(t, "scorer cost", s.CostUSD.Total, 0.00056)
	if s.CostUSD.Reported != 2 {
		t.Errorf("scorer cost reported by %d, want 2", s.CostUSD.Reported)
	}
	// The target's usage stays apart.
	if u := Build(&evalrun.Run{}, rs).Usage; u.InputTokens.Total == nil || *u.InputTokens.Total != 9 || u.CostUSD.Total != nil {
		t.Errorf("target usage %+v, want 9 input tokens and no cost", u)
	}
}
