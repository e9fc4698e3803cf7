package suite_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/suite"
)

// parse parses a suite with the given environment from a temp dir holding
// data.jsonl.
func parse(t *testing.T, src string, env ...string) (*suite.Suite, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.jsonl"), []byte(`{"input":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := suite.Parse([]byte(src), "suite.yaml", dir, suite.Options{Env: suite.EnvList(env)})
	if s != nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

// problems returns the error's lines, failing when it is not a suite.Error.
func problems(t *testing.T, err error) []string {
	t.Helper()
	var se *suite.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *suite.Error", err, err)
	}
	if !errors.Is(err, evalrun.ErrInvalid) {
		t.Errorf("error does not match evalrun.ErrInvalid")
	}
	return strings.Split(se.Error(), "\n")
}

const minimal = `
dataset: {file: data.jsonl}
target: {kind: echo}
scorers: [exact_match]
`

func TestParseDefaults(t *testing.T) {
	s, err := parse(t, minimal)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "suite" {
		t.Errorf("Name = %q, want the file's name %q", s.Name, "suite")
	}
	if s.Dataset.Name != "data" || !strings.HasSuffix(s.Dataset.File, "data.jsonl") || !filepath.IsAbs(s.Dataset.File) {
		t.Errorf("Dataset = %+v, want name data and an absolute file", s.Dataset)
	}
	if s.Execution != suite.DefaultExecution() {
		t.Errorf("Execution = %+v, want the defaults %+v", s.Execution, suite.DefaultExecution())
	}
	if got := s.ScorerNames(); len(got) != 1 || got[0] != "exact_match" {
		t.Errorf("ScorerNames = %v", got)
	}
	if s.TargetInfo != (evalrun.TargetInfo{Kind: "echo", Name: "echo"}) {
		t.Errorf("TargetInfo = %+v", s.TargetInfo)
	}
	o := s.Execution.EngineOptions()
	if o.Concurrency != 5 || o.ItemTimeout != 60*time.Second || o.DiscardResults || o.FixedConcurrency {
		t.Errorf("EngineOptions = %+v", o)
	}
}

func TestParseEverything(t *testing.T) {
	s, err := parse(t, `
name: support-bot
dataset:
  name: support
  file: data.jsonl
  version: 3
target:
  kind: http
  url: http://127.0.0.1:8080/answer
  headers: {Authorization: "Bearer ${TOKEN}"}
  output: answer
  rate_limit: 20/s
scorers:
  - exact_match
  - kind: contains
    name: mentions-refund
    values: [refund]
    threshold: 1.0
  - kind: expr
    name: short-enough
    expression: "len(output) < 200"
execution:
  concurrency: 7
  item_timeout: 0
  attempt_timeout: 2s
  repeat: 2
  adaptive: false
  max_retries: 3
  retry_delay: 250ms
  retain_results: false
  strict: true
fail_on:
  - "pass_rate(exact_match) < 0.9"
  - "failed > 0"
`, "TOKEN=s3cret")
	if err != nil {
		t.Fatal(err)
	}
	want := suite.Execution{Concurrency: 7, AttemptTimeout: 2 * time.Second, Repeat: 2, MaxRetries: 3,
		RetryDelay: 250 * time.Millisecond, Strict: true}
	if s.Execution != want {
		t.Errorf("Execution = %+v, want %+v", s.Execution, want)
	}
	if s.Name != "support-bot" || s.Dataset.Name != "support" || s.Dataset.Version != 3 {
		t.Errorf("Name %q Dataset %+v", s.Name, s.Dataset)
	}
	if s.RateLimit == nil || s.RateLimit.String() != "20/s" {
		t.Errorf("RateLimit = %v, want 20/s", s.RateLimit)
	}
	if s.TargetInfo.Name != "http://127.0.0.1:8080/answer" {
		t.Errorf("TargetInfo.Name = %q", s.TargetInfo.Name)
	}
	if got := strings.Join(s.ScorerNames(), ","); got != "exact_match,mentions-refund,short-enough" {
		t.Errorf("ScorerNames = %s", got)
	}
	if len(s.FailOn) != 2 || s.FailOn[0].Scorer != "exact_match" {
		t.Errorf("FailOn = %+v", s.FailOn)
	}
	if s.Target() == nil || s.Target() != s.Target() {
		t.Errorf("Target() is nil or not the same limited target twice")
	}
}

