package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/target"
)

var testItem = &evalrun.Item{
	ID:       "q1",
	Input:    json.RawMessage(`"What is 2+2?"`),
	Expected: json.RawMessage(`"4"`),
	Metadata: map[string]any{"lang": "en"},
}

func newChatTarget(t *testing.T, cfg ChatTargetConfig) *ChatTarget {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "test-model"
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = env("OPENAI_API_KEY", "sk-test")
	}
	ct, err := NewChatTarget(cfg)
	if err != nil {
		t.Fatalf("NewChatTarget: %v", err)
	}
	t.Cleanup(func() { _ = ct.Close() })
	return ct
}

func TestChatTargetRequestUsageAndCost(t *testing.T) {
	api := newFakeAPI(t, reply(200, completion("4")))
	temp, seed := 0.2, int64(7)
	ct := newChatTarget(t, ChatTargetConfig{
		ClientConfig: ClientConfig{BaseURL: api.URL + "/v1"},
		Model:        "gpt-test",
		System:       "You answer in {{ .Metadata.lang }}.",
		Prompt:       "Q{{ .ID }}: {{ .Input }} (expected {{ .Expected }})",
		Temperature:  &temp,
		Seed:         &seed,
		MaxTokens:    64,
		Params:       map[string]any{"top_p": 0.5},
		Price:        &Price{InputPerMTok: 1.5, OutputPerMTok: 6},
	})
	out, err := ct.Execute(context.Background(), testItem)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Value) != `"4"` {
		t.Errorf("output = %s, want \"4\"", out.Value)
	}
	if api.Path(0) != "/v1/chat/completions" {
		t.Errorf("path = %q", api.Path(0))
	}
	if got := api.Header(0).Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	body := api.Body(0)
	wantMsgs := []any{
		map[string]any{"role": "system", "content": "You answer in en."},
		map[string]any{"role": "user", "content": "Qq1: What is 2+2? (expected 4)"},
	}
	msgs, _ := json.Marshal(body["messages"])
	want, _ := json.Marshal(wantMsgs)
	if string(msgs) != string(want) {
		t.Errorf("messages = %s, want %s", msgs, want)
	}
	if body["model"] != "gpt-test" || body["temperature"] != 0.2 || body["seed"] != 7.0 || body["max_tokens"] != 64.0 || body["top_p"] != 0.5 {
		t.Errorf("body = %v", body)
	}
	if out.Usage.InputTokens == nil || *out.Usage.InputTokens != 10 || out.Usage.OutputTokens == nil || *out.Usage.OutputTokens != 5 {
		t.Fatalf("usage = %+v, want 10 in, 5 out", out.Usage)
	}
	if wantCost := (10*1.5 + 5*6) / 1e6; out.Usage.CostUSD == nil || math.Abs(*out.Usage.CostUSD-wantCost) > 1e-15 {
		t.Errorf("cost = %v, want %v", out.Usage.CostUSD, wantCost)
	}
}

func TestChatTargetDefaultsAndJSONInput(t *testing.T) {
	api := newFakeAPI(t, reply(200, completion("ok")))
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL}})
	item := &evalrun.Item{ID: "x", Input: json.RawMessage(`{"q": [1, 2]}`)}
	out, err := ct.Execute(context.Background(), item)
	if err != nil {
		t.Fatal(err)
	}
	if out.Usage.CostUSD != nil {
		t.Errorf("cost reported without a price")
	}
	body := api.Body(0)
	msgs := body["messages"].([]any)
	if len(msgs) != 1 || msgs[0].(map[string]any)["content"] != `{"q":[1,2]}` {
		t.Errorf("messages = %v, want one user message with the compact JSON input", msgs)
	}
	for _, k := range []string{"temperature", "seed", "max_tokens", "response_format"} {
		if _, ok := body[k]; ok {
			t.Errorf("%s sent though not configured", k)
		}
	}
}

