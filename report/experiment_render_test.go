package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

const experimentSchemaPath = "../docs/experiment.schema.json"

// compileExperimentSchema compiles docs/experiment.schema.json with the
// run report's schema it refers to.
func compileExperimentSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, path := range []string{schemaPath, experimentSchemaPath} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s is not JSON: %v", path, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
	}
	sch, err := c.Compile("https://github.com/evalrun/evalrun/docs/experiment.schema.json")
	if err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	return sch
}

// repeatsExperiment is a two-variant experiment with repeats, a scorer
// error and an item of one variant only.
func repeatsExperiment(t *testing.T) *Experiment {
	t.Helper()
	base, cand := expRun("base", 0), expRun("cand", 1)
	var rb, rc []*evalrun.ItemResult
	for i := range 3 {
		for rep := range 2 {
			r := expResult(base, i, i == 0, rep == 0, false)
			r.Repeat = rep
			rb = append(rb, r)
			c := expResult(cand, i, true, true, i == 2 && rep == 1)
			c.Repeat = rep
			if i == 1 {
				c.Scores[1] = evalrun.ScorerResult{Scorer: "judge", Error: "judge: rate limited", ErrorKind: evalrun.ErrorTransient}
			}
			rc = append(rc, c)
		}
	}
	rc = append(rc, expResult(cand, 3, true, true, false))
	exp, err := evalrun.ExperimentOf("exp-r", []*evalrun.Run{base, cand})
	if err != nil {
		t.Fatal(err)
	}
	e, err := BuildExperiment(exp, []*Report{Build(base, rb), Build(cand, rc)}, CompareOptions{Resamples: 500})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestExperimentJSONValidAgainstSchema(t *testing.T) {
	sch := compileExperimentSchema(t)
	one, _ := expFixture()
	one.Runs = one.Runs[:1]
	_, results := expFixture()
	single, err := BuildExperiment(one, []*Report{Build(one.Runs[0], results[0])}, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]*Experiment{
		"fixture":        expFixtureBuilt(t),
		"repeats":        repeatsExperiment(t),
		"baseline alone": single,
	} {
		if err := validate(t, sch, renderExperimentJSON(t, e)); err != nil {
			t.Errorf("%s: experiment report does not match the schema: %v", name, err)
		}
	}
}

func TestExperimentSchemaRejectsDrift(t *testing.T) {
	sch := compileExperimentSchema(t)
	good := string(renderExperimentJSON(t, expFixtureBuilt(t)))
	schemaRejects(t, sch, good, map[string][2]string{
		"schema version":         {`"schema_version": 3`, `"schema_version": 4`},
		"renamed pass_rate_ci":   {`"pass_rate_ci": [`, `"pass_rate_interval": [`},
		"renamed vs_baseline":    {`"vs_baseline": {}`, `"vs_base": {}`},
		"renamed p_value":        {`"p_value": 0.125`, `"p": 0.125`},
		"unknown verdict":        {`"verdict": "better"`, `"verdict": "significant"`},
		"interval of one":        {`"ci": [` + "\n            0.3,", `"ci": [`},
		"rate interval above 1":  {`0.6873262302663417`, `1.6873262302663417`},
		"ci for count 0":         {`"pass_rate_ci": null`, `"pass_rate_ci": [0, 1]`},
		"null delta with pairs":  {`"delta": 0.6`, `"delta": null`},
		"delta above 1":          {`"delta": 0.6`, `"delta": 1.6`},
		"no run_id":              {`"run_id": "20260102T030405-big",`, ``},
		"baseline missing":       {`"baseline": "mini",`, ``},
		"unknown status":         {`"status": "completed"`, `"status": "done"`},
		"score as string":        {`"exact": 1,`, `"exact": "1",`},
		"passed as number":       {`"exact": true`, `"exact": 1`},
		"negative failures":      {`"failures": 10`, `"failures": -10`},
		"usage drift (shared)":   {`"input_tokens": {`, `"tokens_in": {`},
		"item without variants":  {`"disagree": false,` + "\n      \"variants\": {", `"disagree": false, "variants": {}, "x": {`},
		"method without z":       {`"z": 1.959963984540054,`, ``},
		"added field unexpected": {`"skipped": 0,`, `"skipped": 0, "extra": 1,`},
	})
}

func TestExperimentTable(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteExperimentTable(&buf, expFixtureBuilt(t)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(out, "\n")
	find := func(prefix string) string {
		t.Helper()
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		t.Fatalf("no line starting %q in:\n%s", prefix, out)
		return ""
	}
	for prefix, want := range map[string]string{
		"experiment ":       "experiment exp-20260102T030405-00000001 support-bot dataset support v3 baseline mini variants 4 items 11",
		"VARIANT":           "VARIANT STATUS EXACT MEAN JUDGE MEAN MACRO FAILURES TOKENS COST P50 P95",
		"mini (baseline)":   "mini (baseline) completed 0.40 [0.17, 0.69] 0.400 0.90 [0.60, 0.98] 0.840 0.65 0 120 $0.0010 145ms 186ms",
		"big ":              "big completed 1.00 [0.72, 1.00] ▲ 1.000 0.70 [0.40, 0.89] 0.720 0.85 1 120 $0.0010 150ms 195ms",
		"terse ":            "terse completed 0.00 [0.00, 0.28] 0.000 1.00 [0.72, 1.00] 0.900 0.50 0 120 $0.0010 145ms 186ms",
		"broken ":           "broken completed — — — ▼ — — 10 — — 145ms 186ms",
		"big vs mini: ex":   "big vs mini: exact +0.60 [+0.30, +0.90] p=0.031 better",
		"big vs mini: ju":   "big vs mini: judge -0.20 [-0.60, +0.20] p=0.625 same",
		"broken vs mini: j": "broken vs mini: judge -0.90 [-1.00, -0.70] p=0.004 worse",
	} {
		if got := find(prefix); got != want {
			t.Errorf("line %q:\n got %s\nwant %s", prefix, got, want)
		}
	}
	if strings.Contains(out, "mini vs mini") {
		t.Error("the baseline is compared with itself")
	}
}

func TestExperimentMarkdown(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteExperimentMarkdown(&buf, expFixtureBuilt(t)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"## evalrun experiment: support-bot, experiment `exp-20260102T030405-00000001`\n",
		"| `exp-20260102T030405-00000001` | support v3 | mini | 4 | 11 |",
		"| variant | target | run | status | exact | judge | macro |",
		"| **mini** (baseline) | openai gpt-mini | `20260102T030405-mini` | completed | 40.0% [16.8–68.7] | 90.0% [59.6–98.2] | 65.0% |",
		"| big | openai gpt-big | `20260102T030405-big` | completed | 100.0% [72.2–100.0] ▲ | 70.0% [39.7–89.2] | 85.0% |",
		"| broken | openai gpt-broken | `20260102T030405-broken` | completed | — | — ▼ | — |",
		"| big | exact | +60.0 pp | [+30.0, +90.0 pp] | 0.031 | ▲ better | 10 | 6 | 0 |",
		"| broken | judge | -90.0 pp | [-100.0, -70.0 pp] | 0.004 | ▼ worse | 10 | 0 | 9 |",
		"| broken | 10 | 10 | 10 | — | — | — | 145ms | 186ms |",
		"### Items where variants disagree (10 of 11)",
		"| q0 | ✓ exact · ✓ judge · mini says q0 | ✓ exact · ✗ judge · big says q0 | ✗ exact · ✓ judge · terse says q0 | error: connection refused |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "| q10 |") {
		t.Error("q10 (one variant, no disagreement) is listed")
	}
}

// TestExperimentMarkdownBounded: a large experiment lists at most
// maxDisagreeRows items and cuts long outputs.
func TestExperimentMarkdownBounded(t *testing.T) {
	a, b := expRun("a", 0), expRun("b", 1)
	var ra, rb []*evalrun.ItemResult
	long := strings.Repeat("x", 1<<20)
	for i := range 50 {
		ra = append(ra, expResult(a, i, true, true, false))
		r := expResult(b, i, false, true, false)
		r.Output = evalrun.String(long)
		rb = append(rb, r)
	}
	exp, _ := evalrun.ExperimentOf("exp-b", []*evalrun.Run{a, b})
	e, err := BuildExperiment(exp, []*Report{Build(a, ra), Build(b, rb)}, CompareOptions{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteExperimentMarkdown(&buf, e); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, "\n| q"); n != maxDisagreeRows {
		t.Errorf("%d item rows, want %d", n, maxDisagreeRows)
	}
	if !strings.Contains(out, "… and 30 more") || !strings.Contains(out, "(50 of 50)") {
		t.Errorf("no count of the items left out")
	}
	if buf.Len() > 20_000 {
		t.Errorf("markdown is %d bytes: outputs are not cut", buf.Len())
	}
	if !strings.Contains(out, strings.Repeat("x", maxOutputRunes-1)+"…") {
		t.Error("a long output is not cut with …")
	}
}

// TestExperimentMarkdownInjection: names, ids, outputs and errors from a
// hostile pull request cannot break the tables, inject HTML, or open a
// code span or link.
func TestExperimentMarkdownInjection(t *testing.T) {
	evil := "x</td><script>alert(1)</script>|`![img](http://e/x.png)`\n# H"
	a, b := expRun("ok", 0), expRun("ok", 1)
	a.Variant, b.Variant = "base|<b>", "v<img src=x onerror=alert(1)>\n|"
	a.ID, b.ID = "run`a|", "run-b"
	a.Name = "suite <i>" + evil
	b.Target.Name = evil
	ra := []*evalrun.ItemResult{expResult(a, 0, true, true, false)}
	rb := []*evalrun.ItemResult{expResult(b, 0, false, false, false), expResult(b, 1, true, true, true)}
	ra[0].ItemID, rb[0].ItemID = evil, evil
	rb[0].Output = evalrun.String(evil)
	rb[1].Error = evil
	a.Scorers = []evalrun.ScorerInfo{{Name: "exact" + evil, Threshold: 0.5}, expScorers[1]}
	ra[0].Scores[0].Scorer = "exact" + evil
	exp, _ := evalrun.ExperimentOf("exp-<x>|", []*evalrun.Run{a, b})
	ra2, rb2 := Build(a, ra), Build(b, rb)
	e, err := BuildExperiment(exp, []*Report{ra2, rb2}, CompareOptions{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteExperimentMarkdown(&buf, e); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if showMD {
		t.Log(out)
	}
	for _, bad := range []string{"<script", "<img", "<b>", "<i>", "</td>", "![img]", "\n# H"} {
		if strings.Contains(out, bad) {
			t.Errorf("markdown contains %q:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "(1 of 2)") || !strings.Contains(out, "| x&lt;/td&gt;&lt;script&gt;") {
		t.Errorf("the hostile item is not listed, escaped, among the disagreements:\n%s", out)
	}
	// Every table row keeps its number of cells: no unescaped pipe.
	var cols int
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = 0
			continue
		}
		n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
		if cols == 0 {
			cols = n
		} else if n != cols {
			t.Errorf("row with %d pipes in a table of %d: %s", n, cols, line)
		}
	}
	if (strings.Count(out, "`")-strings.Count(out, "\\`"))%2 != 0 {
		t.Errorf("an odd number of backticks: a code span is left open:\n%s", out)
	}

	// The terminal table keeps one line per variant.
	buf.Reset()
	if err := WriteExperimentTable(&buf, e); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "\n|") || strings.Count(buf.String(), "\n") != 9 {
		t.Errorf("a newline from a name broke the terminal table:\n%s", buf.String())
	}
	// JSON keeps the text as data.
	data := renderExperimentJSON(t, e)
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("the JSON does not parse: %v", err)
	}
}

var showMD bool

// TestExperimentScorerErrors checks repeatsExperiment by hand. Pairs by
// (id, repeat): q0#0 q0#1 q1#0 q1#1 q2#0 q2#1 (q3 is cand's only).
//
//	exact: base passes q0 only; cand passes all but q2#1 (its target
//	       failed). x = 0 0 +1 +1 +1 0 (q2#1: base scored 0, cand crashed:
//	       both not passed). 6 pairs; by item (the mean of its repeats):
//	       q0 0, q1 1, q2 0.5: delta 1.5/3 = 0.5, p = 2·(1/2)² = 0.5.
//	judge: base passes repeat 0 only; cand's judge failed (error, no score)
//	       on q1, its target on q2#1. x = 0 +1 −1 0 0 0: q1#0 passed in base
//	       and errored in cand (−1); q1#1 base scored and failed, cand
//	       errored: 0, still a pair. 6 pairs; items q0 0.5, q1 −0.5, q2 0:
//	       delta 0, p = 1.
func TestExperimentScorerErrors(t *testing.T) {
	e := repeatsExperiment(t)
	exact, judge := e.Variant("cand").VsBaseline.Get("exact"), e.Variant("cand").VsBaseline.Get("judge")
	nearPtr(t, "exact delta", exact.Delta, 0.5, 1e-12)
	nearPtr(t, "exact p", exact.PValue, 0.5, 1e-12)
	if exact.Paired != 6 || exact.Improved != 3 || exact.Regressed != 0 || exact.Verdict != VerdictSame {
		t.Errorf("exact = %+v", exact)
	}
	nearPtr(t, "judge delta", judge.Delta, 0, 1e-12)
	nearPtr(t, "judge p", judge.PValue, 1, 1e-12)
	if judge.Paired != 6 || judge.Improved != 1 || judge.Regressed != 1 {
		t.Errorf("judge = %+v", judge)
	}
	// cand's judge: scored on q0#0, q0#1, q2#0 and q3 (4, all passed);
	// 2 errors. Wilson 4/4 = [4/(4+z²), 1].
	cj := e.Variant("cand").Scorers.Get("judge")
	z2 := wilsonZ95 * wilsonZ95
	if cj.Count != 4 || cj.Errors != 2 {
		t.Errorf("cand judge count %d errors %d, want 4 and 2", cj.Count, cj.Errors)
	}
	nearCI(t, "cand judge ci", cj.PassRateCI, 4/(4+z2), 1, 1e-15)
	q1 := e.Items[2]
	if q1.ID != "q1" || q1.Repeat != 0 || !q1.Disagree {
		t.Fatalf("items[2] = %+v", q1)
	}
	c := q1.Variants.Get("cand")
	if s, ok := c.Scores.Get("judge"); !ok || s != nil || c.Passed.Get("judge") {
		t.Errorf("cand's errored judge on q1 = %v %v %v, want null and not passed", s, ok, c.Passed.Get("judge"))
	}
	data := renderExperimentJSON(t, e)
	back, err := ReadExperimentJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if again := renderExperimentJSON(t, back); !bytes.Equal(data, again) {
		t.Error("the repeats experiment does not survive a JSON round trip")
	}
	if back.Variant("base").Scorers.Get("exact").RepeatStats == nil {
		t.Error("repeat statistics lost in the round trip")
	}
}

func TestExperimentStore(t *testing.T) {
	exp, results := expFixture()
	store := expStore(exp, results)
	e, err := BuildExperimentStore(context.Background(), store, exp, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep := e.Report("broken")
	if rep == nil || rep.Items != nil || rep.Run.Failed != 10 || rep.Scorer("judge") == nil {
		t.Errorf("stored report of broken = %+v", rep)
	}
	if got := e.Evaluate([]Condition{mustCondition(t, "failed > 5")}); len(got) != 1 || got[0].Variant != "broken" {
		t.Errorf("breaches = %v", got)
	}

	gone := expStore(exp, results)
	delete(gone.runs, exp.Runs[2].ID)
	if _, err := BuildExperimentStore(context.Background(), gone, exp, CompareOptions{}); !errors.Is(err, evalrun.ErrNotFound) ||
		!strings.Contains(err.Error(), "variant terse") {
		t.Errorf("a run gone from storage: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := BuildExperimentStore(ctx, store, exp, CompareOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestExperimentSummaryStore: without items, everything else is the full
// report's, byte for byte.
func TestExperimentSummaryStore(t *testing.T) {
	exp, results := expFixture()
	store := expStore(exp, results)
	full, err := BuildExperimentStore(context.Background(), store, exp, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := BuildExperimentSummaryStore(context.Background(), store, exp, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Items == nil || len(sum.Items) != 0 {
		t.Fatalf("summary items = %v, want []", sum.Items)
	}
	full.Items = []ExperimentItem{}
	if a, b := renderExperimentJSON(t, full), renderExperimentJSON(t, sum); !bytes.Equal(a, b) {
		t.Errorf("summary differs from the full report without items:\n%s", cmp.Diff(string(a), string(b)))
	}
}

func TestWriteExperimentFormats(t *testing.T) {
	e := expFixtureBuilt(t)
	for f, want := range map[Format]string{FormatJSON: `"schema_version": 3`, FormatMarkdown: "## evalrun experiment", FormatTable: "VARIANT", "": "VARIANT"} {
		var buf bytes.Buffer
		if err := WriteExperiment(&buf, e, f); err != nil || !strings.Contains(buf.String(), want) {
			t.Errorf("format %q: %v, output lacks %q", f, err, want)
		}
	}
	if err := WriteExperiment(&bytes.Buffer{}, e, FormatJUnit); !errors.Is(err, evalrun.ErrInvalid) {
		t.Errorf("junit: %v, want ErrInvalid", err)
	}
}