// Every problem is reported at once, each with its line, column, key path,
// what is wrong and what to do.
func TestParseProblems(t *testing.T) {
	src := `name: bad
datset: {name: x}
target:
  kind: htp
scorers:
  - exact_match
  - kind: regex
    pattern: "(unclosed"
  - kind: fooo
  - kind: contains
    valuez: [a]
  - exact_match
  - kind: exact_match
    threshold: 2
  - kind: regex
    expression: "true"
execution:
  concurrency: 0
  item_timeout: 10 seconds
  strict: maybe
  retry_delay: -1s
  max_retries: two
fail_on:
  - "pass_rate(exact_match < 0.9"
`
	_, err := parse(t, src)
	got := problems(t, err)
	want := []string{
		`suite.yaml:1:1: dataset: missing (add dataset: {name: NAME, file: FILE})`,
		`suite.yaml:2:1: datset: unknown key (did you mean "dataset"? known keys: name, dataset, target, scorers, execution, fail_on, variants)`,
		`suite.yaml:4:9: target.kind: unknown target kind "htp" (did you mean "http"? known kinds: echo, exec, http, openai, scorer, workflow)`,
		"suite.yaml:8:14: scorers[1].pattern: invalid regular expression: error parsing regexp: missing closing ): `(unclosed` (use Go RE2 syntax, see https://github.com/google/re2/wiki/Syntax)",
		`suite.yaml:9:11: scorers[2].kind: unknown scorer kind "fooo" (known kinds: contains, embedding_similarity, exact_match, exec, expr, http, json_equal, json_schema, json_valid, levenshtein, llm_judge, numeric, regex, tool_called, trajectory)`,
		`suite.yaml:11:5: scorers[3].valuez: unknown key (did you mean "values"? known keys: kind, name, threshold, values, mode, case_sensitive)`,
		`suite.yaml:12:5: scorers[4].name: duplicate scorer name "exact_match", already used by scorers[0] (give each scorer a unique name with name: NAME)`,
		`suite.yaml:14:16: scorers[5].threshold: 2 is outside [0,1] (use a number between 0 and 1)`,
		`suite.yaml:16:17: scorers[6].expression: not an option of regex (its options: pattern)`,
		`suite.yaml:18:16: execution.concurrency: must be at least 1, got 0`,
		`suite.yaml:19:17: execution.item_timeout: invalid duration "10 seconds" (use a number with a unit: 500ms, 30s, 2m, 1h)`,
		`suite.yaml:20:11: execution.strict: must be a boolean, got "maybe" (use true or false)`,
		`suite.yaml:21:16: execution.retry_delay: must not be negative, got -1s (use 0 for none)`,
		`suite.yaml:22:16: execution.max_retries: must be a whole number, got "two"`,
		`suite.yaml:24:15: fail_on[0]: missing ")" after the scorer name (e.g. "pass_rate(exact_match) < 0.9" or "failed > 0"; see docs/report-schema.md)`,
	}
	compareLines(t, got, want)
}

func TestParseFailOnUnknownScorer(t *testing.T) {
	_, err := parse(t, minimal+"fail_on: [\"mean(judge) < 0.7\", \"failed > 0\"]\n")
	compareLines(t, problems(t, err), []string{
		`suite.yaml:5:17: fail_on[0]: unknown scorer "judge" (scorers: exact_match) (e.g. "pass_rate(exact_match) < 0.9" or "failed > 0"; see docs/report-schema.md)`,
	})
}