func TestChatTargetIgnoresSDKEnvironment(t *testing.T) {
	api := newFakeAPI(t, reply(200, completion("ok")))
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/nowhere")
	t.Setenv("OPENAI_ORG_ID", "org-leak")
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL, LookupEnv: env()}})
	if _, err := ct.Execute(context.Background(), testItem); err != nil {
		t.Fatalf("Execute: %v (OPENAI_BASE_URL must not redirect requests)", err)
	}
	h := api.Header(0)
	if h.Get("Authorization") != "" || h.Get("OpenAI-Organization") != "" {
		t.Errorf("Authorization %q, OpenAI-Organization %q; want none (no key configured)", h.Get("Authorization"), h.Get("OpenAI-Organization"))
	}
}

func TestChatTarget429RetryAfterSeconds(t *testing.T) {
	api := newFakeAPI(t, reply(429, `{"error":{"message":"rate limited","type":"requests"}}`, "Retry-After", "7"), reply(200, completion("4")))
	clock := newFakeClock()
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL, Clock: clock}})
	n, err, errs := attemptsOf(t, clock, 3, 0, func(ctx context.Context) error {
		_, err := ct.Execute(ctx, testItem)
		return err
	})
	if err != nil || n != 2 || api.Requests() != 2 {
		t.Fatalf("attempts = %d, requests = %d, err = %v; want 2, 2, nil (SDK retries off)", n, api.Requests(), err)
	}
	e := wantKind(t, errs[0], evalrun.ErrorTransient)
	if e.StatusCode != 429 || e.RetryAfter != 7*time.Second {
		t.Errorf("status %d RetryAfter %v; want 429, 7s", e.StatusCode, e.RetryAfter)
	}
	if w := clock.Waits(); len(w) != 1 || w[0] != 7*time.Second {
		t.Errorf("waits = %v, want [7s]", w)
	}
}

func TestChatTarget429RetryAfterDate(t *testing.T) {
	date := fixedNow.Add(30 * time.Second).Format(http.TimeFormat)
	api := newFakeAPI(t, reply(429, `{"error":{"message":"slow"}}`, "Retry-After", date))
	clock := newFakeClock()
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL, Clock: clock}})
	n, err, _ := attemptsOf(t, clock, 1, 0, func(ctx context.Context) error {
		_, err := ct.Execute(ctx, testItem)
		return err
	})
	if n != 2 || api.Requests() != 2 {
		t.Fatalf("attempts = %d, requests = %d; want 2, 2", n, api.Requests())
	}
	e := wantKind(t, err, evalrun.ErrorTransient)
	if e.StatusCode != 429 || e.RetryAfter != 30*time.Second {
		t.Errorf("status %d RetryAfter %v; want 429, 30s", e.StatusCode, e.RetryAfter)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Errorf("error %v does not wrap the API's error (*APIError)", err)
	}
}

func TestChatTarget500ThenSuccess(t *testing.T) {
	api := newFakeAPI(t, reply(500, `{"error":{"message":"internal"}}`), reply(200, completion("4")))
	clock := newFakeClock()
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL}})
	var out evalrun.Output
	n, err, errs := attemptsOf(t, clock, 3, 0, func(ctx context.Context) error {
		var err error
		out, err = ct.Execute(ctx, testItem)
		return err
	})
	if err != nil || n != 2 || api.Requests() != 2 {
		t.Fatalf("attempts = %d, requests = %d, err = %v; want 2, 2, nil", n, api.Requests(), err)
	}
	if e := wantKind(t, errs[0], evalrun.ErrorTransient); e.StatusCode != 500 {
		t.Errorf("status = %d", e.StatusCode)
	}
	if string(out.Value) != `"4"` {
		t.Errorf("output = %s", out.Value)
	}
}

