package evalrun

import (
	"encoding/json"
	"strings"
	"testing"
)

// ParseToolCall reads the keys it owns and hands every other one back.
func TestParseToolCall(t *testing.T) {
	c, rest, err := ParseToolCall(json.RawMessage(`{"id": "c1", "name": "search", "arguments": "{\"q\": \"x\"}", "output": null, "error": "HTTP 503", "mocked": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "search" || string(c.Args) != `{"q": "x"}` || c.Output != nil || c.Error != "HTTP 503" || c.Mocked {
		t.Errorf("call = %+v", c)
	}
	if len(rest) != 2 || string(rest["id"]) != `"c1"` || string(rest["mocked"]) != "true" {
		t.Errorf("rest = %v, want id and mocked", rest)
	}
	if c, _, err := ParseToolCall(json.RawMessage(`{"name": "noop"}`)); err != nil || string(c.Args) != "{}" {
		t.Errorf("no arguments: %+v, %v; want {}", c, err)
	}
	bad := map[string]string{
		`[1]`:                        `is an array, want an object`,
		`{"name": "a",`:              `malformed JSON`,
		`{"args": {}}`:               `"name" is missing`,
		`{"name": ""}`:               `"name" is blank`,
		`{"name": "a", "name": "b"}`: `duplicate key "name"`,
		`{"name": "a", "args": {}, "arguments": "{}"}`:  `has both "args" and "arguments"`,
		`{"name": "a", "args": 3}`:                      `"args" is a number`,
		`{"name": "a", "arguments": "[1]"}`:             `"arguments" holds an array`,
		`{"name": "a", "arguments": "{x"}`:              `arguments "{x" are not valid JSON`,
		`{"name": "a", "error": 7}`:                     `"error" is a number, want a string`,
		`{"name": "` + strings.Repeat("n", 1025) + `"}`: `"name" is 1025 bytes, at most 1024`,
	}
	for in, want := range bad {
		if _, _, err := ParseToolCall(json.RawMessage(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseToolCall(%.40s) = %v, want an error saying %q", in, err, want)
		}
	}
}

func TestCallCounts(t *testing.T) {
	tr := &Trajectory{Calls: []ToolCall{{Name: "a", Error: "boom"}, {Name: "b", Mocked: true}, {Name: "c", Error: "x", Mocked: true}, {Name: "d"}}}
	if failed, mocked := tr.CallCounts(); failed != 2 || mocked != 2 {
		t.Errorf("CallCounts = %d failed, %d mocked; want 2, 2", failed, mocked)
	}
}
