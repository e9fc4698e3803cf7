// Package fakemodel is the model of the variants example
// (examples/variants): a tiny, deterministic, OpenAI-compatible chat
// completions server that knows the capitals of twenty countries, so that
// the example runs offline, needs no API key and gives the same answers
// every time.
//
// It serves POST {base}/chat/completions and answers the last user
// message. Its answer depends on the request's model and prompt, which is
// what the example's variants change:
//   - model "fake-large" always names the capital;
//   - model "fake-small" (any other model) names the largest city instead
//     for the eight countries of [Tricky] (Sydney for Australia), the
//     capital for the others;
//   - a prompt containing "one word" gets the city alone ("Paris"), any
//     other the sentence "The capital of France is Paris.".
//
// A question naming no known country gets "I do not know.".
package fakemodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Bounds of a request: the server may be left running on a shared
// machine, and a fake should fail as loudly as the real thing.
const (
	// MaxRequestBytes caps a request body.
	MaxRequestBytes = 1 << 20
	// MaxMessages caps the messages of a request.
	MaxMessages = 64
)

// Large is the model that knows every capital.
const Large = "fake-large"

// country is what the fake knows of one country.
type country struct {
	name, capital, largest string // largest: the small model's answer when it differs
}

// countries is the fake's knowledge, in the order of the example's items.
var countries = []country{
	{"France", "Paris", ""},
	{"Japan", "Tokyo", ""},
	{"Italy", "Rome", ""},
	{"Germany", "Berlin", ""},
	{"Spain", "Madrid", ""},
	{"Egypt", "Cairo", ""},
	{"Kenya", "Nairobi", ""},
	{"Peru", "Lima", ""},
	{"Norway", "Oslo", ""},
	{"Greece", "Athens", ""},
	{"Portugal", "Lisbon", ""},
	{"Austria", "Vienna", ""},
	{"Australia", "Canberra", "Sydney"},
	{"Canada", "Ottawa", "Toronto"},
	{"Turkey", "Ankara", "Istanbul"},
	{"Brazil", "Brasilia", "Sao Paulo"},
	{"Switzerland", "Bern", "Zurich"},
	{"Nigeria", "Abuja", "Lagos"},
	{"Morocco", "Rabat", "Casablanca"},
	{"New Zealand", "Wellington", "Auckland"},
}

// Tricky returns the countries whose capital the small model gets wrong.
func Tricky() []string {
	var names []string
	for _, c := range countries {
		if c.largest != "" {
			names = append(names, c.name)
		}
	}
	return names
}

// Answer is the fake's reply to a question asked of model with the
// conversation's text (system and user messages).
func Answer(model, text string) string {
	lower := strings.ToLower(text)
	var found *country
	for i := range countries {
		if strings.Contains(lower, strings.ToLower(countries[i].name)) {
			found = &countries[i]
			break
		}
	}
	if found == nil {
		return "I do not know."
	}
	city := found.capital
	if model != Large && found.largest != "" {
		city = found.largest
	}
	if strings.Contains(lower, "one word") {
		return city
	}
	return fmt.Sprintf("The capital of %s is %s.", found.name, city)
}

// Server is the fake model, an http.Handler. The zero value is ready to
// use and safe for concurrent use.
type Server struct {
	mu     sync.Mutex
	served map[string]int
}

// New returns a fake model server.
func New() *Server { return &Server{} }

// Served returns how many requests the server answered per model.
func (s *Server) Served() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.served))
	for k, v := range s.served {
		out[k] = v
	}
	return out
}

// request is a chat completion request as the server reads it.
type request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// ServeHTTP answers POST …/chat/completions.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown path %s: the fake model serves POST {base_url}/chat/completions", r.URL.Path))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRequestBytes)).Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxRequestBytes))
			return
		}
		writeError(w, http.StatusBadRequest, "the body is not a chat completion request: "+err.Error())
		return
	}
	if req.Model == "" || len(req.Messages) == 0 || len(req.Messages) > MaxMessages {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("want a model and 1 to %d messages", MaxMessages))
		return
	}
	var text strings.Builder
	for _, m := range req.Messages {
		text.WriteString(contentText(m.Content))
		text.WriteByte('\n')
	}
	answer := Answer(req.Model, text.String())
	s.mu.Lock()
	if s.served == nil {
		s.served = map[string]int{}
	}
	s.served[req.Model]++
	n := s.served[req.Model]
	s.mu.Unlock()

	in, out := tokens(text.String()), tokens(answer)
	body := map[string]any{
		"id":      fmt.Sprintf("chatcmpl-fake-%s-%d", req.Model, n),
		"object":  "chat.completion",
		"created": 1767225600, // fixed: the replies are deterministic
		"model":   req.Model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": answer},
		}},
		"usage": map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// contentText returns a message's text: a string, or the text parts of an
// array of content parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// tokens is a rough token count (4 bytes a token), enough for the report's
// usage columns to differ between a sentence and a word.
func tokens(s string) int { return max(1, (len(s)+3)/4) }

// writeError writes an OpenAI-shaped error body.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}
