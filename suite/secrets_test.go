package suite_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// The suite's scrubber knows every value it read from the environment and
// every literal secret, and what the suite shows (target name, stored
// config, target errors) holds none of them.
func TestSuiteSecrets(t *testing.T) {
	const (
		envKey     = "env-key-9d8c7b6a"
		judgeKey   = "judge-key-1a2b3c4d"
		literalTok = "literal-tok-5e6f7a8b"
		password   = "pw-0f1e2d3c"
		queryTok   = "query-tok-4b5a6978"
	)
	refused := httptest.NewServer(http.NotFoundHandler())
	refused.Close()
	host := strings.TrimPrefix(refused.URL, "http://")
	s, err := parse(t, `dataset: {file: data.jsonl}
target:
  kind: http
  url: "http://alice:`+password+`@`+host+`/x?api_key=${KEY}&token=`+queryTok+`&q=1"
  headers: {Authorization: "Bearer `+literalTok+`"}
scorers:
  - exact_match
  - {kind: llm_judge, rubric: r, base_url: "http://127.0.0.1:1/v1", api_key_env: JUDGE_KEY, model: m}
`, "KEY="+envKey, "JUDGE_KEY="+judgeKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{envKey, judgeKey, literalTok, password, queryTok} {
		if got := s.Scrubber().String("a " + secret + " b"); got != "a [redacted] b" {
			t.Errorf("the scrubber does not know %s: %q", secret, got)
		}
	}
	if got, want := s.TargetInfo.Name, "http://alice:[redacted]@"+host+"/x?api_key=${KEY}&token=[redacted]&q=1"; got != want {
		t.Errorf("target name %q, want %q", got, want)
	}
	cfg, err := s.RunConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{envKey, literalTok, password, queryTok} {
		if strings.Contains(string(cfg), secret) {
			t.Errorf("the stored config holds %s: %s", secret, cfg)
		}
	}
	_, err = s.Target().Execute(context.Background(), &evalrun.Item{ID: "a", Input: []byte(`"x"`)})
	if err == nil || strings.Contains(err.Error(), envKey) || strings.Contains(err.Error(), queryTok) ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Errorf("target error %v", err)
	}
	if evalrun.KindOf(err) != evalrun.ErrorTransient {
		t.Errorf("the scrubbed error lost its kind: %s", evalrun.KindOf(err))
	}
}

// A validation error names the ${VAR} reference, never the value it
// expanded to, however short, nor the excerpt a yaml type error quotes.
func TestValidationHidesExpandedValues(t *testing.T) {
	for _, value := range []string{"abc", "a-much-longer-secret-value"} {
		_, err := parse(t, `dataset: {file: data.jsonl}
target:
  kind: http
  url: http://127.0.0.1:1/x
  max_response_bytes: ${KEY}
scorers: [exact_match]
execution:
  concurrency: ${KEY}
  item_timeout: ${KEY}
`, "KEY="+value)
		var se interface{ Error() string }
		if !errors.As(err, &se) {
			t.Fatalf("no error for %q", value)
		}
		msg := err.Error()
		if strings.Contains(msg, value[:3]) || strings.Count(msg, `"${KEY}" (its value is not shown)`) != 3 {
			t.Errorf("value %q:\n%s", value, msg)
		}
	}
}

// A scorer key holding a ${VAR} of the wrong type is reported like any
// other key: by its reference, without the excerpt of the value a yaml type
// error quotes (which the scrubber, knowing only whole values, missed).
func TestScorerValidationHidesExpandedValues(t *testing.T) {
	const value = "Zq9SECRETvalue77"
	_, err := parse(t, `dataset: {file: data.jsonl}
target: {kind: echo}
scorers:
  - kind: levenshtein
    threshold: ${KEY}
  - kind: contains
    name: c
    case_sensitive: ${KEY}
  - kind: llm_judge
    model: m
    rubric: r
    price: {input_per_mtok: "${KEY}"}
`, "KEY="+value)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if strings.Contains(msg, value[:3]) || strings.Count(msg, `"${KEY}" (its value is not shown)`) != 3 {
		t.Errorf("value %q:\n%s", value, msg)
	}
}

// A judge's or embedder's bad connection setting is reported at its own
// key, not at model (where the model factory's errors used to land).
func TestModelScorerConfigErrorNamesItsKey(t *testing.T) {
	_, err := parse(t, `dataset: {file: data.jsonl}
target:
  kind: scorer
  scorer: {kind: llm_judge, model: m, rubric: r, base_url: "ftp://x"}
scorers:
  - kind: embedding_similarity
    model: e
    base_url: "http://127.0.0.1:1/v1?a=%zz"
`, "OPENAI_API_KEY=k")
	got := problems(t, err)
	want := []string{
		`suite.yaml:4:60: target.scorer.base_url: "ftp://x" is not an http(s) URL`,
		`suite.yaml:8:15: scorers[0].base_url: its query is not valid: invalid URL escape "%zz" (percent-encode its values)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
