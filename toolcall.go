package evalrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The bounds of a trajectory an agent reports (a black-box target's
// trajectory path, a line of --outputs). What holds it is bounded already
// (a response's or a line's size); these keep what is stored and shown for
// one item, and what the trajectory scorer compares, in proportion.
const (
	// MaxTrajectoryCalls is the most tool calls one reported trajectory
	// may hold; an agent's max_steps keeps a real one far below.
	MaxTrajectoryCalls = 10_000
	// MaxToolNameBytes is the longest tool name (OpenAI allows 64
	// characters).
	MaxToolNameBytes = 1 << 10
)

// ParseToolCall reads one tool call an agent reported: a JSON object
// {"name", "args" | "arguments", "output"?, "error"?}. The name is a
// non-blank string of at most MaxToolNameBytes; the arguments are an object
// or, as OpenAI sends them, a JSON string holding one (absent, null or "":
// {}), never both keys; a null output is no output; the error is a string
// (null: none). A key given twice is an error, not a silent choice. The
// keys it does not read are returned in rest: what they mean ("mocked",
// "latency_ms", or an unknown key) is the caller's to decide. Errors say
// which key is wrong and why; the caller adds where the call is.
func ParseToolCall(raw json.RawMessage) (call ToolCall, rest map[string]json.RawMessage, err error) {
	o, err := ObjectKeys(raw)
	if errors.Is(err, ErrNotObject) {
		return call, nil, fmt.Errorf("is %s, want an object {\"name\", \"args\"}", JSONKind(raw))
	}
	if err != nil {
		return call, nil, err
	}
	name, ok := o["name"]
	if !ok {
		return call, nil, errors.New(`"name" is missing`)
	}
	if json.Unmarshal(name, &call.Name) != nil || strings.TrimSpace(call.Name) == "" {
		what := JSONKind(name)
		if what == "a string" {
			what = "blank"
		}
		return call, nil, fmt.Errorf(`"name" is %s, want the tool's name (a non-empty string)`, what)
	}
	if len(call.Name) > MaxToolNameBytes {
		return call, nil, fmt.Errorf(`"name" is %d bytes, at most %d`, len(call.Name), MaxToolNameBytes)
	}
	key, args := "args", o["args"]
	if a, ok := o["arguments"]; ok {
		if args != nil {
			return call, nil, errors.New(`has both "args" and "arguments"; give one`)
		}
		key, args = "arguments", a
	}
	if k := JSONKind(args); args != nil && k != "an object" && k != "a string" && k != "null" {
		return call, nil, fmt.Errorf(`%q is %s, want an object of arguments (or a JSON string holding one)`, key, k)
	}
	parsed, err := ParseArguments(args)
	if err != nil {
		return call, nil, fmt.Errorf("tool %q: %w", snip(call.Name), err) // err says "arguments …"
	}
	if k := JSONKind(parsed); k != "an object" {
		return call, nil, fmt.Errorf("tool %q: %q holds %s, want an object of arguments", snip(call.Name), key, k)
	}
	call.Args = parsed
	if out, ok := o["output"]; ok && string(bytes.TrimSpace(out)) != "null" {
		call.Output = out
	}
	if e, ok := o["error"]; ok && json.Unmarshal(e, &call.Error) != nil {
		return call, nil, fmt.Errorf(`"error" is %s, want a string (the tool's failure)`, JSONKind(e))
	}
	for _, k := range []string{"name", "args", "arguments", "output", "error"} {
		delete(o, k)
	}
	return call, o, nil
}

// ErrNotObject is matched (errors.Is) by the error of ObjectKeys for valid
// JSON that is not an object; the caller says what the object should be.
var ErrNotObject = errors.New("not a JSON object")

// ObjectKeys returns the keys of the JSON object raw with their values; a
// repeated key is an error, not a silent choice of the last one.
func ObjectKeys(raw []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("malformed JSON: %v", err)
		}
		return nil, ErrNotObject
	}
	o := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("malformed JSON: %v", err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf("malformed JSON: %v", err)
		}
		if _, dup := o[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		o[key] = val
	}
	if _, err := dec.Token(); err != nil || dec.More() {
		var v any
		return nil, fmt.Errorf("malformed JSON: %v", json.Unmarshal(raw, &v))
	}
	return o, nil
}

// JSONKind names the kind of a JSON value for an error message ("an
// object", "an array", ...; "nothing" for no value).
func JSONKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// CallCounts returns how many of t's calls recorded an error (failed) and
// how many the item's tool_mocks answered (mocked): the figures the report
// and the viewer give of a trajectory.
func (t *Trajectory) CallCounts() (failed, mocked int) {
	for i := range t.Calls {
		if t.Calls[i].Error != "" {
			failed++
		}
		if t.Calls[i].Mocked {
			mocked++
		}
	}
	return failed, mocked
}
