package dataset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/suggest"
)

// The agent keys of an item (docs/agents.md): "tool_mocks" answer an
// agent's tool calls, "expected_trajectory" lists the calls it should make.

var (
	toolMockKeys     = []string{"name", "args", "output"}
	expectedCallKeys = []string{"name", "args"}
)

// parseToolMocks reads an item's "tool_mocks": a list of {"name", "args"?,
// "output"} objects. null is no mocks.
func parseToolMocks(val json.RawMessage) ([]evalrun.ToolMock, error) {
	return parseAgentList("tool_mocks", val, toolMockKeys, func(where string, o map[string]json.RawMessage, name string, args json.RawMessage) (evalrun.ToolMock, error) {
		out, ok := o["output"]
		if !ok {
			return evalrun.ToolMock{}, fmt.Errorf(`%s: missing "output" (the tool's result, any JSON value)`, where)
		}
		return evalrun.ToolMock{Name: name, Args: args, Output: out}, nil
	})
}

// parseExpectedTrajectory reads an item's "expected_trajectory": a list of
// {"name", "args"?} objects. null is absent; [] is "no call expected" and
// stays a non-nil empty list.
func parseExpectedTrajectory(val json.RawMessage) ([]evalrun.ExpectedCall, error) {
	return parseAgentList("expected_trajectory", val, expectedCallKeys, func(_ string, _ map[string]json.RawMessage, name string, args json.RawMessage) (evalrun.ExpectedCall, error) {
		return evalrun.ExpectedCall{Name: name, Args: args}, nil
	})
}

// parseAgentList reads key's list of tool objects (see agentList), checks
// each one's "name" and "args", and makes an element of each with mk
// (where names the object, e.g. tool_mocks[2]). null gives nil.
func parseAgentList[T any](key string, val json.RawMessage, keys []string,
	mk func(where string, o map[string]json.RawMessage, name string, args json.RawMessage) (T, error)) ([]T, error) {
	objs, err := agentList(key, val, keys)
	if err != nil || objs == nil {
		return nil, err
	}
	out := make([]T, len(objs))
	for i, o := range objs {
		where := fmt.Sprintf("%s[%d]", key, i)
		name, err := toolName(where, o)
		if err != nil {
			return nil, err
		}
		args, err := toolArgs(where, o)
		if err != nil {
			return nil, err
		}
		if out[i], err = mk(where, o, name, args); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// agentList decodes key's value as a list of objects with only the given
// keys. null gives nil; [] gives an empty non-nil list.
func agentList(key string, val json.RawMessage, keys []string) ([]map[string]json.RawMessage, error) {
	if string(bytes.TrimSpace(val)) == "null" {
		return nil, nil
	}
	var objs []map[string]json.RawMessage
	if err := json.Unmarshal(val, &objs); err != nil {
		var list []json.RawMessage
		if json.Unmarshal(val, &list) != nil {
			return nil, fmt.Errorf("%q must be a list of objects, got %s", key, kindOf(val))
		}
		for i, e := range list {
			if k := kindOf(e); k != "an object" {
				return nil, fmt.Errorf("%s[%d] must be an object, got %s", key, i, k)
			}
		}
		return nil, fmt.Errorf("%q: %v", key, err)
	}
	for i, o := range objs {
		if o == nil {
			return nil, fmt.Errorf("%s[%d] must be an object, got null", key, i)
		}
		for k := range o {
			known := false
			for _, kk := range keys {
				known = known || k == kk
			}
			if !known {
				hint := ""
				if s := suggest.Nearest(k, keys); s != "" {
					hint = fmt.Sprintf(" (did you mean %q?)", s)
				}
				return nil, fmt.Errorf("%s[%d]: unknown key %q%s; known keys: %s", key, i, k, hint, strings.Join(keys, ", "))
			}
		}
	}
	if objs == nil {
		objs = []map[string]json.RawMessage{}
	}
	return objs, nil
}

func toolName(where string, o map[string]json.RawMessage) (string, error) {
	var name string
	if err := json.Unmarshal(o["name"], &name); err != nil || name == "" {
		return "", fmt.Errorf(`%s: "name" must be a non-empty string (the tool's name)`, where)
	}
	return name, nil
}

// toolArgs returns the "args" of o: nil when absent or null, else a JSON
// object.
func toolArgs(where string, o map[string]json.RawMessage) (json.RawMessage, error) {
	a, ok := o["args"]
	if !ok || string(bytes.TrimSpace(a)) == "null" {
		return nil, nil
	}
	if k := kindOf(a); k != "an object" {
		return nil, fmt.Errorf(`%s: "args" must be a JSON object of arguments, got %s`, where, k)
	}
	return a, nil
}

// MarshalAgent returns the JSON a store keeps of an item's tool mocks and
// expected trajectory: nil for an absent one, so that stored rows and
// content hashes agree and [] stays apart from absent.
func MarshalAgent(it *evalrun.Item) (mocks, expected []byte, err error) {
	if it.ToolMocks != nil {
		if mocks, err = json.Marshal(it.ToolMocks); err != nil {
			return nil, nil, fmt.Errorf("tool_mocks: %v: %w", err, evalrun.ErrInvalid)
		}
	}
	if it.ExpectedTrajectory != nil {
		if expected, err = json.Marshal(it.ExpectedTrajectory); err != nil {
			return nil, nil, fmt.Errorf("expected_trajectory: %v: %w", err, evalrun.ErrInvalid)
		}
	}
	return mocks, expected, nil
}

// UnmarshalAgent is the inverse of [MarshalAgent]: it sets it's tool mocks
// and expected trajectory from stored JSON (nil leaves them absent).
func UnmarshalAgent(it *evalrun.Item, mocks, expected []byte) error {
	if mocks != nil {
		if err := json.Unmarshal(mocks, &it.ToolMocks); err != nil {
			return fmt.Errorf("stored tool_mocks: %w", err)
		}
		if it.ToolMocks == nil {
			it.ToolMocks = []evalrun.ToolMock{}
		}
	}
	if expected != nil {
		if err := json.Unmarshal(expected, &it.ExpectedTrajectory); err != nil {
			return fmt.Errorf("stored expected_trajectory: %w", err)
		}
		if it.ExpectedTrajectory == nil {
			it.ExpectedTrajectory = []evalrun.ExpectedCall{}
		}
	}
	return nil
}