func TestChatTargetNonJSONErrorBody(t *testing.T) {
	api := newFakeAPI(t, reply(502, `<html>bad gateway</html>`, "Content-Type", "text/html", "Retry-After", "3"))
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL, Clock: newFakeClock()}})
	_, err := ct.Execute(context.Background(), testItem)
	e := wantKind(t, err, evalrun.ErrorTransient)
	if e.StatusCode != 502 || e.RetryAfter != 3*time.Second {
		t.Errorf("status %d RetryAfter %v; want 502, 3s", e.StatusCode, e.RetryAfter)
	}
}

func TestChatTargetHangPastAttemptTimeout(t *testing.T) {
	api := newFakeAPI(t, hang, reply(200, completion("4")))
	clock := newFakeClock()
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL}})
	n, err, errs := attemptsOf(t, clock, 2, 100*time.Millisecond, func(ctx context.Context) error {
		_, err := ct.Execute(ctx, testItem)
		return err
	})
	if err != nil || n != 2 {
		t.Fatalf("attempts = %d, err = %v; want 2, nil", n, err)
	}
	wantKind(t, errs[0], evalrun.ErrorTransient)
	if !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Errorf("first error %v does not wrap context.DeadlineExceeded", errs[0])
	}
}

func TestChatTargetConnectionReset(t *testing.T) {
	api := newFakeAPI(t, reset(t), reply(200, completion("4")))
	clock := newFakeClock()
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL}})
	n, err, errs := attemptsOf(t, clock, 3, 0, func(ctx context.Context) error {
		_, err := ct.Execute(ctx, testItem)
		return err
	})
	if err != nil || n != 2 || api.Requests() != 2 {
		t.Fatalf("attempts = %d, requests = %d, err = %v; want 2, 2, nil", n, api.Requests(), err)
	}
	wantKind(t, errs[0], evalrun.ErrorTransient)
}

// permanentOnce asserts a permanent error is never retried.
func permanentOnce(t *testing.T, api *fakeAPI, ct *ChatTarget) error {
	t.Helper()
	n, err, _ := attemptsOf(t, newFakeClock(), 3, 0, func(ctx context.Context) error {
		_, err := ct.Execute(ctx, testItem)
		return err
	})
	if n != 1 || api.Requests() != 1 {
		t.Fatalf("attempts = %d, requests = %d; want 1, 1 (never retried)", n, api.Requests())
	}
	wantKind(t, err, evalrun.ErrorPermanent)
	return err
}

func TestChatTargetMalformed200(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"invalid JSON", `{"choices": [`},
		{"no choices", `{"id":"c1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}}`},
		{"null content", `{"id":"c1","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, reply(200, tc.body))
			ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL}})
			err := permanentOnce(t, api, ct)
			if !errors.Is(err, target.ErrMalformedResponse) {
				t.Errorf("error %v does not wrap ErrMalformedResponse", err)
			}
		})
	}
	// A malformed reply's usage is still reported.
	api := newFakeAPI(t, reply(200, `{"id":"c1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}}`))
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL}})
	_, err := ct.Execute(context.Background(), testItem)
	if u := evalrun.UsageOf(err); u.InputTokens == nil || *u.InputTokens != 3 {
		t.Errorf("usage of a malformed reply = %+v, want 3 input tokens", u)
	}
}

func TestChatTarget4xxIsPermanent(t *testing.T) {
	api := newFakeAPI(t, reply(400, `{"error":{"message":"bad model","type":"invalid_request_error"}}`))
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL}})
	err := permanentOnce(t, api, ct)
	if e := wantKind(t, err, evalrun.ErrorPermanent); e.StatusCode != 400 {
		t.Errorf("status = %d", e.StatusCode)
	}
}

func TestChatTargetOversizedBody(t *testing.T) {
	api := newFakeAPI(t, reply(200, completion(strings.Repeat("x", 4000))))
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL, MaxResponseBytes: 1024}})
	err := permanentOnce(t, api, ct)
	if !errors.Is(err, target.ErrResponseTooLarge) {
		t.Errorf("error %v does not wrap ErrResponseTooLarge", err)
	}
}

