package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/evalrun/evalrun"
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
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return invalidf("%s:%d: %s", path, line, fmt.Sprintf(format, args...))
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, bad("not a JSON object: %v", err)
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
	if err := sc.Err(); err != nil {
		return nil, invalidf("--outputs %s: %v", path, err)
	}
	return s, nil
}
