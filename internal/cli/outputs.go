package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
)

// savedOutputs is the target of --outputs: it returns each item's saved
// output and calls nothing. An item without a saved output is an error of
// that item.
type savedOutputs struct {
	file    string
	outputs map[string]json.RawMessage
}

var _ evalrun.Replayer = (*savedOutputs)(nil)

// Replays marks saved outputs as recorded: their results carry no latency.
func (s *savedOutputs) Replays() {}

// Execute returns the saved output of item.
func (s *savedOutputs) Execute(_ context.Context, item *evalrun.Item) (evalrun.Output, error) {
	out, ok := s.outputs[item.ID]
	if !ok {
		return evalrun.Output{}, evalrun.Permanent(fmt.Errorf("no saved output for item %q in %s", item.ID, s.file))
	}
	return evalrun.Output{Value: out}, nil
}

// readOutputs reads a JSONL file of {"id": ..., "output": ...} lines. A
// malformed line, a missing id or output, an unknown key or a repeated id
// is an error naming the file and line (exit code 2).
func readOutputs(path string) (*savedOutputs, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, invalidf("--outputs: %v", err)
	}
	defer f.Close()
	s := &savedOutputs{file: path, outputs: map[string]json.RawMessage{}}
	// The saved outputs arrive like a dataset, from whoever produced them:
	// the same limits hold (line length, UTF-8, depth).
	lines := dataset.NewLines(f, path, 0)
	for {
		raw, line, err := lines.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, invalidf("--outputs: %w", err)
		}
		if len(raw) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return invalidf("%s:%d: %s", path, line, fmt.Sprintf(format, args...))
		}
		rec, err := outputsObject(raw)
		if err != nil {
			return nil, bad("%v", err)
		}
		for k := range rec {
			if k != "id" && k != "output" {
				return nil, bad("unknown key %q (a line is {\"id\": ..., \"output\": ...})", k)
			}
		}
		var id string
		if err := json.Unmarshal(rec["id"], &id); err != nil || id == "" {
			var n json.Number
			if json.Unmarshal(rec["id"], &n) != nil {
				return nil, bad("missing or invalid \"id\" (a string or a number)")
			}
			id = n.String()
		}
		out := rec["output"]
		if len(out) == 0 || string(out) == "null" {
			return nil, bad("missing \"output\" for item %q", id)
		}
		if _, dup := s.outputs[id]; dup {
			return nil, bad("item %q appears twice", id)
		}
		s.outputs[id] = out
	}
	return s, nil
}

// outputsObject returns the keys of the JSON object raw with their values;
// a repeated key is an error, not a silent choice of the last one.
func outputsObject(raw []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("malformed JSON: %v", err)
		}
		return nil, errors.New(`not a JSON object (a line is {"id": ..., "output": ...})`)
	}
	rec := map[string]json.RawMessage{}
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
		if _, dup := rec[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		rec[key] = val
	}
	if _, err := dec.Token(); err != nil || dec.More() {
		var v any
		return nil, fmt.Errorf("malformed JSON: %v", json.Unmarshal(raw, &v))
	}
	return rec, nil
}
