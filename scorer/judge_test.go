package scorer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/retry"
	"github.com/evalrun/evalrun/scorer"
)

// fakeChat is a ChatModel that records requests and plays replies in
// order, repeating the last one.
type fakeChat struct {
	mu       sync.Mutex
	requests []evalrun.ChatRequest
	replies  []reply
}

type reply struct {
	content string
	usage   evalrun.Usage
	err     error
}

func (f *fakeChat) Chat(_ context.Context, req evalrun.ChatRequest) (evalrun.ChatResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.requests)
	f.requests = append(f.requests, req)
	if len(f.replies) == 0 {
		return evalrun.ChatResponse{Content: `{"score": 1, "reason": "fine"}`}, nil
	}
	r := f.replies[min(n, len(f.replies)-1)]
	if r.err != nil {
		return evalrun.ChatResponse{}, r.err
	}
	return evalrun.ChatResponse{Content: r.content, Usage: r.usage}, nil
}

func (f *fakeChat) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func tokens(in, out int64) evalrun.Usage { return evalrun.Usage{InputTokens: &in, OutputTokens: &out} }

func newJudge(t *testing.T, m evalrun.ChatModel, maxRetries int) *scorer.LLMJudge {
	t.Helper()
	j, err := scorer.NewLLMJudge(scorer.LLMJudgeOptions{
		Rubric: "Is the answer correct and polite?",
		Model:  m,
		Retry:  retry.Policy{MaxRetries: maxRetries},
	})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestLLMJudgeRequest(t *testing.T) {
	t.Parallel()
	m := &fakeChat{replies: []reply{{content: `{"score": 0.8, "reason": "mostly right"}`, usage: tokens(120, 15)}}}
	j := newJudge(t, m, 0)
	got, err := j.Score(t.Context(), input("q1", `"Capital of France?"`, `"Paris, I think."`, `"Paris"`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Value != 0.8 || got.Reason != "mostly right" {
		t.Errorf("Score = %v, %q; want 0.8, mostly right", got.Value, got.Reason)
	}
	if got.Usage.InputTokens == nil || *got.Usage.InputTokens != 120 || *got.Usage.OutputTokens != 15 {
		t.Errorf("Usage = %+v, want 120 in, 15 out", got.Usage)
	}
	if m.calls() != 1 {
		t.Fatalf("%d calls, want 1", m.calls())
	}
	req := m.requests[0]
	if req.Temperature == nil || *req.Temperature != 0 {
		t.Errorf("Temperature = %v, want 0", req.Temperature)
	}
	if req.Seed == nil || *req.Seed != 42 {
		t.Errorf("Seed = %v, want 42", req.Seed)
	}
	if !req.JSONResponse {
		t.Error("JSONResponse is false")
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != scorer.JudgeSystemPrompt || req.Messages[1].Role != "user" {
		t.Fatalf("Messages = %+v, want the system prompt and one user message", req.Messages)
	}
	if !strings.Contains(req.Messages[0].Content, `"score"`) {
		t.Error("system prompt does not ask for a score")
	}
	user := req.Messages[1].Content
	for _, want := range []string{"Is the answer correct and polite?", "Capital of France?", "Paris, I think.", "<expected_output>\nParis\n"} {
		if !strings.Contains(user, want) {
			t.Errorf("user message lacks %q:\n%s", want, user)
		}
	}
	// Without an expected output, the section is left out.
	if req := j.Request(input("q2", `"hi"`, `"hello"`, "")); strings.Contains(req.Messages[1].Content, "expected_output") {
		t.Errorf("user message has an expected_output section for an item without one")
	}
}

func TestLLMJudgeMalformedVerdict(t *testing.T) {
	t.Parallel()
	for _, content := range []string{
		`not json`,
		``,
		`{"score": 0.5`,
		`{"reason": "no score"}`,
		`{"score": "0.5", "reason": "string"}`,
		`{"score": null}`,
		`{"score": "NaN"}`,
		`{"score": 1.5}`,
		`{"score": -0.1}`,
		`{"score": 1e400}`,
		`[0.5]`,
		`null`,
		`{"score": 0.5} trailing`,
		"```json\n{\"score\": 0.5}\n```",
	} {
		t.Run(content, func(t *testing.T) {
			t.Parallel()
			m := &fakeChat{replies: []reply{{content: content, usage: tokens(10, 3)}}}
			_, err := newJudge(t, m, 3).Score(t.Context(), input("q1", `"in"`, `"out"`, ""))
			if k := evalrun.KindOf(err); k != evalrun.ErrorInvalidOutput {
				t.Errorf("error %v of kind %q, want invalid_output", err, k)
			}
			if !errors.Is(err, scorer.ErrMalformedVerdict) {
				t.Errorf("error %v does not match ErrMalformedVerdict", err)
			}
			if u := evalrun.UsageOf(err); u.InputTokens == nil || *u.InputTokens != 10 {
				t.Errorf("error usage = %+v, want the reply's 10 input tokens", u)
			}
			if m.calls() != 1 {
				t.Errorf("%d calls, want exactly 1 (never retried)", m.calls())
			}
		})
	}
}

func TestLLMJudgeVerdictBounds(t *testing.T) {
	t.Parallel()
	for content, want := range map[string]float64{
		`{"score": 0}`:                     0,
		`{"score": 1, "reason": "great"}`:  1,
		` {"score": 5e-1, "reason": "ok"}`: 0.5,
	} {
		m := &fakeChat{replies: []reply{{content: content}}}
		got, err := newJudge(t, m, 0).Score(t.Context(), input("q1", `"in"`, `"out"`, ""))
		if err != nil || got.Value != want {
			t.Errorf("%s: Score = %v, %v; want %v", content, got.Value, err, want)
		}
	}
}

func TestLLMJudgeRetries(t *testing.T) {
	t.Parallel()
	transient := &evalrun.Error{Kind: evalrun.ErrorTransient, StatusCode: 429, Usage: tokens(5, 0), Err: errors.New("rate limited")}
	permanent := &evalrun.Error{Kind: evalrun.ErrorPermanent, StatusCode: 400, Err: errors.New("bad request")}
	ok := reply{content: `{"score": 0.9, "reason": "good"}`, usage: tokens(100, 10)}
	for _, tc := range []struct {
		name      string
		replies   []reply
		calls     int
		wantKind  evalrun.ErrorKind // "" for success
		wantInput int64             // input tokens over all attempts
	}{
		{"transient then success", []reply{{err: transient}, ok}, 2, "", 105},
		{"permanent", []reply{{err: permanent}, ok}, 1, evalrun.ErrorPermanent, 0},
		{"transient exhausted", []reply{{err: transient}}, 3, evalrun.ErrorTransient, 15},
		{"malformed after transient", []reply{{err: transient}, {content: `{}`, usage: tokens(100, 1)}, ok}, 2, evalrun.ErrorInvalidOutput, 105},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &fakeChat{replies: tc.replies}
			got, err := newJudge(t, m, 2).Score(t.Context(), input("q1", `"in"`, `"out"`, ""))
			if m.calls() != tc.calls {
				t.Errorf("%d calls, want %d", m.calls(), tc.calls)
			}
			usage := got.Usage
			if tc.wantKind == "" {
				if err != nil || got.Value != 0.9 {
					t.Fatalf("Score = %v, %v; want 0.9", got.Value, err)
				}
			} else {
				if k := evalrun.KindOf(err); k != tc.wantKind {
					t.Fatalf("error %v of kind %q, want %s", err, k, tc.wantKind)
				}
				usage = evalrun.UsageOf(err)
			}
			var in int64
			if usage.InputTokens != nil {
				in = *usage.InputTokens
			}
			if in != tc.wantInput {
				t.Errorf("input tokens = %d, want %d", in, tc.wantInput)
			}
		})
	}
}

func TestLLMJudgeRetryFromConfig(t *testing.T) {
	t.Parallel()
	transient := evalrun.Transient(errors.New("connection reset"))
	for _, tc := range []struct {
		name  string
		cfg   scorer.Config
		deps  retry.Policy
		calls int
	}{
		{"deps default", scorer.Config{}, retry.Policy{MaxRetries: 1}, 2},
		{"config overrides", scorer.Config{MaxRetries: new(3)}, retry.Policy{MaxRetries: 1}, 4},
		{"zero retries", scorer.Config{MaxRetries: new(0)}, retry.Policy{MaxRetries: 5}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &fakeChat{replies: []reply{{err: transient}}}
			cfg := tc.cfg
			cfg.Kind, cfg.Rubric = "llm_judge", "ok?"
			s := mustNew(t, cfg, scorer.Deps{
				ChatModel: func(scorer.ModelConfig) (evalrun.ChatModel, error) { return m, nil },
				Retry:     tc.deps,
			})
			if _, err := s.Score(t.Context(), input("q1", `"in"`, `"out"`, "")); !evalrun.IsTransient(err) {
				t.Errorf("error %v, want transient", err)
			}
			if m.calls() != tc.calls {
				t.Errorf("%d calls, want %d", m.calls(), tc.calls)
			}
		})
	}
}

func TestLLMJudgeCanceled(t *testing.T) {
	t.Parallel()
	m := &fakeChat{}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := newJudge(t, m, 2).Score(ctx, input("q1", `"in"`, `"out"`, ""))
	if !errors.Is(err, context.Canceled) || m.calls() != 0 {
		t.Errorf("canceled: error %v after %d calls; want context.Canceled and no call", err, m.calls())
	}
}

func TestLLMJudgeConcurrent(t *testing.T) {
	t.Parallel()
	m := &fakeChat{replies: []reply{{content: `{"score": 0.75, "reason": "ok"}`}}}
	j := newJudge(t, m, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			got, err := j.Score(t.Context(), input("q1", `"in"`, `"out"`, `"exp"`))
			if err == nil && got.Value != 0.75 {
				err = errors.New("wrong score")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if m.calls() != 32 {
		t.Errorf("%d calls, want 32", m.calls())
	}
}
