package mock

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

var completionID atomic.Int64

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens,omitempty"`
	TotalTokens      int `json:"total_tokens"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   usage        `json:"usage"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// tokens estimates a text's tokens: one per 4 bytes, at least 1.
func tokens(s string) int { return max(1, (len(s)+3)/4) }

// text is a message content's text: the string itself, or the text parts
// of a content array joined.
func text(raw json.RawMessage) string {
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

// padded pads s to the configured output size.
func (s *Server) padded(out string) string {
	if n := s.cfg.OutputSize - len(out) - 1; n >= 0 {
		return out + "\n" + s.pad[:n]
	}
	return out
}

// chat answers a chat completion with the last user message as the
// assistant's content.
func (s *Server) chat(body []byte) (any, int) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return apiError("invalid JSON body: "+err.Error(), "invalid_request_error"), http.StatusBadRequest
	}
	var last string
	prompt := 0
	for _, m := range req.Messages {
		t := text(m.Content)
		prompt += tokens(t)
		if m.Role == "user" {
			last = t
		}
	}
	out := s.padded(last)
	model := req.Model
	if model == "" {
		model = "mock"
	}
	return chatResponse{
		ID:      "chatcmpl-mock-" + strconv.FormatInt(completionID.Add(1), 10),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   model,
		Choices: []chatChoice{{Message: chatMessage{Role: "assistant", Content: out}, FinishReason: "stop"}},
		Usage:   usage{PromptTokens: prompt, CompletionTokens: tokens(out), TotalTokens: prompt + tokens(out)},
	}, http.StatusOK
}

// embeddingDims is the length of an embedding unless the request asks
// for "dimensions".
const embeddingDims = 16

type embedding struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float64 `json:"embedding"`
}

// embeddings answers with one deterministic unit vector per input text,
// derived from the text's hash: equal texts get equal vectors.
func (s *Server) embeddings(body []byte) (any, int) {
	var req struct {
		Model      string          `json:"model"`
		Input      json.RawMessage `json:"input"`
		Dimensions int             `json:"dimensions"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return apiError("invalid JSON body: "+err.Error(), "invalid_request_error"), http.StatusBadRequest
	}
	var inputs []string
	var one string
	if json.Unmarshal(req.Input, &one) == nil {
		inputs = []string{one}
	} else if json.Unmarshal(req.Input, &inputs) != nil || len(inputs) == 0 {
		return apiError("input must be a string or an array of strings", "invalid_request_error"), http.StatusBadRequest
	}
	dims := req.Dimensions
	if dims <= 0 || dims > 4096 {
		dims = embeddingDims
	}
	data := make([]embedding, len(inputs))
	n := 0
	for i, in := range inputs {
		data[i] = embedding{Object: "embedding", Index: i, Embedding: vector(in, dims)}
		n += tokens(in)
	}
	return map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": usage{PromptTokens: n, TotalTokens: n},
	}, http.StatusOK
}

// vector is a unit vector of dims components drawn from the text's hash.
func vector(text string, dims int) []float64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	x := h.Sum64()
	v := make([]float64, dims)
	norm := 0.0
	for i := range v {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v[i] = float64(x>>11)/float64(1<<53)*2 - 1
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] /= norm
	}
	return v
}

// echo maps {"input": X} to {"output": X}, padding a string X.
func (s *Server) echo(body []byte) (any, int) {
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Input == nil {
		return apiError(`body must be {"input": ...}`, "invalid_request_error"), http.StatusBadRequest
	}
	var str string
	if s.cfg.OutputSize > 0 && json.Unmarshal(req.Input, &str) == nil {
		return map[string]any{"output": s.padded(str)}, http.StatusOK
	}
	return map[string]any{"output": req.Input}, http.StatusOK
}
