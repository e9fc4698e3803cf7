package report

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

func TestParseCondition(t *testing.T) {
	tests := []struct {
		in   string
		want Condition
	}{
		{"pass_rate(exact_match) < 0.9", Condition{Metric: "pass_rate", Scorer: "exact_match", Op: OpLT, Value: 0.9}},
		{"  mean( judge ) <0.7 ", Condition{Metric: "mean", Scorer: "judge", Op: OpLT, Value: 0.7}},
		{"p50(a-b.c) <= .5", Condition{Metric: "p50", Scorer: "a-b.c", Op: OpLE, Value: 0.5}},
		{"p95(x)>=1", Condition{Metric: "p95", Scorer: "x", Op: OpGE, Value: 1}},
		{"errors(judge) > 0", Condition{Metric: "errors", Scorer: "judge", Op: OpGT, Value: 0}},
		{`count("my scorer (v2)") == 10`, Condition{Metric: "count", Scorer: "my scorer (v2)", Op: OpEQ, Value: 10}},
		{"failed > 0", Condition{Metric: "failed", Op: OpGT, Value: 0}},
		{"succeeded != 5", Condition{Metric: "succeeded", Op: OpNE, Value: 5}},
		{"skipped>0", Condition{Metric: "skipped", Op: OpGT, Value: 0}},
		{"total < 1e2", Condition{Metric: "total", Op: OpLT, Value: 100}},
		{"failed_rate > 10%", Condition{Metric: "failed_rate", Op: OpGT, Value: 0.1}},
		{"MACRO_PASS_RATE < 0.8", Condition{Metric: "macro_pass_rate", Op: OpLT, Value: 0.8}},
		{"errors > 0", Condition{Metric: "errors", Op: OpGT, Value: 0}},
		{"persist_errors > 0", Condition{Metric: "persist_errors", Op: OpGT, Value: 0}},
		{"mean(s) > -0.5", Condition{Metric: "mean", Scorer: "s", Op: OpGT, Value: -0.5}},
	}
	for _, tt := range tests {
		got, err := ParseCondition(tt.in)
		if err != nil {
			t.Errorf("ParseCondition(%q): %v", tt.in, err)
			continue
		}
		tt.want.Source = strings.TrimSpace(tt.in)
		if got != tt.want {
			t.Errorf("ParseCondition(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseConditionErrors(t *testing.T) {
	tests := []struct {
		in     string
		column int
		msg    string
	}{
		{"", 0, "empty condition"},
		{"pass_rate(x < 0.9", 10, `missing ")"`},
		{"pass_rate() < 0.9", 11, "expected a scorer name"},
		{"pass_rate < 0.9", 11, "needs a scorer name"},
		{"failed(x) > 0", 7, "takes no scorer name"},
		{"passrate(x) < 0.9", 1, `unknown metric "passrate"`},
		{"faild > 0", 1, `unknown metric "faild"`},
		{"failed", 7, "expected a comparison"},
		{"failed => 0", 8, `unknown comparison "=>"`},
		{"failed = 0", 8, `unknown comparison "="`},
		{"failed > ", 10, "expected a number after >"},
		{"failed > x", 10, `expected a number, found 'x'`},
		{"failed > 1..2", 10, `"1..2" is not a number`},
		{"failed > 0 and total > 1", 12, "unexpected"},
		{`mean("x) < 1`, 6, "unterminated"},
		{"? > 1", 1, "expected a metric name"},
	}
	for _, tt := range tests {
		_, err := ParseCondition(tt.in)
		var ce *ConditionError
		if !errors.As(err, &ce) {
			t.Errorf("ParseCondition(%q): err = %v, want a *ConditionError", tt.in, err)
			continue
		}
		if !errors.Is(err, evalrun.ErrInvalid) {
			t.Errorf("ParseCondition(%q): error does not wrap ErrInvalid", tt.in)
		}
		if ce.Column != tt.column || !strings.Contains(ce.Msg, tt.msg) {
			t.Errorf("ParseCondition(%q) = column %d %q, want column %d containing %q", tt.in, ce.Column, ce.Msg, tt.column, tt.msg)
		}
		if !strings.Contains(err.Error(), strconv.Quote(tt.in)) {
			t.Errorf("error %q does not quote the input", err)
		}
	}
}

func TestConditionCheck(t *testing.T) {
	scorers := []string{"exact", "judge"}
	for _, s := range []string{"pass_rate(exact) < 1", "failed > 0", "errors(judge) > 0"} {
		c, _ := ParseCondition(s)
		if err := c.Check(scorers); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	c, _ := ParseCondition("mean(exact_match) < 0.7")
	err := c.Check(scorers)
	var ce *ConditionError
	if !errors.As(err, &ce) || !errors.Is(err, evalrun.ErrInvalid) || ce.Column != 6 ||
		!strings.Contains(err.Error(), `unknown scorer "exact_match" (scorers: exact, judge)`) {
		t.Errorf("Check = %v", err)
	}
	if err := c.Check(nil); err == nil || !strings.Contains(err.Error(), "no scorers") {
		t.Errorf("Check(nil) = %v", err)
	}
}

func TestEvaluate(t *testing.T) {
	rep := fixtureReport(t) // exact .6/.6, judge mean .56 p95 .95 pass .4, broken all errors; failed 1 of 6
	tests := []struct {
		cond     string
		breached bool
		value    *float64
	}{
		{"pass_rate(exact) < 0.9", true, ptr(0.6)},
		{"pass_rate(exact) < 0.6", false, ptr(0.6)},
		{"pass_rate(exact) <= 0.6", true, ptr(0.6)},
		{"mean(judge) < 0.5", false, ptr(2.8 / 5)},
		{"p95(judge) >= 0.95", true, ptr(0.95)},
		{"p50(exact) != 1", false, ptr(1.0)},
		{"errors(broken) > 0", true, ptr(5.0)},
		{"count(judge) == 5", true, ptr(5.0)},
		{"failed > 0", true, ptr(1.0)},
		{"succeeded < 5", false, ptr(5.0)},
		{"skipped > 0", false, ptr(0.0)},
		{"total != 6", false, ptr(6.0)},
		{"failed_rate > 0.1", true, ptr(1.0 / 6)},
		{"failed_rate > 0.2", false, ptr(1.0 / 6)},
		{"macro_pass_rate < 0.8", true, ptr(0.5)},
		{"errors > 5", true, ptr(6.0)}, // 1 failed + 5 scorer errors
		{"persist_errors > 0", true, ptr(1.0)},
		// Null metrics count as breached, whatever the comparison.
		{"mean(broken) < 0.5", true, nil},
		{"pass_rate(broken) > 2", true, nil},
		{"mean(nosuch) > 0", true, nil},
	}
	var conds []Condition
	var wantBreaches []string
	for _, tt := range tests {
		c, err := ParseCondition(tt.cond)
		if err != nil {
			t.Fatal(err)
		}
		conds = append(conds, c)
		v, breached := c.Eval(rep)
		if breached != tt.breached {
			t.Errorf("%s: breached = %v, want %v", tt.cond, breached, tt.breached)
		}
		if (v == nil) != (tt.value == nil) || v != nil && !near(*v, *tt.value) {
			t.Errorf("%s: value = %v, want %v", tt.cond, deref(v), deref(tt.value))
		}
		if tt.breached {
			wantBreaches = append(wantBreaches, tt.cond)
		}
	}
	got := Evaluate(rep, conds)
	if len(got) != len(wantBreaches) {
		t.Fatalf("Evaluate: %d breaches, want %d", len(got), len(wantBreaches))
	}
	for i, b := range got {
		if b.Condition.Source != wantBreaches[i] {
			t.Errorf("breach %d = %s, want %s", i, b.Condition.Source, wantBreaches[i])
		}
	}
	if s := got[0].String(); s != "pass_rate(exact) < 0.9 (actual 0.6)" {
		t.Errorf("breach text = %q", s)
	}
	if s := got[len(got)-1].String(); !strings.Contains(s, "actual null") {
		t.Errorf("null breach text = %q", s)
	}
	empty := Build(&evalrun.Run{}, nil)
	c, _ := ParseCondition("failed_rate > 0.5")
	if v, breached := c.Eval(empty); v != nil || !breached {
		t.Errorf("failed_rate of an empty run = %v, %v; want null, breached", v, breached)
	}
	if got := Evaluate(rep, nil); got != nil {
		t.Errorf("Evaluate(no conditions) = %v", got)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestParseConditions(t *testing.T) {
	cs, err := ParseConditions([]string{"failed > 0", "mean(a) < 1"})
	if err != nil || len(cs) != 2 || cs[1].Scorer != "a" {
		t.Errorf("ParseConditions = %v, %v", cs, err)
	}
	if _, err := ParseConditions([]string{"failed > 0", "bogus"}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("ParseConditions with a bad one: %v", err)
	}
}
