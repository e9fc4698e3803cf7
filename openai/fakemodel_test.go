package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// The fake model of the agent tests: an OpenAI-compatible chat server that
// speaks the tools protocol as OpenAI does. It decodes every request into
// the wire types below (arguments must be JSON strings), refuses a request
// that breaks the protocol with a 400 as OpenAI would (a tool message that
// answers no call, a call left unanswered), and answers with whatever the
// test's script returns for the turn.

// wireRequest is a chat completion request as the server reads it.
type wireRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a string on the wire, as OpenAI has it: a request
		// sending anything else does not decode.
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// toolMessages returns the tool messages after the last assistant message.
func (r wireRequest) toolMessages() []wireMessage {
	var out []wireMessage
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == "tool"; i-- {
		out = append([]wireMessage{r.Messages[i]}, out...)
	}
	return out
}

// turnReply is what the script answers a turn with: a status and a body.
type turnReply struct {
	status int
	body   string
}

// fakeModel is the server. script is called with the turn number (from 0,
// counted over all requests) and the decoded request.
type fakeModel struct {
	*httptest.Server
	script func(turn int, req wireRequest, r *http.Request) turnReply

	mu   sync.Mutex
	reqs []wireRequest
}

func newFakeModel(t testing.TB, script func(turn int, req wireRequest, r *http.Request) turnReply) *fakeModel {
	t.Helper()
	m := &fakeModel{script: script}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req wireRequest
	if err := json.Unmarshal(b, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad request body: `+err.Error()+`"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	turn := len(m.reqs)
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	if msg := protocolError(req); msg != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error"}}`, msg)
		return
	}
	rep := m.script(turn, req, r)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = io.WriteString(w, rep.body)
}

// protocolError checks what OpenAI checks of tool messages: every call of
// an assistant message is answered by exactly one tool message right
// after it, and every tool message answers such a call.
func protocolError(req wireRequest) string {
	for i := 0; i < len(req.Messages); i++ {
		m := req.Messages[i]
		if m.Role == "tool" {
			return fmt.Sprintf("messages[%d]: a tool message must answer a tool call of the assistant message before it", i)
		}
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		want := map[string]bool{}
		for _, c := range m.ToolCalls {
			if c.ID == "" || c.Type != "function" {
				return fmt.Sprintf("messages[%d]: a tool call needs an id and type function", i)
			}
			want[c.ID] = true
		}
		for i+1 < len(req.Messages) && req.Messages[i+1].Role == "tool" {
			i++
			t := req.Messages[i]
			if !want[t.ToolCallID] || t.Content == nil {
				return fmt.Sprintf("messages[%d]: tool_call_id %q answers no pending call", i, t.ToolCallID)
			}
			delete(want, t.ToolCallID)
		}
		if len(want) > 0 {
			return "an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'"
		}
	}
	return ""
}

// requests returns the requests received so far.
func (m *fakeModel) requests() []wireRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]wireRequest(nil), m.reqs...)
}

// call is a tool call the fake model makes: a name and the arguments text.
type call struct{ name, args string }

// callTools is a reply calling tools, ids call_T_I for turn T.
func callTools(turn int, calls ...call) turnReply {
	tcs := make([]map[string]any, len(calls))
	for i, c := range calls {
		tcs[i] = map[string]any{"id": fmt.Sprintf("call_%d_%d", turn, i), "type": "function",
			"function": map[string]any{"name": c.name, "arguments": c.args}}
	}
	return chatReply(map[string]any{"role": "assistant", "content": nil, "tool_calls": tcs}, "tool_calls")
}

// answer is a final reply with text.
func answer(text string) turnReply {
	return chatReply(map[string]any{"role": "assistant", "content": text}, "stop")
}

// chatReply is a chat completion of one choice, 10 prompt and 5
// completion tokens.
func chatReply(msg map[string]any, finish string) turnReply {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	return turnReply{http.StatusOK, string(b)}
}
