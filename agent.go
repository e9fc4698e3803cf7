package evalrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// This file holds the agent side of the domain: what an item may carry for
// a tool-calling agent (mocks, the expected calls) and what an agent's
// result records (its trajectory). The contract is PRODUCT.md, "Agents:
// conversations, tools and trajectories", and docs/agents.md.

// ToolMock answers an agent's tool call from the dataset item instead of
// running the tool: the item's "tool_mocks".
type ToolMock struct {
	// Name is the tool's name. Required.
	Name string `json:"name"`
	// Args, when set (a JSON object), restricts the mock to calls whose
	// arguments equal it as JSON (key order and spacing ignored); nil
	// answers any call of the tool.
	Args json.RawMessage `json:"args,omitempty"`
	// Output is the tool's result, any JSON value.
	Output json.RawMessage `json:"output"`
}

// ExpectedCall is one tool call an agent should make: an element of the
// item's "expected_trajectory".
type ExpectedCall struct {
	// Name is the tool's name. Required.
	Name string `json:"name"`
	// Args, when set (a JSON object), is matched as a subset of the call's
	// arguments (see [ArgsContain]); nil matches any arguments.
	Args json.RawMessage `json:"args,omitempty"`
}

// ToolCall is one tool call an agent made, as its trajectory records it.
type ToolCall struct {
	Name string `json:"name"`
	// Args is the call's arguments, a JSON object ({} when none were given).
	Args json.RawMessage `json:"args"`
	// Output is the tool's result; nil when the tool failed or the agent
	// did not report it.
	Output json.RawMessage `json:"output,omitempty"`
	// Error is the tool's failure, sent back to the model as its result.
	Error string `json:"error,omitempty"`
	// Mocked is true when the item's tool_mocks answered the call.
	Mocked bool `json:"mocked"`
	// LatencyMS is how long the tool took; nil when not measured (a
	// black-box agent's trajectory, a replayed result).
	LatencyMS *float64 `json:"latency_ms"`
}

// Trajectory is what an agent did for one item: its tool calls in order and
// the number of model turns it took. A target that is not an agent records
// none (a nil *Trajectory); an agent that called no tool records an empty
// one.
type Trajectory struct {
	// Steps is the number of model turns; 0 when not known (a black-box
	// agent that does not say).
	Steps int `json:"steps,omitempty"`
	// Calls are the tool calls in the order the model made them (within a
	// turn, the order the model listed them). Never nil in a recorded
	// trajectory: it marshals as [] when the agent called nothing.
	Calls []ToolCall `json:"calls"`
}

// MarshalJSON writes Calls as [] rather than null when empty.
func (t Trajectory) MarshalJSON() ([]byte, error) {
	type plain Trajectory
	if t.Calls == nil {
		t.Calls = []ToolCall{}
	}
	return json.Marshal(plain(t))
}

// MockFor returns the mock of it answering a call of tool name with args:
// a mock of that tool whose Args equal args as JSON, else one of that tool
// without Args. mocked reports whether the item mocks the tool at all: a
// call of a mocked tool that no mock answers (m == nil, mocked == true)
// fails the item.
func (it *Item) MockFor(name string, args json.RawMessage) (m *ToolMock, mocked bool) {
	if it == nil {
		return nil, false
	}
	var anyArgs *ToolMock
	var canon []byte
	for i := range it.ToolMocks {
		tm := &it.ToolMocks[i]
		if tm.Name != name {
			continue
		}
		mocked = true
		if tm.Args == nil {
			if anyArgs == nil {
				anyArgs = tm
			}
			continue
		}
		if canon == nil {
			c, err := Canonical(args)
			if err != nil {
				// Arguments that are not JSON equal no mock's: only a
				// mock without args can answer.
				canon = []byte{}
			} else {
				canon = c
			}
		}
		if len(canon) == 0 {
			continue
		}
		// Args kept canonical (as the agent loop keeps them) need no work.
		if bytes.Equal(tm.Args, canon) {
			return tm, true
		}
		if c, err := Canonical(tm.Args); err == nil && bytes.Equal(c, canon) {
			return tm, true
		}
	}
	return anyArgs, mocked
}

