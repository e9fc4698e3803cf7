package suite_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/suite"
)

func TestExpand(t *testing.T) {
	env := suite.EnvList([]string{"A=1", "EMPTY=", "B=x=y"})
	for _, tc := range []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"${A}", "1", ""},
		{"pre-${A}-${B}-post", "pre-1-x=y-post", ""},
		{"${MISSING:-dflt}", "dflt", ""},
		{"${EMPTY:-dflt}", "dflt", ""},
		{"${A:-dflt}", "1", ""},
		{"${EMPTY}", "", ""},
		{"cost $5 and $$ and $", "cost $5 and $ and $", ""},
		{"$${A}", "${A}", ""},
		{"${MISSING}", "", "environment variable MISSING is not set"},
		{"${A", "", `unterminated ${ in "${A"`},
		{"${1A}", "", "invalid variable reference ${1A}"},
	} {
		got, err := suite.Expand(tc.in, env)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Expand(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestEnvInSuite(t *testing.T) {
	src := `dataset: {name: d}
target:
  kind: http
  url: http://127.0.0.1:${PORT:-9}/x
  headers: {X-Key: "${KEY}"}
scorers: [exact_match]
execution:
  concurrency: ${CONC}
`
	s, err := parse(t, src, "KEY=k", "CONC=12")
	if err != nil {
		t.Fatal(err)
	}
	if s.Execution.Concurrency != 12 {
		t.Errorf("concurrency from ${CONC} = %d, want 12 (a plain scalar is re-typed)", s.Execution.Concurrency)
	}
	_, err = parse(t, src, "CONC=12")
	compareLines(t, problems(t, err), []string{
		`suite.yaml:5:20: target.headers.X-Key: environment variable KEY is not set (set KEY, or give a default: ${KEY:-value})`,
	})
}

// The stored config keeps ${VAR} references unexpanded, applies overrides,
// redacts literal secrets, and rebuilds the same suite with the
// environment of whoever reads it.
func TestRunConfigHasNoSecret(t *testing.T) {
	const secret = "s3cret-value-123"
	src := `name: rc
dataset: {name: d, version: 2}
target:
  kind: http
  url: http://127.0.0.1:8080/answer?key=${API_KEY}
  headers:
    Authorization: "Bearer ${API_KEY}"
    X-Api-Key: literal-secret
    X-Trace: keep-me
scorers:
  - exact_match
execution:
  concurrency: 3
`
	s, err := parse(t, src, "API_KEY="+secret)
	if err != nil {
		t.Fatal(err)
	}
	conc, delay, rate := 9, 5*time.Second, "2/s"
	if err := s.Apply(suite.Overrides{Concurrency: &conc, RetryDelay: &delay, Rate: &rate}); err != nil {
		t.Fatal(err)
	}
	s.Selection = suite.Selection{Tags: []string{"billing"}, Limit: 5}
	raw, err := s.RunConfig()
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if strings.Contains(text, secret) || strings.Contains(text, "literal-secret") {
		t.Fatalf("stored config holds a secret: %s", text)
	}
	for _, want := range []string{`Bearer ${API_KEY}`, `key=${API_KEY}`, `"X-Api-Key":"[redacted]"`, `"X-Trace":"keep-me"`,
		`"concurrency":9`, `"retry_delay":"5s"`, `"rate_limit":"2/s"`, `"tags":["billing"]`, `"limit":5`} {
		if !strings.Contains(text, want) {
			t.Errorf("stored config lacks %s: %s", want, text)
		}
	}

	// A literal secret cannot be rebuilt: the error says where and what to do.
	_, err = suite.FromRunConfig(raw, suite.Options{Env: suite.EnvList([]string{"API_KEY=other"})})
	lines := problems(t, err)
	if len(lines) != 1 || !strings.Contains(lines[0], "target.headers.X-Api-Key: a literal secret here was not stored with the run (put the secret in an environment variable") {
		t.Errorf("FromRunConfig with a redacted value: %q", lines)
	}
}

func TestFromRunConfigRoundTrip(t *testing.T) {
	src := `name: rt
dataset: {name: d}
target:
  kind: http
  url: http://127.0.0.1:8080/answer
  headers: {Authorization: "Bearer ${API_KEY}"}
  rate_limit: 10/m
scorers:
  - exact_match
  - {kind: regex, name: digits, pattern: "[0-9]+", threshold: 0.7}
execution: {concurrency: 3, item_timeout: 5s, strict: true}
fail_on: ["failed > 0"]
`
	s, err := parse(t, src, "API_KEY=a")
	if err != nil {
		t.Fatal(err)
	}
	retain := false
	if err := s.Apply(suite.Overrides{RetainResults: &retain}); err != nil {
		t.Fatal(err)
	}
	s.Selection = suite.Selection{Limit: 3, Outputs: "/tmp/out.jsonl"}
	raw, err := s.RunConfig()
	if err != nil {
		t.Fatal(err)
	}
	// The worker's environment has its own key; without one it is an error.
	if _, err := suite.FromRunConfig(raw, suite.Options{}); err == nil || !strings.Contains(err.Error(), "environment variable API_KEY is not set") {
		t.Errorf("FromRunConfig without API_KEY: %v", err)
	}
	r, err := suite.FromRunConfig(raw, suite.Options{Env: suite.EnvList([]string{"API_KEY=b"})})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Name != s.Name || r.Dir != s.Dir || r.Dataset != s.Dataset || r.Execution != s.Execution ||
		r.TargetInfo != s.TargetInfo || *r.RateLimit != *s.RateLimit {
		t.Errorf("rebuilt suite differs:\n got %+v\nwant %+v", r, s)
	}
	if strings.Join(r.ScorerNames(), ",") != "exact_match,digits" || len(r.FailOn) != 1 {
		t.Errorf("rebuilt scorers %v, fail_on %v", r.ScorerNames(), r.FailOn)
	}
	if r.Selection.Limit != 3 || r.Selection.Outputs != "/tmp/out.jsonl" {
		t.Errorf("rebuilt selection %+v", r.Selection)
	}
	if _, err := suite.FromRunConfig(json.RawMessage(`{"evalrun_suite": 99}`), suite.Options{}); err == nil {
		t.Errorf("FromRunConfig accepted an unknown format")
	}
}

func TestApplyRejectsBadOverrides(t *testing.T) {
	s, err := parse(t, minimal)
	if err != nil {
		t.Fatal(err)
	}
	zero, neg, rate := 0, -time.Second, "fast"
	for _, tc := range []struct {
		o    suite.Overrides
		want string
	}{
		{suite.Overrides{Concurrency: &zero}, "invalid: --concurrency 0: must be at least 1"},
		{suite.Overrides{ItemTimeout: &neg}, "invalid: --item-timeout -1s: must not be negative (0 means none)"},
		{suite.Overrides{Rate: &rate}, `invalid: --rate: rate "fast": want N/s or N/m (e.g. 20/s or 600/m)`},
	} {
		if err := s.Apply(tc.o); err == nil || err.Error() != tc.want {
			t.Errorf("Apply: %v, want %q", err, tc.want)
		}
	}
}

func TestWorkflowAndScorerTargets(t *testing.T) {
	s, err := parse(t, `dataset: {name: d}
target:
  kind: workflow
  steps:
    - {name: check-input, guard: {scorer: {kind: regex, pattern: "\\?$"}}}
    - {name: answer, target: {kind: echo}}
scorers: [exact_match]
`)
	if err != nil {
		t.Fatal(err)
	}
	if s.TargetInfo.Kind != "workflow" || s.TargetInfo.Name != "2 steps" {
		t.Errorf("TargetInfo = %+v", s.TargetInfo)
	}
	_, err = parse(t, `dataset: {name: d}
target:
  kind: workflow
  steps:
    - {name: a, target: {kind: nope}}
    - {name: b, guard: {scorer: {kind: regex}, min: 2}}
scorers: [exact_match]
`)
	compareLines(t, problems(t, err), []string{
		`suite.yaml:5:32: target.steps[0].target.kind: unknown target kind "nope" (known kinds: echo, exec, http, openai, scorer, workflow)`,
		`suite.yaml:6:33: target.steps[1].guard.scorer.pattern: required (use Go RE2 syntax, see https://github.com/google/re2/wiki/Syntax)`,
		`suite.yaml:6:53: target.steps[1].guard.min: must be a number in [0,1], got "2"`,
	})
	s, err = parse(t, "dataset: {name: d}\ntarget: {kind: scorer, scorer: {kind: exact_match, name: judge-under-test}}\nscorers: [json_valid]\n")
	if err != nil {
		t.Fatal(err)
	}
	if s.TargetInfo != (evalrun.TargetInfo{Kind: "scorer", Name: "judge-under-test"}) {
		t.Errorf("TargetInfo = %+v", s.TargetInfo)
	}
}
