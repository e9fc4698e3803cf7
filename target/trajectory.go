package target

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/evalrun/evalrun"
)

// The bounds of a black-box agent's trajectory (the http and exec targets'
// trajectory key), shared with every reported trajectory. The response
// that holds it is bounded already (max_response_bytes, max_output_bytes).
const (
	MaxTrajectoryCalls = evalrun.MaxTrajectoryCalls
	MaxToolNameBytes   = evalrun.MaxToolNameBytes
)

// ErrInvalidTrajectory is matched (errors.Is) by the error of an item whose
// response has no valid trajectory at the target's trajectory path.
var ErrInvalidTrajectory = errors.New("invalid trajectory")

// checkPath reports a JSON path (the output and trajectory keys) that gjson
// would not read as meant: blank, not UTF-8, with a control character, an
// unbalanced bracket or quote, a dangling escape or an unknown @modifier.
// gjson itself accepts any string and finds nothing, so without this a
// typo would fail every item instead of the suite.
func checkPath(key, path string) error {
	if strings.TrimSpace(path) == "" {
		return configErrorf(key, "a JSON path is not blank; e.g. %s: result.calls", key)
	}
	if !utf8.ValidString(path) {
		return configErrorf(key, "path %q is not valid UTF-8", path)
	}
	var open []byte // the brackets open, innermost last
	inString := false
	component := true // at the start of a path component
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c < 0x20 || c == 0x7f {
			return configErrorf(key, "path %q has a control character at byte %d", path, i)
		}
		if c == '\\' {
			if i+1 == len(path) {
				return configErrorf(key, "path %q ends with an escape (\\)", path)
			}
			i++
			component = false
			continue
		}
		if inString {
			inString = c != '"'
			continue
		}
		switch c {
		case '"':
			if len(open) == 0 {
				// Quotes have a meaning only in a query or a multipath.
				break
			}
			inString = true
		case '(', '[', '{':
			open = append(open, c)
		case ')', ']', '}':
			want := map[byte]byte{')': '(', ']': '[', '}': '{'}[c]
			if len(open) == 0 || open[len(open)-1] != want {
				return configErrorf(key, "path %q has an unbalanced %q at byte %d", path, c, i)
			}
			open = open[:len(open)-1]
		case '@':
			if component && len(open) == 0 {
				end := strings.IndexAny(path[i+1:], ".|:")
				name := path[i+1:]
				if end >= 0 {
					name = name[:end]
				}
				if !gjson.ModifierExists(name, nil) {
					return configErrorf(key, "path %q uses an unknown modifier @%s (see https://github.com/tidwall/gjson/blob/master/SYNTAX.md#modifiers)", path, name)
				}
			}
		}
		component = (c == '.' || c == '|') && len(open) == 0
	}
	if inString {
		return configErrorf(key, "path %q has an unterminated string", path)
	}
	if len(open) > 0 {
		return configErrorf(key, "path %q has an unclosed %q", path, open[len(open)-1])
	}
	return nil
}

// trajectoryOf returns the trajectory at path in doc, which must be JSON.
// Validity is checked with encoding/json, never gjson.Valid: gjson
// validates recursively, and a response of ten million '[' overflows the
// goroutine's stack, a crash no recover catches; encoding/json scans
// iteratively and refuses nesting past 10,000 levels, which gjson.Get
// then walks safely.
func trajectoryOf(doc []byte, path, where string) (*evalrun.Trajectory, error) {
	if !json.Valid(doc) {
		return nil, fmt.Errorf("%w: trajectory path %q: %s is not JSON", ErrInvalidTrajectory, path, where)
	}
	return pickTrajectory(doc, path, where)
}

// pickTrajectory returns the trajectory at path in the JSON document doc
// (already known to be valid JSON): an array of {"name", "args" |
// "arguments", "output"?, "error"?}, or null for no call. where names the
// document in errors ("the response", "standard output"). Every error
// wraps ErrInvalidTrajectory and says which element is wrong and why.
func pickTrajectory(doc []byte, path, where string) (*evalrun.Trajectory, error) {
	res := gjson.GetBytes(doc, path)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: trajectory path %q in %s: %s", ErrInvalidTrajectory, path, where, fmt.Sprintf(format, args...))
	}
	if !res.Exists() {
		return nil, fail("not found; the agent must report its tool calls there ([] when it called none)")
	}
	tr := &evalrun.Trajectory{Calls: []evalrun.ToolCall{}}
	if res.Type == gjson.Null {
		return tr, nil
	}
	if !res.IsArray() {
		return nil, fail("is %s, want an array of tool calls {\"name\", \"args\"}", jsonKind(res))
	}
	var err error
	n := 0
	res.ForEach(func(_, el gjson.Result) bool {
		n++
		if n > MaxTrajectoryCalls {
			err = fail("more than %d tool calls", MaxTrajectoryCalls)
			return false
		}
		// Keys ParseToolCall leaves (an OpenAI call's "id" and "type",
		// an agent's own "mocked") are ignored: a black-box agent's calls
		// are recorded unmocked and without latency.
		call, _, perr := evalrun.ParseToolCall(json.RawMessage(el.Raw))
		if perr != nil {
			err = fail("element %d: %v", n-1, perr)
			return false
		}
		tr.Calls = append(tr.Calls, call)
		return true
	})
	if err != nil {
		return nil, err
	}
	return tr, nil
}

// jsonKind names the JSON type of r for a message.
func jsonKind(r gjson.Result) string {
	switch {
	case r.IsArray():
		return "an array"
	case r.IsObject():
		return "an object"
	}
	switch r.Type {
	case gjson.String:
		return "a string"
	case gjson.Number:
		return "a number"
	case gjson.True, gjson.False:
		return "a boolean"
	case gjson.Null:
		return "null"
	}
	return "not JSON"
}
