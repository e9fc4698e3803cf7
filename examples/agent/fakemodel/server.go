// Package fakemodel is the model of the agent example (examples/agent): a
// tiny, deterministic, OpenAI-compatible chat completions server that
// speaks the tools protocol as OpenAI does, so that the example runs
// offline, needs no API key and gives the same trajectories every time.
//
// It serves POST {base}/chat/completions. A request that breaks the
// protocol is refused with a 400 and an OpenAI-shaped error body, as the
// real API refuses it: tool-call arguments that are not a JSON string
// holding an object, a tool message whose tool_call_id answers no call of
// the assistant message before it, a call left unanswered, a message of an
// unknown role. So an agent loop that passes against it speaks the
// protocol.
//
// It replies by rules over the conversation (see [Reply]): a question
// about the weather of known cities calls get_weather once per city, all
// in one turn (parallel calls); "convert 100 EUR to USD" calls
// convert_currency; "the currency of the colder one" waits for the weather
// before converting (a second turn); once every call of the plan has its
// tool message, it answers in text using the tools' outputs, and passes a
// tool's "error: …" on to the user. It only calls tools the request
// declares. It makes two mistakes on purpose, for the example's scorers to
// catch: it does not know Lyon (a city it leaves out), and it books a
// flight (book_flight) whenever the user says they will fly somewhere.
package fakemodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Bounds of a request: the server may be left running on a shared
// machine, and a fake should fail as loudly as the real thing.
const (
	// MaxRequestBytes caps a request body.
	MaxRequestBytes = 1 << 20
	// MaxMessages caps the messages of a request.
	MaxMessages = 256
	// MaxLogged is how many requests [Server.Requests] keeps (the latest).
	MaxLogged = 1024
)

// Server is the fake model, an http.Handler. The zero value is not usable;
// call [New]. It is safe for concurrent use.
type Server struct {
	mu     sync.Mutex
	log    []Request
	served int
}

// New returns a fake model server.
func New() *Server { return &Server{} }

// Request is a chat completion request as the server reads it.
type Request struct {
	Model      string          `json:"model"`
	Messages   []Message       `json:"messages"`
	Tools      []ToolDef       `json:"tools,omitempty"`
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
}

// Message is one message of a request or the message of a reply. Content
// is null in an assistant message that only calls tools.
type Message struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// Text returns the message's content, "" when null.
func (m Message) Text() string {
	if m.Content == nil {
		return ""
	}
	return *m.Content
}

// ToolDef is a tool as a request declares it.
type ToolDef struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// ToolCall is a call as the wire has it: Arguments is a JSON string
// holding the arguments object (a request sending an object instead is
// refused, as OpenAI refuses it).
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Requests returns the requests served so far that were valid, oldest
// first (at most the latest [MaxLogged]).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Served returns how many valid requests the server has answered.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
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
	var req Request
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxRequestBytes))
			return
		}
		writeError(w, http.StatusBadRequest, "the body is not a chat completion request: "+err.Error())
		return
	}
	if err := req.validate(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	reply := Reply(&req)
	s.mu.Lock()
	s.served++
	n := s.served
	if len(s.log) == MaxLogged {
		s.log = append(s.log[:0], s.log[1:]...)
	}
	s.log = append(s.log, req)
	s.mu.Unlock()

	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	body := map[string]any{
		"id":      fmt.Sprintf("chatcmpl-fake-%d", n),
		"object":  "chat.completion",
		"created": 1767225600, // fixed: the replies are deterministic
		"model":   req.Model,
		"choices": []any{map[string]any{
			"index": 0, "message": reply, "finish_reason": finish, "logprobs": nil,
		}},
		"usage": usage(&req, &reply),
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// validate checks what OpenAI checks of the protocol.
func (r *Request) validate() error {
	if r.Model == "" {
		return errors.New("model: required")
	}
	if len(r.Messages) == 0 {
		return errors.New("messages: must not be empty")
	}
	if len(r.Messages) > MaxMessages {
		return fmt.Errorf("messages: %d messages, more than %d", len(r.Messages), MaxMessages)
	}
	tools := map[string]bool{}
	for i, t := range r.Tools {
		if t.Type != "function" || t.Function.Name == "" {
			return fmt.Errorf("tools[%d]: want {\"type\": \"function\", \"function\": {\"name\": …}}", i)
		}
		if tools[t.Function.Name] {
			return fmt.Errorf("tools[%d]: duplicate function name %q", i, t.Function.Name)
		}
		tools[t.Function.Name] = true
		if p := t.Function.Parameters; p != nil {
			var obj map[string]any
			if json.Unmarshal(p, &obj) != nil || obj == nil {
				return fmt.Errorf("tools[%d].function.parameters: must be a JSON Schema object", i)
			}
		}
	}
	// pending holds the ids of the calls of the last assistant message
	// that no tool message has answered yet.
	pending := map[string]bool{}
	for i, m := range r.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		if m.Role != "tool" && len(pending) > 0 {
			return fmt.Errorf("%s: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id' (missing: %s)", where, keys(pending))
		}
		switch m.Role {
		case "system", "user":
			if m.Content == nil {
				return fmt.Errorf("%s.content: required for role %q", where, m.Role)
			}
		case "assistant":
			if m.Content == nil && len(m.ToolCalls) == 0 {
				return fmt.Errorf("%s: an assistant message needs content or tool_calls", where)
			}
			for j, c := range m.ToolCalls {
				cw := fmt.Sprintf("%s.tool_calls[%d]", where, j)
				if c.ID == "" || c.Type != "function" || c.Function.Name == "" {
					return fmt.Errorf("%s: want an id, type \"function\" and a function name", cw)
				}
				var args map[string]any
				if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil || args == nil {
					return fmt.Errorf("%s.function.arguments: must be a JSON string holding an object, got %q", cw, c.Function.Arguments)
				}
				if pending[c.ID] {
					return fmt.Errorf("%s: duplicate id %q", cw, c.ID)
				}
				pending[c.ID] = true
			}
		case "tool":
			if !pending[m.ToolCallID] {
				return fmt.Errorf("%s: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (no pending call has id %q)", where, m.ToolCallID)
			}
			if m.Content == nil {
				return fmt.Errorf("%s.content: required for role \"tool\"", where)
			}
			delete(pending, m.ToolCallID)
		default:
			return fmt.Errorf("%s.role: %q is not one of system, user, assistant, tool", where, m.Role)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("messages: the calls %s have no tool message", keys(pending))
	}
	return nil
}

// usage counts words as tokens: deterministic, and enough to show that
// usage is summed over the turns of an item.
func usage(req *Request, reply *Message) map[string]int {
	in := 0
	for _, m := range req.Messages {
		in += len(strings.Fields(m.Text())) + 1
		for _, c := range m.ToolCalls {
			in += 1 + len(strings.Fields(c.Function.Arguments))
		}
	}
	out := len(strings.Fields(reply.Text()))
	for _, c := range reply.ToolCalls {
		out += 1 + len(strings.Fields(c.Function.Arguments))
	}
	return map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
}

// writeError writes an OpenAI-shaped error.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": nil, "code": nil,
	}})
}

func keys(m map[string]bool) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, fmt.Sprintf("%q", k))
	}
	slices.Sort(ks) // the message is the same every time
	return strings.Join(ks, ", ")
}