func TestParseStructure(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"empty", "", []string{`suite.yaml:1:1: the suite file is empty (see docs/suite.md for an example)`}},
		{"not a mapping", "- a\n", []string{`suite.yaml:1:1: a suite file is a mapping with dataset, target and scorers (see docs/suite.md for an example)`}},
		{"syntax", "dataset: [\n", []string{`suite.yaml:1:1: invalid YAML: did not find expected node content (fix the YAML syntax)`}},
		{"missing sections", "name: x\n", []string{
			`suite.yaml:1:1: dataset: missing (add dataset: {name: NAME, file: FILE})`,
			`suite.yaml:1:1: target: missing (add target: {kind: ...}; kinds: echo, exec, http, openai, scorer, workflow)`,
			`suite.yaml:1:1: scorers: missing (add scorers: [exact_match] or see docs/suite.md)`,
		}},
		{"dataset file missing", "dataset: {file: nope.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n", []string{
			`suite.yaml:1:17: dataset.file: cannot read "nope.jsonl": no such file or directory (the path is relative to the suite file's directory)`,
		}},
		{"target problems", "dataset: {name: d}\ntarget: {kind: http, url: ftp://x, rate_limit: 5/h0ur, retries: 3}\nscorers: [exact_match]\n", []string{
			`suite.yaml:2:48: target.rate_limit: rate "5/h0ur": unit "h0ur" is not s or m (e.g. 20/s or 600/m)`,
			`suite.yaml:2:56: target.retries: unknown key (known keys: kind, name, rate_limit, url, method, headers, body, output, trajectory, max_response_bytes)`,
		}},
		{"http config", "dataset: {name: d}\ntarget: {kind: http, url: ftp://x}\nscorers: [exact_match]\n", []string{
			`suite.yaml:2:27: target.url: "ftp://x": scheme must be http or https (e.g. http://127.0.0.1:8080/answer)`,
		}},
		{"exec command", "dataset: {name: d}\ntarget: {kind: exec, command: [./no-such-program]}\nscorers: [exact_match]\n", nil},
		{"scorers empty", "dataset: {name: d}\ntarget: {kind: echo}\nscorers: []\n", []string{
			`suite.yaml:3:10: scorers: empty (add at least one scorer, e.g. exact_match)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.src)
			got := problems(t, err)
			if tc.want == nil { // only the position and key are fixed
				if len(got) != 1 || !strings.HasPrefix(got[0], "suite.yaml:2:31: target.command: ") {
					t.Errorf("got %q", got)
				}
				return
			}
			compareLines(t, got, tc.want)
		})
	}
}

func compareLines(t *testing.T, got, want []string) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
}

// The shipped examples parse (the OpenAI one with a placeholder key; nothing
// is called).
func TestExamplesParse(t *testing.T) {
	for _, path := range []string{"../examples/quickstart/suite.yaml", "../examples/failing-gate/suite.yaml", "../examples/openai/suite.yaml", "../examples/agent/suite.yaml"} {
		s, err := suite.Load(path, suite.Options{Env: suite.EnvList([]string{"OPENAI_API_KEY=placeholder", "AGENT_BASE_URL=http://127.0.0.1:1/v1"})})
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if len(s.Scorers()) < 2 || s.Target() == nil {
			t.Errorf("%s: %d scorers", path, len(s.Scorers()))
		}
		s.Close()
	}
}

// A misspelt key of the openai target's price would otherwise be a price
// of 0 and every cost $0: it is refused like the judge's.
func TestParseTargetPriceUnknownKey(t *testing.T) {
	_, err := parse(t, "dataset: {file: data.jsonl}\n"+
		"target: {kind: openai, model: m, price: {input: 0.15, output_per_mtok: 0.6}}\n"+
		"scorers: [exact_match]\n", "OPENAI_API_KEY=k")
	compareLines(t, problems(t, err), []string{
		`suite.yaml:2:42: target.price.input: unknown key (known keys: input_per_mtok, output_per_mtok)`,
	})
}

// A value with an explicit YAML tag is refused saying so: "5" tagged !!str
// is not "not a whole number" without a reason, and !!binary text is not
// taken as a name.
func TestParseTaggedScalars(t *testing.T) {
	_, err := parse(t, "name: !!binary aGVsbG8=\n"+
		"dataset: {file: data.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n"+
		"execution: {concurrency: !!str 5}\n")
	compareLines(t, problems(t, err), []string{
		`suite.yaml:1:7: name: must be a string, got "aGVsbG8=" tagged !!binary (remove the tag)`,
		`suite.yaml:5:26: execution.concurrency: must be a whole number, got "5" tagged !!str (remove the tag)`,
	})
}

// A YAML merge key is not taken for a misspelt key: the message says merge
// keys are not supported and what to write instead.
func TestParseMergeKey(t *testing.T) {
	_, err := parse(t, "dataset: {file: data.jsonl}\ntarget: {kind: echo}\n"+
		"scorers:\n  - &c {kind: contains, name: a}\n  - {<<: *c, name: b}\n")
	compareLines(t, problems(t, err), []string{
		`suite.yaml:5:6: scorers[1].<<: a YAML merge key (<<: *anchor) is not supported (write the keys out, or alias a whole value (key: *anchor))`,
	})
}

// Bytes the YAML reader refuses without a place (invalid UTF-8, a control
// character) are refused with their line and column.
func TestParseBadBytesPlaced(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"name: ok\nnote: \"a\xffb\"\n", `suite.yaml:2:9: invalid UTF-8: byte 0xff (save the file as UTF-8)`},
		{"name: a\x00b\n", `suite.yaml:1:8: a control character (byte 0x00) (YAML allows tab, line breaks and printable characters)`},
	} {
		_, err := parse(t, tc.src)
		compareLines(t, problems(t, err), []string{tc.want})
	}
}
