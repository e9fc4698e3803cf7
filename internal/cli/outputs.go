package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/internal/suggest"
)

// savedOutputs is the target of --outputs: it returns each item's saved
// output (and the agent's trajectory when the line has one) and calls
// nothing. An item without a saved output is an error of that item.
type savedOutputs struct {
	file         string
	outputs      map[string]json.RawMessage
	trajectories map[string]*evalrun.Trajectory // items whose line has "trajectory" or "steps"
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
	o := evalrun.Output{Value: out}
	if t := s.trajectories[item.ID]; t != nil {
		// A copy per execution: repeats and scorers never share one.
		c := *t
		c.Calls = slices.Clone(t.Calls)
		o.Trajectory = &c
	}
	return o, nil
}

// maxReplayedCalls bounds the tool calls of one line's "trajectory": far
// above what an agent makes for one item (the openai target stops after
// max_steps turns), low enough that a hostile file cannot make every
// repeat and scorer hold millions of calls (a line may be 16 MiB).
const maxReplayedCalls = evalrun.MaxTrajectoryCalls

// outputsKeys are the keys of a line of an --outputs file.
var outputsKeys = []string{"id", "output", "trajectory", "steps"}

// callKeys are the keys of a call of a line's "trajectory".
var callKeys = []string{"name", "args", "arguments", "output", "error", "mocked", "latency_ms"}

// readOutputs reads a JSONL file of {"id": ..., "output": ...} lines; a
// line may also carry an agent's "trajectory" (its tool calls) and "steps"
// (see parseTrajectory). A malformed line, a missing id or output, an
// unknown key, a value of the wrong type or a repeated id is an error
// naming the file and line (exit code 2). The lines' limits (length, depth)
// bound the trajectories too.
func readOutputs(path string) (*savedOutputs, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, invalidf("--outputs: %v", err)
	}
	defer f.Close()
	s := &savedOutputs{file: path, outputs: map[string]json.RawMessage{}, trajectories: map[string]*evalrun.Trajectory{}}
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
			if !slices.Contains(outputsKeys, k) {
				hint := ""
				if sug := suggest.Key(k, outputsKeys); sug != "" {
					hint = fmt.Sprintf("did you mean %q? ", sug)
				}
				return nil, bad("unknown key %q (%sa line is {\"id\": ..., \"output\": ...}, "+
					"with an agent's \"trajectory\" and \"steps\" optional)", k, hint)
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
		t, err := parseTrajectory(rec["trajectory"], rec["steps"])
		if err != nil {
			return nil, bad("item %q: %v", id, err)
		}
		s.outputs[id] = out
		if t != nil {
			s.trajectories[id] = t
		}
	}
	return s, nil
}

// outputsObject returns the keys of the JSON object raw with their values;
// a repeated key is an error, not a silent choice of the last one.
func outputsObject(raw []byte) (map[string]json.RawMessage, error) {
	rec, err := evalrun.ObjectKeys(raw)
	if errors.Is(err, evalrun.ErrNotObject) {
		return nil, errors.New(`not a JSON object (a line is {"id": ..., "output": ...})`)
	}
	return rec, err
}

// parseTrajectory returns the trajectory of a line from its "trajectory"
// (a list of calls {"name", "args" | "arguments", "output"?, "error"?,
// "mocked"?, "latency_ms"?}) and "steps" (a non-negative integer), nil when
// the line has neither. Arguments are an object or, as OpenAI sends them, a
// JSON string holding one; absent, they are {}. "steps" alone is an agent
// that called no tool.
func parseTrajectory(rawCalls, rawSteps json.RawMessage) (*evalrun.Trajectory, error) {
	if rawCalls == nil && rawSteps == nil {
		return nil, nil
	}
	t := &evalrun.Trajectory{Calls: []evalrun.ToolCall{}}
	if rawSteps != nil {
		var n json.Number
		steps, err := int64(0), json.Unmarshal(rawSteps, &n)
		if err == nil && jsonKind(rawSteps) != "a number" {
			err = errors.New("not a number") // json.Number takes "3", a string
		}
		if err == nil {
			steps, err = n.Int64()
		}
		if err != nil || steps < 0 || steps > math.MaxInt32 {
			return nil, fmt.Errorf(`"steps" must be a non-negative integer (the model turns), got %s`, snipJSON(rawSteps))
		}
		t.Steps = int(steps)
	}
	if rawCalls == nil {
		return t, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(rawCalls, &list) != nil || list == nil {
		return nil, fmt.Errorf(`"trajectory" must be a list of tool calls [{"name", "args", "output"}, ...], got %s`, jsonKind(rawCalls))
	}
	if len(list) > maxReplayedCalls {
		return nil, fmt.Errorf(`"trajectory" has %d calls, more than the limit of %d`, len(list), maxReplayedCalls)
	}
	t.Calls = make([]evalrun.ToolCall, 0, len(list))
	for i, raw := range list {
		c, err := parseCall(raw)
		if err != nil {
			return nil, fmt.Errorf("trajectory[%d]: %v", i, err)
		}
		t.Calls = append(t.Calls, c)
	}
	return t, nil
}

// parseCall returns one call of a line's "trajectory": a tool call as
// evalrun.ParseToolCall reads it, with the call's "mocked" and
// "latency_ms" as recorded; any other key is a mistake in the file.
func parseCall(raw json.RawMessage) (evalrun.ToolCall, error) {
	c, rest, err := evalrun.ParseToolCall(raw)
	if err != nil {
		return c, err
	}
	for k := range rest {
		if !slices.Contains(callKeys, k) {
			hint := ""
			if sug := suggest.Key(k, callKeys); sug != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", sug)
			}
			return c, fmt.Errorf("unknown key %q%s; known keys: %s", k, hint, strings.Join(callKeys, ", "))
		}
	}
	if m, ok := rest["mocked"]; ok && json.Unmarshal(m, &c.Mocked) != nil {
		return c, fmt.Errorf(`"mocked" must be true or false, got %s`, jsonKind(m))
	}
	if l, ok := rest["latency_ms"]; ok && string(l) != "null" {
		var ms float64
		if json.Unmarshal(l, &ms) != nil || ms < 0 {
			return c, fmt.Errorf(`"latency_ms" must be a non-negative number or null, got %s`, snipJSON(l))
		}
		c.LatencyMS = &ms
	}
	return c, nil
}

// jsonKind names the kind of a JSON value for an error message.
var jsonKind = evalrun.JSONKind

// snipJSON returns raw for an error message, cut at 40 bytes.
func snipJSON(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