// ArgsContain reports whether the arguments object args contains every key
// of want with an equal value (compared as scorers compare, see
// [EqualValues]). A nil or empty want is contained in anything; a want or
// args that is not a JSON object contains only what equals it.
func ArgsContain(args, want json.RawMessage) bool {
	if len(bytes.TrimSpace(want)) == 0 {
		return true
	}
	var w map[string]json.RawMessage
	if json.Unmarshal(want, &w) != nil || w == nil {
		return EqualValues(args, want)
	}
	var a map[string]json.RawMessage
	if json.Unmarshal(args, &a) != nil || a == nil {
		return len(w) == 0
	}
	for k, wv := range w {
		av, ok := a[k]
		if !ok || !EqualValues(av, wv) {
			return false
		}
	}
	return true
}

// ParseArguments returns a tool call's arguments as a JSON value: raw
// itself, or, when raw is a JSON string (OpenAI's wire form), the JSON that
// string holds. An empty or absent argument list gives {}. It fails when
// the string does not hold JSON.
func ParseArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] != '"' {
		if !json.Valid(raw) {
			return nil, errors.New("arguments are not valid JSON")
		}
		return raw, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("arguments %q are not valid JSON", snip(s))
	}
	return json.RawMessage(s), nil
}

func snip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// ConversationMessage is one message of a conversation input.
type ConversationMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Conversation returns the messages of a conversation input (a JSON array
// of {"role": "system"|"user"|"assistant", "content": "…"} objects), and
// ok = false when input is not one: not an array, empty, or an element
// that is not such a message. Content that is not a string is rejected
// too, so that a list of arbitrary objects is never mistaken for a
// conversation.
func Conversation(input json.RawMessage) (msgs []ConversationMessage, ok bool) {
	in := bytes.TrimSpace(input)
	if len(in) == 0 || in[0] != '[' {
		return nil, false
	}
	var raw []map[string]json.RawMessage
	if json.Unmarshal(in, &raw) != nil || len(raw) == 0 {
		return nil, false
	}
	msgs = make([]ConversationMessage, 0, len(raw))
	for _, m := range raw {
		if len(m) != 2 {
			return nil, false
		}
		var msg ConversationMessage
		if json.Unmarshal(m["role"], &msg.Role) != nil || json.Unmarshal(m["content"], &msg.Content) != nil {
			return nil, false
		}
		switch msg.Role {
		case "system", "user", "assistant":
		default:
			return nil, false
		}
		msgs = append(msgs, msg)
	}
	return msgs, true
}

// TrajectorySink receives the trajectory an agent has so far, while it
// runs, so that an attempt that runs out of time still shows what the
// agent did: the engine stops waiting for a target at its deadline (a
// target may ignore its context), and the error the agent returns after
// that reaches no one. The engine puts one in each attempt's context;
// agents publish to it with [PublishTrajectory]. Safe for concurrent use.
type TrajectorySink struct{ last atomic.Pointer[Trajectory] }

type trajectorySinkKey struct{}

// WithTrajectorySink returns ctx carrying s.
func WithTrajectorySink(ctx context.Context, s *TrajectorySink) context.Context {
	return context.WithValue(ctx, trajectorySinkKey{}, s)
}

// TrajectorySinkOf returns the sink of ctx, or nil. An agent looks it up
// once per item and publishes only when there is one.
func TrajectorySinkOf(ctx context.Context) *TrajectorySink {
	s, _ := ctx.Value(trajectorySinkKey{}).(*TrajectorySink)
	return s
}

// Publish records t as what the agent has done so far. t is kept as it is:
// publish a copy the agent will not modify. A nil sink ignores it.
func (s *TrajectorySink) Publish(t *Trajectory) {
	if s != nil {
		s.last.Store(t)
	}
}

// Last returns the last published trajectory, or nil.
func (s *TrajectorySink) Last() *Trajectory {
	if s == nil {
		return nil
	}
	return s.last.Load()
}
