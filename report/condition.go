package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/evalrun/evalrun"
)

// Op is a comparison operator of a [Condition].
type Op string

// The operators.
const (
	OpLT Op = "<"
	OpLE Op = "<="
	OpGT Op = ">"
	OpGE Op = ">="
	OpEQ Op = "=="
	OpNE Op = "!="
)

func (o Op) holds(a, b float64) bool {
	switch o {
	case OpLT:
		return a < b
	case OpLE:
		return a <= b
	case OpGT:
		return a > b
	case OpGE:
		return a >= b
	case OpEQ:
		return a == b
	case OpNE:
		return a != b
	}
	return false
}

// scorerMetrics are the metrics that take a scorer name.
var scorerMetrics = []string{"pass_rate", "mean", "p50", "p95", "errors", "count", "pass_at_k", "pass_all_k", "flaky"}

// runMetrics are the metrics without arguments.
var runMetrics = []string{"total", "succeeded", "failed", "skipped", "failed_rate",
	"persist_errors", "macro_pass_rate", "errors"}

// Condition is a parsed fail_on threshold: when it holds for a report, the
// run is failed (exit code 1).
//
// The grammar (spaces are free; see docs/report-schema.md):
//
//	condition = metric op number
//	metric    = run-metric | scorer-metric "(" scorer ")"
//	run-metric    = total | succeeded | failed | skipped | failed_rate
//	              | persist_errors | macro_pass_rate | errors
//	scorer-metric = pass_rate | mean | p50 | p95 | errors | count
//	              | pass_at_k | pass_all_k | flaky
//	scorer    = a name without ")" (spaces around it trimmed), or a
//	            double-quoted Go string
//	op        = "<" | "<=" | ">" | ">=" | "==" | "!="
//	number    = a decimal number, optionally followed by "%" (90% = 0.9)
//
// Rates (pass_rate, failed_rate, macro_pass_rate) are fractions in [0,1];
// failed_rate is failed/total. The bare errors is failed plus every
// scorer's errors. pass_at_k, pass_all_k and flaky (the scorer's flaky
// count) come from the scorer's [RepeatStats] and are null without
// repeats. A condition whose metric is null (no scores, or a total of 0)
// counts as breached: a gate that cannot be checked must not pass.
type Condition struct {
	// Source is the condition as written, spaces trimmed.
	Source string
	// Metric is the metric's name, e.g. "pass_rate".
	Metric string
	// Scorer is the scorer's name for a scorer metric, "" otherwise.
	Scorer string
	Op     Op
	Value  float64
}

// String returns the condition as written.
func (c Condition) String() string { return c.Source }

// ConditionError is a condition that does not parse or names an unknown
// scorer. It wraps [evalrun.ErrInvalid].
type ConditionError struct {
	// Input is the condition as given.
	Input string
	// Column is the 1-based position (in characters) of the problem in
	// Input; 0 when the problem is not at one place.
	Column int
	Msg    string
}

// Error returns e.g. `condition "pass_rate(x < 0.9": column 12: expected ")"`.
func (e *ConditionError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("condition %q: column %d: %s", e.Input, e.Column, e.Msg)
	}
	return fmt.Sprintf("condition %q: %s", e.Input, e.Msg)
}

// Unwrap returns [evalrun.ErrInvalid].
func (e *ConditionError) Unwrap() error { return evalrun.ErrInvalid }

// ParseCondition parses a fail_on condition such as
// "pass_rate(exact_match) < 0.9" or "failed > 0". Errors are
// *[ConditionError] values naming the column of the problem.
func ParseCondition(s string) (Condition, error) {
	p := &condParser{in: s, r: []rune(s)}
	c, err := p.parse()
	if err != nil {
		return Condition{}, err
	}
	c.Source = strings.TrimSpace(s)
	return c, nil
}

