package suite_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/suite"
)

// laughs returns a billion-laughs document: levels of aliases, each naming
// the previous level nine times.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 9), ", "))
	}
	return b.String() + minimal
}

// TestHostileSuites feeds the parser documents built to exhaust memory or
// time, and documents YAML forbids: each is refused with its place.
func TestHostileSuites(t *testing.T) {
	deep := "x: " + strings.Repeat("[", suite.MaxDepth+6) + strings.Repeat("]", suite.MaxDepth+6) + "\n"
	deepPath := "x" + strings.Repeat("[0]", suite.MaxDepth-1)
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"self alias", "a: &a [*a]\n", []string{
			`suite.yaml:1:8: a[0]: alias *a refers to a node that contains the alias (a cycle) (an alias may repeat a node defined before it, not one that contains it)`}},
		{"mapping alias cycle", "a: &m\n  b: *m\n", []string{
			`suite.yaml:2:6: a.b: alias *m refers to a node that contains the alias (a cycle) (an alias may repeat a node defined before it, not one that contains it)`}},
		{"billion laughs", laughs(9), []string{
			`suite.yaml:6:25: l5[3]: the suite expands to more than 100000 YAML nodes with its aliases followed (limit 100000) (write the values out, or use fewer aliases)`}},
		{"many nodes, no alias", minimal + "x: [" + strings.TrimSuffix(strings.Repeat("1, ", suite.MaxNodes), ", ") + "]\n", []string{
			`suite.yaml:5:299963: x[99986]: the suite has more than 100000 YAML nodes (limit 100000) (a suite is configuration: put data in the dataset file)`}},
		{"too deep", deep, []string{
			fmt.Sprintf(`suite.yaml:1:%d: %s: nested deeper than 64 levels (limit 64, aliases followed) (flatten the structure)`, 3+suite.MaxDepth, deepPath)}},
		{"duplicate section", minimal + "target: {kind: http}\n", []string{
			`suite.yaml:5:1: target: duplicate key "target": already set on line 3 (keep one of them)`}},
		{"duplicate nested key", minimal + "execution:\n  concurrency: 2\n  repeat: 2\n  concurrency: 300\n", []string{
			`suite.yaml:8:3: execution.concurrency: duplicate key "concurrency": already set on line 6 (keep one of them)`}},
		{"duplicate scorer key", "dataset: {file: data.jsonl}\ntarget: {kind: echo}\nscorers:\n  - {kind: regex, pattern: a, pattern: b}\n", []string{
			`suite.yaml:4:31: scorers[0].pattern: duplicate key "pattern": already set on line 4 (keep one of them)`}},
		{"too large", minimal + "# " + strings.Repeat("x", suite.MaxFileBytes) + "\n", []string{
			`suite.yaml: the suite file is larger than 1048576 bytes (limit 1048576) (a suite is configuration: put data in the dataset file and long schemas in schema_file)`}},
		{"concurrency", minimal + "execution: {concurrency: 1000000000}\n", []string{
			`suite.yaml:5:26: execution.concurrency: must be at most 10000 (each slot is a goroutine and, for a network target, an open connection), got 1000000000`}},
		{"concurrency int64 max", minimal + "execution: {concurrency: 9223372036854775807}\n", []string{
			`suite.yaml:5:26: execution.concurrency: must be at most 10000 (each slot is a goroutine and, for a network target, an open connection), got 9223372036854775807`}},
		{"concurrency past int64", minimal + "execution: {concurrency: 92233720368547758070}\n", []string{
			`suite.yaml:5:26: execution.concurrency: must be a whole number, got "92233720368547758070"`}},
		{"repeat", minimal + "execution: {repeat: 1000000000}\n", []string{
			`suite.yaml:5:21: execution.repeat: must be at most 1000 (the run holds every execution of every item), got 1000000000`}},
		{"max_retries", minimal + "execution: {max_retries: 101}\n", []string{
			`suite.yaml:5:26: execution.max_retries: must be at most 100 (the back-off doubles at every retry), got 101`}},
		{"item_timeout", minimal + "execution: {item_timeout: 25h}\n", []string{
			`suite.yaml:5:27: execution.item_timeout: must be at most 24h0m0s (an item running longer is stuck; 0 means none), got 25h`}},
		{"retry_delay", minimal + "execution: {retry_delay: 2h}\n", []string{
			`suite.yaml:5:26: execution.retry_delay: must be at most 1h0m0s (it is the base of a doubling back-off), got 2h`}},
		{"response size", "dataset: {file: data.jsonl}\ntarget: {kind: http, url: 'http://127.0.0.1:1/', max_response_bytes: 9223372036854775807}\nscorers: [exact_match]\n", []string{
			`suite.yaml:2:70: target.max_response_bytes: must be at most 1073741824 (a response is held in memory whole), got 9223372036854775807`}},
		{"judge max_tokens", "dataset: {file: data.jsonl}\ntarget: {kind: echo}\nscorers:\n  - {kind: llm_judge, rubric: r, model: m, max_tokens: 100000000}\n", []string{
			`suite.yaml:4:56: scorers[0].max_tokens: must be at most 10000000 (far beyond any model's output), got 100000000`}},
		{"bounds from the environment", minimal + "execution:\n  concurrency: ${N}\n", []string{
			`suite.yaml:6:16: execution.concurrency: must be at most 10000 (each slot is a goroutine and, for a network target, an open connection), got 20000`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := parse(t, tc.src, "N=20000", "OPENAI_API_KEY=sk-test")
			compareLines(t, problems(t, err), tc.want)
			// A watchdog against a parse that runs away (an alias bomb
			// expanded takes hours), not a speed goal: a loaded CI
			// machine takes seconds.
			if d := time.Since(start); d > 2*time.Minute {
				t.Errorf("refused after %s", d)
			}
		})
	}
}