func TestChatTargetInvalidUTF8IsReported(t *testing.T) {
	body := strings.Replace(completion("caf_"), "caf_", "caf\xe9", 1)
	api := newFakeAPI(t, reply(200, body))
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL}})
	err := permanentOnce(t, api, ct)
	if !errors.Is(err, target.ErrInvalidUTF8) {
		t.Errorf("error %v does not wrap ErrInvalidUTF8", err)
	}
}

func TestChatTargetConfig(t *testing.T) {
	hot, neg := 2.5, -1
	for _, tc := range []struct {
		name string
		cfg  ChatTargetConfig
		key  string
	}{
		{"no model", ChatTargetConfig{}, "model"},
		{"bad base url", ChatTargetConfig{Model: "m", ClientConfig: ClientConfig{BaseURL: "localhost:11434"}}, "base_url"},
		{"temperature", ChatTargetConfig{Model: "m", Temperature: &hot}, "temperature"},
		{"max tokens", ChatTargetConfig{Model: "m", MaxTokens: neg}, "max_tokens"},
		{"params model", ChatTargetConfig{Model: "m", Params: map[string]any{"messages": 1}}, "params"},
		{"price", ChatTargetConfig{Model: "m", Price: &Price{InputPerMTok: -1}}, "price.input_per_mtok"},
		// An infinite price makes every cost infinite, which no report can hold.
		{"infinite price", ChatTargetConfig{Model: "m", Price: &Price{OutputPerMTok: math.Inf(1)}}, "price.output_per_mtok"},
		{"prompt template", ChatTargetConfig{Model: "m", Prompt: "{{ .Input"}, "prompt"},
		{"system template", ChatTargetConfig{Model: "m", System: "{{ if }}"}, "system"},
		{"no key for OpenAI", ChatTargetConfig{Model: "m", ClientConfig: ClientConfig{LookupEnv: env()}}, "api_key_env"},
		{"explicit env unset", ChatTargetConfig{Model: "m", ClientConfig: ClientConfig{BaseURL: "http://127.0.0.1:1", APIKeyEnv: "MY_KEY", LookupEnv: env()}}, "api_key_env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewChatTarget(tc.cfg)
			var ce *target.ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.key {
				t.Fatalf("NewChatTarget = %v, want a ConfigError for %q", err, tc.key)
			}
			if !errors.Is(err, evalrun.ErrInvalid) {
				t.Errorf("error does not match evalrun.ErrInvalid")
			}
		})
	}
	// A local server needs no key.
	if _, err := NewChatTarget(ChatTargetConfig{Model: "m", ClientConfig: ClientConfig{BaseURL: "http://127.0.0.1:11434/v1", LookupEnv: env()}}); err != nil {
		t.Errorf("base_url without a key rejected: %v", err)
	}
	// The key comes from the named variable.
	if _, err := NewChatTarget(ChatTargetConfig{Model: "m", ClientConfig: ClientConfig{APIKeyEnv: "MY_KEY", LookupEnv: env("MY_KEY", "k")}}); err != nil {
		t.Errorf("key from MY_KEY rejected: %v", err)
	}
}