// ParseConditions parses every condition, returning the first error.
func ParseConditions(ss []string) ([]Condition, error) {
	out := make([]Condition, 0, len(ss))
	for _, s := range ss {
		c, err := ParseCondition(s)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

type condParser struct {
	in  string
	r   []rune
	pos int
}

func (p *condParser) errAt(pos int, format string, args ...any) error {
	return &ConditionError{Input: p.in, Column: pos + 1, Msg: fmt.Sprintf(format, args...)}
}

func (p *condParser) skipSpace() {
	for p.pos < len(p.r) && (p.r[p.pos] == ' ' || p.r[p.pos] == '\t') {
		p.pos++
	}
}

func (p *condParser) peek() rune {
	if p.pos < len(p.r) {
		return p.r[p.pos]
	}
	return 0
}

func isIdent(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

func (p *condParser) parse() (Condition, error) {
	var c Condition
	p.skipSpace()
	if p.pos == len(p.r) {
		return c, &ConditionError{Input: p.in, Msg: "empty condition (e.g. \"pass_rate(exact_match) < 0.9\")"}
	}
	start := p.pos
	for p.pos < len(p.r) && isIdent(p.r[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return c, p.errAt(start, "expected a metric name, found %q", p.r[start])
	}
	c.Metric = strings.ToLower(string(p.r[start:p.pos]))
	p.skipSpace()
	if p.peek() == '(' {
		if !slices.Contains(scorerMetrics, c.Metric) {
			if slices.Contains(runMetrics, c.Metric) {
				return c, p.errAt(p.pos, "%s takes no scorer name", c.Metric)
			}
			return c, p.errAt(start, "unknown metric %q (scorer metrics: %s)", c.Metric, strings.Join(scorerMetrics, ", "))
		}
		open := p.pos
		p.pos++
		p.skipSpace()
		name, err := p.scorerName(open)
		if err != nil {
			return c, err
		}
		c.Scorer = name
		p.skipSpace()
		if p.peek() != ')' {
			return c, p.errAt(p.pos, "expected \")\" to close %s(", c.Metric)
		}
		p.pos++
	} else if !slices.Contains(runMetrics, c.Metric) {
		if slices.Contains(scorerMetrics, c.Metric) {
			return c, p.errAt(p.pos, "%s needs a scorer name, e.g. %s(exact_match)", c.Metric, c.Metric)
		}
		return c, p.errAt(start, "unknown metric %q (use %s, or %s with a scorer name in parentheses)",
			c.Metric, strings.Join(runMetrics, ", "), strings.Join(scorerMetrics, ", "))
	}

	p.skipSpace()
	opStart := p.pos
	for p.pos < len(p.r) && strings.ContainsRune("<>=!", p.r[p.pos]) {
		p.pos++
	}
	switch op := Op(string(p.r[opStart:p.pos])); op {
	case OpLT, OpLE, OpGT, OpGE, OpEQ, OpNE:
		c.Op = op
	case "":
		if p.pos == len(p.r) {
			return c, p.errAt(p.pos, "expected a comparison (<, <=, >, >=, ==, !=) and a number after %s", strings.TrimSpace(string(p.r[:p.pos])))
		}
		return c, p.errAt(opStart, "expected a comparison (<, <=, >, >=, ==, !=), found %q", p.r[opStart])
	default:
		return c, p.errAt(opStart, "unknown comparison %q (use <, <=, >, >=, ==, !=)", op)
	}

	p.skipSpace()
	numStart := p.pos
	for p.pos < len(p.r) && strings.ContainsRune("0123456789.eE+-", p.r[p.pos]) {
		p.pos++
	}
	text := string(p.r[numStart:p.pos])
	if text == "" {
		if p.pos == len(p.r) {
			return c, p.errAt(p.pos, "expected a number after %s", c.Op)
		}
		return c, p.errAt(numStart, "expected a number, found %q", p.r[numStart])
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(v, 0) {
		return c, p.errAt(numStart, "%q is not a number", text)
	}
	if p.peek() == '%' {
		p.pos++
		v /= 100
	}
	c.Value = v
	p.skipSpace()
	if p.pos < len(p.r) {
		return c, p.errAt(p.pos, "unexpected %q after the number (one comparison per condition)", string(p.r[p.pos:]))
	}
	return c, nil
}

// scorerName reads a scorer name after "(": a quoted Go string, or
// everything up to ")" trimmed.
func (p *condParser) scorerName(open int) (string, error) {
	if p.peek() == '"' {
		start := p.pos
		p.pos++
		for p.pos < len(p.r) && p.r[p.pos] != '"' {
			if p.r[p.pos] == '\\' {
				p.pos++
			}
			p.pos++
		}
		if p.pos >= len(p.r) {
			return "", p.errAt(start, "unterminated quoted scorer name")
		}
		p.pos++
		name, err := strconv.Unquote(string(p.r[start:p.pos]))
		if err != nil {
			return "", p.errAt(start, "bad quoted scorer name: %v", err)
		}
		if name == "" {
			return "", p.errAt(start, "empty scorer name")
		}
		return name, nil
	}
	start := p.pos
	for p.pos < len(p.r) && p.r[p.pos] != ')' {
		p.pos++
	}
	name := strings.TrimSpace(string(p.r[start:p.pos]))
	if p.pos == len(p.r) {
		return "", p.errAt(open, "missing \")\" after the scorer name")
	}
	if name == "" {
		return "", p.errAt(start, "expected a scorer name inside the parentheses")
	}
	return name, nil
}

// Check returns an error (a *[ConditionError]) when the condition names a
// scorer that is not among scorers, so that a misspelt gate is found before
// the run starts.
func (c Condition) Check(scorers []string) error {
	if c.Scorer == "" || slices.Contains(scorers, c.Scorer) {
		return nil
	}
	known := "the suite has no scorers"
	if len(scorers) > 0 {
		known = "scorers: " + strings.Join(scorers, ", ")
	}
	col := 0
	if i := strings.Index(c.Source, c.Scorer); i >= 0 {
		col = utf8.RuneCountInString(c.Source[:i]) + 1
	}
	return &ConditionError{Input: c.Source, Column: col, Msg: fmt.Sprintf("unknown scorer %q (%s)", c.Scorer, known)}
}

func metricValue(c Condition, rep *Report) *float64 {
	f := func(n int) *float64 { v := float64(n); return &v }
	run := &rep.Run
	if c.Scorer != "" {
		s := rep.Scorer(c.Scorer)
		if s == nil {
			return nil
		}
		switch c.Metric {
		case "pass_rate":
			return s.PassRate
		case "mean":
			return s.Mean
		case "p50":
			return s.P50
		case "p95":
			return s.P95
		case "errors":
			return f(s.Errors)
		case "count":
			return f(s.Count)
		}
		if s.RepeatStats == nil {
			return nil // pass_at_k, pass_all_k and flaky need repeats
		}
		switch c.Metric {
		case "pass_at_k":
			return s.PassAtK
		case "pass_all_k":
			return s.PassAllK
		case "flaky":
			return f(s.FlakyCount)
		}
		return nil
	}
	switch c.Metric {
	case "total":
		return f(run.Total)
	case "succeeded":
		return f(run.Succeeded)
	case "failed":
		return f(run.Failed)
	case "skipped":
		return f(run.Skipped)
	case "persist_errors":
		return f(run.PersistErrors)
	case "failed_rate":
		if run.Total == 0 {
			return nil
		}
		v := float64(run.Failed) / float64(run.Total)
		return &v
	case "macro_pass_rate":
		return rep.MacroPassRate
	case "errors":
		return f(rep.Errors())
	}
	return nil
}

// Breach is a condition that holds for a report (or whose metric is null).
type Breach struct {
	Condition Condition
	// Value is the metric's actual value; nil when it is null.
	Value *float64
}

// String returns e.g. "pass_rate(exact_match) < 0.9 (actual 0.84)".
func (b Breach) String() string {
	if b.Value == nil {
		return fmt.Sprintf("%s (actual null: nothing to measure)", b.Condition.Source)
	}
	return fmt.Sprintf("%s (actual %s)", b.Condition.Source, strconv.FormatFloat(*b.Value, 'g', 6, 64))
}

// Eval returns the metric's value in rep and whether the condition is
// breached: it holds, or the value is null.
func (c Condition) Eval(rep *Report) (value *float64, breached bool) {
	v := metricValue(c, rep)
	if v == nil {
		return nil, true
	}
	return v, c.Op.holds(*v, c.Value)
}

// Evaluate returns the breached conditions, in the given order; none means
// every threshold holds.
func Evaluate(rep *Report, conds []Condition) []Breach {
	var out []Breach
	for _, c := range conds {
		if v, breached := c.Eval(rep); breached {
			out = append(out, Breach{Condition: c, Value: v})
		}
	}
	return out
}