// At the limits themselves, a suite is accepted.
func TestSuiteAtLimits(t *testing.T) {
	src := minimal + "execution: {concurrency: 10000, repeat: 1000, max_retries: 100, item_timeout: 24h, attempt_timeout: 24h, retry_delay: 1h}\n"
	s, err := parse(t, src)
	if err != nil {
		t.Fatal(err)
	}
	if e := s.Execution; e.Concurrency != 10000 || e.Repeat != 1000 || e.MaxRetries != 100 || e.ItemTimeout != 24*time.Hour {
		t.Errorf("execution %+v", e)
	}
	nested := "dataset: {file: data.jsonl}\ntarget: {kind: echo}\nscorers:\n  - kind: json_schema\n    schema: " +
		strings.Repeat(`{"items": `, suite.MaxDepth-5) + `{}` + strings.Repeat("}", suite.MaxDepth-5) + "\n"
	if _, err := parse(t, nested); err != nil {
		t.Errorf("a schema nested %d levels in a suite: %v", suite.MaxDepth-2, err)
	}
	shared := "dataset: {file: data.jsonl}\ntarget: {kind: echo}\nscorers:\n  - {kind: regex, pattern: &p 'a+'}\n  - {kind: regex, name: again, pattern: *p}\n"
	if _, err := parse(t, shared); err != nil {
		t.Errorf("an alias repeating a mapping: %v", err)
	}
}

func TestApplyBounds(t *testing.T) {
	s, err := parse(t, minimal)
	if err != nil {
		t.Fatal(err)
	}
	big, huge, long := 1_000_000_000, int(^uint(0)>>1), 48*time.Hour
	for _, tc := range []struct {
		o    suite.Overrides
		want string
	}{
		{suite.Overrides{Concurrency: &big}, "invalid: --concurrency 1000000000: must be at most 10000 (each slot is a goroutine and, for a network target, an open connection)"},
		{suite.Overrides{Concurrency: &huge}, "invalid: --concurrency 9223372036854775807: must be at most 10000 (each slot is a goroutine and, for a network target, an open connection)"},
		{suite.Overrides{Repeat: &big}, "invalid: --repeat 1000000000: must be at most 1000 (the run holds every execution of every item)"},
		{suite.Overrides{MaxRetries: &big}, "invalid: --max-retries 1000000000: must be at most 100 (the back-off doubles at every retry)"},
		{suite.Overrides{AttemptTimeout: &long}, "invalid: --attempt-timeout 48h0m0s: must be at most 24h0m0s (an attempt running longer is stuck; 0 means none)"},
	} {
		if err := s.Apply(tc.o); err == nil || err.Error() != tc.want || !errors.Is(err, evalrun.ErrInvalid) {
			t.Errorf("Apply: %v, want %q", err, tc.want)
		}
	}
	if s.Execution != suite.DefaultExecution() {
		t.Errorf("a refused override changed the execution: %+v", s.Execution)
	}
}

// FuzzParse: whatever the bytes, Parse returns a suite or an *Error
// matching ErrInvalid, without panicking, within the limits.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{minimal, "a: &a [*a]\n", laughs(9), "a: &m\n  b: *m\n", minimal + "target: {kind: http}\n",
		"x: " + strings.Repeat("[", 200) + "\n", minimal + "execution: {concurrency: 9223372036854775807}\n",
		"dataset: *x\n", "<<: {a: 1}\n", "? [a]\n: b\n"} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := suite.Parse(data, "suite.yaml", dir, suite.Options{})
		if err != nil {
			var se *suite.Error
			if !errors.As(err, &se) || !errors.Is(err, evalrun.ErrInvalid) {
				t.Fatalf("error %v (%T) is not a *suite.Error", err, err)
			}
			return
		}
		s.Close()
	})
}