func TestChatModelJudgeRequest(t *testing.T) {
	api := newFakeAPI(t, reply(200, completion(`{"score": 1, "reason": "ok"}`)))
	m, err := NewChatModel(ModelConfig{ClientConfig: ClientConfig{BaseURL: api.URL, LookupEnv: env("OPENAI_API_KEY", "k")}, Model: "judge-model", Price: &Price{InputPerMTok: 1, OutputPerMTok: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	temp, seed := 0.0, int64(42)
	resp, err := m.Chat(context.Background(), evalrun.ChatRequest{
		Messages:     []evalrun.ChatMessage{{Role: "system", Content: "grade"}, {Role: "user", Content: "answer"}, {Role: "assistant", Content: "prior"}},
		Temperature:  &temp,
		Seed:         &seed,
		MaxTokens:    100,
		JSONResponse: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != `{"score": 1, "reason": "ok"}` {
		t.Errorf("content = %q", resp.Content)
	}
	if resp.Usage.CostUSD == nil || math.Abs(*resp.Usage.CostUSD-15.0/1e6) > 1e-15 {
		t.Errorf("cost = %v, want 15e-6", resp.Usage.CostUSD)
	}
	body := api.Body(0)
	temperature, hasTemp := body["temperature"]
	if !hasTemp || temperature != 0.0 || body["seed"] != 42.0 || body["max_tokens"] != 100.0 || body["model"] != "judge-model" {
		t.Errorf("body = %v; want temperature 0 (sent), seed 42, max_tokens 100", body)
	}
	rf, _ := body["response_format"].(map[string]any)
	if rf["type"] != "json_object" {
		t.Errorf("response_format = %v, want json_object", body["response_format"])
	}
	roles := []string{}
	for _, msg := range body["messages"].([]any) {
		roles = append(roles, msg.(map[string]any)["role"].(string))
	}
	if strings.Join(roles, ",") != "system,user,assistant" {
		t.Errorf("roles = %v", roles)
	}

	_, err = m.Chat(context.Background(), evalrun.ChatRequest{Messages: []evalrun.ChatMessage{{Role: "tool", Content: "x"}}})
	wantKind(t, err, evalrun.ErrorPermanent)
}

func TestChatModelErrorsAreClassified(t *testing.T) {
	api := newFakeAPI(t, reply(503, `{"error":{"message":"overloaded"}}`, "Retry-After", "2"))
	m, err := NewChatModel(ModelConfig{ClientConfig: ClientConfig{BaseURL: api.URL, LookupEnv: env(), Clock: newFakeClock()}, Model: "j"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Chat(context.Background(), evalrun.ChatRequest{Messages: []evalrun.ChatMessage{{Role: "user", Content: "x"}}})
	if e := wantKind(t, err, evalrun.ErrorTransient); e.StatusCode != 503 || e.RetryAfter != 2*time.Second {
		t.Errorf("status %d RetryAfter %v", e.StatusCode, e.RetryAfter)
	}
	if api.Requests() != 1 {
		t.Errorf("requests = %d, want 1 (SDK retries off)", api.Requests())
	}
}

// A query in base_url (Azure's api-version, a gateway's key) is sent with
// every request. The SDK resolves each endpoint against the base URL, which
// drops the base's query: it was silently lost.
func TestChatTargetBaseURLQueryIsSent(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, completion("ok"))
	}))
	defer srv.Close()
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: srv.URL + "/v1?api-version=2024-10-21&key=k%2B1"}})
	if _, err := ct.Execute(context.Background(), testItem); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "/v1/chat/completions?api-version=2024-10-21&key=k%2B1"; len(got) != 1 || got[0] != want {
		t.Errorf("requests %q, want [%q]", got, want)
	}
}

// A 401 body echoing the Authorization header base64-encoded (as some
// gateways do) does not carry the key into the error: the scrubber knows
// the header the client sends, "Bearer KEY", not only the key.
func TestChatTargetErrorScrubsEncodedAuthorization(t *testing.T) {
	const key = "sk-oaiSECRET12345"
	echoed := base64.StdEncoding.EncodeToString([]byte("Bearer " + key))
	api := newFakeAPI(t, reply(401, `{"error": {"message": "bad credentials `+echoed+`"}}`))
	ct := newChatTarget(t, ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: api.URL, LookupEnv: env("OPENAI_API_KEY", key)}})
	_, err := ct.Execute(context.Background(), testItem)
	if err == nil || strings.Contains(err.Error(), strings.TrimRight(echoed, "=")) || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("error %v: want the echoed header redacted", err)
	}
}
