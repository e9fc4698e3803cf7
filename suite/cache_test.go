package suite_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/scorer"
	"github.com/evalrun/evalrun/suite"
)

// countingJudge answers every chat request with a passing verdict and
// counts the requests it got.
type countingJudge struct {
	mu     sync.Mutex
	calls  int
	failOn bool // when set, every call fails (errors are not cached)
}

func (j *countingJudge) Chat(context.Context, evalrun.ChatRequest) (evalrun.ChatResponse, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls++
	if j.failOn {
		return evalrun.ChatResponse{}, evalrun.Permanent(errTest)
	}
	return evalrun.ChatResponse{Content: `{"score": 1, "reason": "fine"}`}, nil
}

func (j *countingJudge) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.calls
}

var errTest = &testError{"judge down"}

type testError struct{ s string }

func (e *testError) Error() string { return e.s }

// judgeSuite parses a suite with one llm_judge scorer backed by judge and
// the response cache c; execution comes last in the file, after scorers.
func judgeSuite(t *testing.T, judge *countingJudge, c evalrun.ResponseCache, execution string) *suite.Suite {
	t.Helper()
	src := "dataset: {name: d}\ntarget: {kind: echo}\n" +
		"scorers: [{kind: llm_judge, rubric: be right, model: m1, base_url: 'http://judge.example/v1'}]\n" + execution
	var gotConfig []scorer.ModelConfig
	s, err := suite.Parse([]byte(src), "suite.yaml", t.TempDir(), suite.Options{Cache: c, Deps: scorer.Deps{
		ChatModel: func(mc scorer.ModelConfig) (evalrun.ChatModel, error) {
			gotConfig = append(gotConfig, mc)
			return judge, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if len(gotConfig) != 1 || gotConfig[0].Model != "m1" {
		t.Fatalf("judge factory called with %+v, want one call for model m1", gotConfig)
	}
	return s
}

func scoreTwice(t *testing.T, s *suite.Suite) []error {
	t.Helper()
	item := &evalrun.Item{ID: "a", Input: json.RawMessage(`"q"`), Expected: json.RawMessage(`"r"`)}
	var errs []error
	for range 2 {
		_, err := s.Scorers()[0].Score(context.Background(), evalrun.ScoreInput{Item: item, Output: json.RawMessage(`"r"`)})
		errs = append(errs, err)
	}
	return errs
}

func TestJudgeCache(t *testing.T) {
	for _, tc := range []struct {
		name      string
		execution string
		cache     *bool // override applied after parsing
		wantCalls int
	}{
		{"cache on, set after scorers in the file", "execution: {cache: true}\n", nil, 1},
		{"cache off", "execution: {cache: false}\n", nil, 2},
		{"off in the file, --cache", "", ptr(true), 1},
		{"on in the file, --no-cache", "execution: {cache: true}\n", ptr(false), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			judge := &countingJudge{}
			s := judgeSuite(t, judge, inmem.New(), tc.execution)
			if tc.cache != nil {
				if err := s.Apply(suite.Overrides{Cache: tc.cache}); err != nil {
					t.Fatal(err)
				}
			}
			for _, err := range scoreTwice(t, s) {
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := judge.count(); got != tc.wantCalls {
				t.Errorf("judge called %d times for the same request twice, want %d", got, tc.wantCalls)
			}
		})
	}
}

func TestJudgeCacheSkipsErrors(t *testing.T) {
	judge := &countingJudge{failOn: true}
	s := judgeSuite(t, judge, inmem.New(), "execution: {cache: true}\n")
	for _, err := range scoreTwice(t, s) {
		if err == nil {
			t.Fatal("a failing judge scored without error")
		}
	}
	if got := judge.count(); got != 2 {
		t.Errorf("judge called %d times, want 2: a failed reply must not be cached", got)
	}
}

// keyCache records the keys and ttls it is asked to store.
type keyCache struct {
	*inmem.Store
	mu   sync.Mutex
	ttls []time.Duration
}

func (c *keyCache) PutCached(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	c.mu.Lock()
	c.ttls = append(c.ttls, ttl)
	c.mu.Unlock()
	return c.Store.PutCached(ctx, key, v, ttl)
}

func TestJudgeCacheTTL(t *testing.T) {
	c := &keyCache{Store: inmem.New()}
	s := judgeSuite(t, &countingJudge{}, c, "execution: {cache: true, cache_ttl: 1h}\n")
	if s.Execution.CacheTTL != time.Hour || s.Execution.EngineOptions().CacheTTL != time.Hour {
		t.Fatalf("cache_ttl 1h parsed as %s (engine %s)", s.Execution.CacheTTL, s.Execution.EngineOptions().CacheTTL)
	}
	ttl := 2 * time.Minute
	if err := s.Apply(suite.Overrides{CacheTTL: &ttl}); err != nil {
		t.Fatal(err)
	}
	scoreTwice(t, s)
	if len(c.ttls) != 1 || c.ttls[0] != ttl {
		t.Errorf("stored with ttls %v, want one store with the --cache-ttl 2m0s", c.ttls)
	}
}

func TestExecutionOverrides(t *testing.T) {
	s, err := parse(t, "dataset: {name: d}\ntarget: {kind: echo}\nscorers: [exact_match]\n")
	if err != nil {
		t.Fatal(err)
	}
	at, ttl := 3*time.Second, 24*time.Hour
	if err := s.Apply(suite.Overrides{AttemptTimeout: &at, CacheTTL: &ttl, Cache: ptr(true), Adaptive: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	e := s.Execution
	if e.AttemptTimeout != at || e.CacheTTL != ttl || !e.Cache || e.Adaptive {
		t.Errorf("execution after overrides: %+v", e)
	}
	o := e.EngineOptions()
	if o.AttemptTimeout != at || o.CacheTTL != ttl || !o.FixedConcurrency {
		t.Errorf("engine options after overrides: %+v", o)
	}
	raw, err := s.RunConfig()
	if err != nil {
		t.Fatal(err)
	}
	r, err := suite.FromRunConfig(raw, suite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Execution != e {
		t.Errorf("stored config rebuilds execution %+v, want %+v", r.Execution, e)
	}

	neg := -time.Second
	for _, tc := range []struct {
		o    suite.Overrides
		want string
	}{
		{suite.Overrides{AttemptTimeout: &neg}, "--attempt-timeout -1s: must not be negative (0 means none)"},
		{suite.Overrides{CacheTTL: &neg}, "--cache-ttl -1s: must not be negative (0 means cached responses never expire)"},
	} {
		err := s.Apply(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errorsIsInvalid(err) {
			t.Errorf("Apply(%+v) = %v, want an ErrInvalid naming %q", tc.o, err, tc.want)
		}
	}
}

func TestCacheTTLInvalid(t *testing.T) {
	_, err := parse(t, "dataset: {name: d}\ntarget: {kind: echo}\nscorers: [exact_match]\nexecution: {cache_ttl: forever}\n")
	compareLines(t, problems(t, err), []string{
		`suite.yaml:4:24: execution.cache_ttl: invalid duration "forever" (use a number with a unit: 500ms, 30s, 2m, 1h)`,
	})
}

func TestChatPlan(t *testing.T) {
	src := `dataset: {name: d}
target:
  kind: openai
  model: gpt-4o-mini
  base_url: http://127.0.0.1:9/v1
  system: "Be brief."
  prompt: "Q: {{ .Input }}"
  max_tokens: 50
  price: {input_per_mtok: 1, output_per_mtok: 2}
scorers: [exact_match, {kind: llm_judge, rubric: r, model: j, base_url: "http://127.0.0.1:9/v1"}]
`
	s, err := parse(t, src, "OPENAI_API_KEY=x")
	if err != nil {
		t.Fatal(err)
	}
	c := s.ChatPlan()
	if c == nil || c.Model != "gpt-4o-mini" || c.MaxTokens != 50 || c.Price == nil || c.Price.OutputPerMTok != 2 {
		t.Fatalf("ChatPlan = %+v", c)
	}
	got, err := c.Prompt(&evalrun.Item{ID: "a", Input: json.RawMessage(`"what?"`)})
	if err != nil || got != "Be brief.\nQ: what?" {
		t.Errorf("Prompt = %q, %v", got, err)
	}
	if k := s.ScorerKinds(); len(k) != 2 || k[0] != "exact_match" || k[1] != "llm_judge" {
		t.Errorf("ScorerKinds = %v", k)
	}
	echo, err := parse(t, "dataset: {name: d}\ntarget: {kind: echo}\nscorers: [exact_match]\n")
	if err != nil {
		t.Fatal(err)
	}
	if echo.ChatPlan() != nil {
		t.Error("an echo target has a chat plan")
	}
}

func ptr[T any](v T) *T { return &v }

func errorsIsInvalid(err error) bool { return errors.Is(err, evalrun.ErrInvalid) }
