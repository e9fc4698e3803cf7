package fakemodel

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAnswer(t *testing.T) {
	for _, tc := range []struct{ model, text, want string }{
		{"fake-small", "What is the capital of France?", "The capital of France is Paris."},
		{Large, "What is the capital of France?", "The capital of France is Paris."},
		{"fake-small", "What is the capital of Australia?", "The capital of Australia is Sydney."},
		{Large, "What is the capital of Australia?", "The capital of Australia is Canberra."},
		{"fake-small", "Answer in one word: what is the capital of Australia?", "Sydney"},
		{Large, "answer in ONE WORD: what is the capital of new zealand?", "Wellington"},
		{"fake-small", "What is the capital of Atlantis?", "I do not know."},
	} {
		if got := Answer(tc.model, tc.text); got != tc.want {
			t.Errorf("Answer(%q, %q) = %q, want %q", tc.model, tc.text, got, tc.want)
		}
	}
	if got := len(Tricky()); got != 8 {
		t.Errorf("%d tricky countries, want 8", got)
	}
}

// The server speaks enough of the chat completions API for the openai
// target: the reply's shape, usage, and OpenAI-shaped errors.
func TestServer(t *testing.T) {
	s := New()
	srv := httptest.NewServer(s)
	defer srv.Close()
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		res, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
			t.Fatalf("%s: body is not JSON: %v", path, err)
		}
		return res.StatusCode, v
	}
	code, v := post("/v1/chat/completions", `{"model":"fake-small","messages":[{"role":"system","content":"Be brief."},
		{"role":"user","content":[{"type":"text","text":"What is the capital of Canada?"}]}]}`)
	if code != 200 {
		t.Fatalf("status %d: %v", code, v)
	}
	msg := v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["content"] != "The capital of Canada is Toronto." || msg["role"] != "assistant" {
		t.Errorf("message %v", msg)
	}
	if u := v["usage"].(map[string]any); u["prompt_tokens"].(float64) <= 0 || u["completion_tokens"].(float64) <= 0 {
		t.Errorf("usage %v", u)
	}
	for _, tc := range []struct {
		path, body string
		code       int
	}{
		{"/v1/embeddings", `{}`, 404},
		{"/v1/chat/completions", `not json`, 400},
		{"/v1/chat/completions", `{"model":"","messages":[{"role":"user","content":"x"}]}`, 400},
		{"/v1/chat/completions", `{"model":"m","messages":[]}`, 400},
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", MaxRequestBytes) + `"}]}`, 413},
	} {
		code, v := post(tc.path, tc.body)
		if e, _ := v["error"].(map[string]any); code != tc.code || e == nil || e["message"] == "" {
			t.Errorf("%s %.40s: status %d body %v, want %d and an error message", tc.path, tc.body, code, v, tc.code)
		}
	}
	if got := s.Served(); got["fake-small"] != 1 || len(got) != 1 {
		t.Errorf("served %v, want one request of fake-small", got)
	}
}
