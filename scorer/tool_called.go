package scorer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/evalrun/evalrun"
)

// ToolCalledOptions configure [NewToolCalled].
type ToolCalledOptions struct {
	// Name defaults to "tool_called".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
	// Tool is the tool's name. Required.
	Tool string
	// Args, when set, is a JSON object the call's arguments must contain
	// ([evalrun.ArgsContain]); nil matches any arguments.
	Args json.RawMessage
	// Count, when set, requires exactly that many matching calls (≥ 0).
	Count *int
	// Never passes only when there is no matching call. It conflicts with
	// Count.
	Never bool
}

// ToolCalled scores 1 when the agent called a tool with arguments
// containing the given ones, and 0 otherwise; with a count, when it made
// exactly that many such calls; with never, when it made none. The reason
// says how many matching calls there were and lists the calls made (the
// first few). An output without a trajectory (a target that is not an
// agent) is a permanent error matching [ErrNoTrajectory]. Safe for
// concurrent use.
type ToolCalled struct {
	base
	tool  string
	args  json.RawMessage
	count int // -1: at least one
	never bool
}

var (
	_ evalrun.Scorer      = (*ToolCalled)(nil)
	_ evalrun.Thresholder = (*ToolCalled)(nil)
)

// NewToolCalled returns a tool_called scorer. A missing tool, arguments
// that are not a JSON object, a negative count and never with a count are
// a *[ConfigError] naming the key.
func NewToolCalled(opts ToolCalledOptions) (*ToolCalled, error) {
	b, err := newBase(KindToolCalled, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(opts.Tool) == "" {
		return nil, b.configError("tool", errors.New("required: the name of the tool to look for"))
	}
	s := &ToolCalled{base: b, tool: opts.Tool, count: -1, never: opts.Never}
	if args := bytes.TrimSpace(opts.Args); len(args) > 0 {
		if args[0] != '{' || !json.Valid(args) {
			return nil, b.configError("args", errors.New("must be a mapping of argument names to values"))
		}
		s.args = args
	}
	if opts.Count != nil {
		if opts.Never {
			return nil, b.configError("never", errors.New("conflicts with count; never: true is count: 0, give one of them"))
		}
		if *opts.Count < 0 {
			return nil, b.configError("count", fmt.Errorf("%d is negative; want a whole number of calls, 0 or more", *opts.Count))
		}
		s.count = *opts.Count
	}
	return s, nil
}

func buildToolCalled(c Config, b base, _ Deps) (evalrun.Scorer, error) {
	var args json.RawMessage
	if c.Args != nil {
		data, err := schemaJSON(c.Args)
		if err != nil || data[0] != '{' {
			return nil, b.configError("args", errors.New("must be a mapping of argument names to values, e.g. args: {city: Paris}"))
		}
		args = data
	}
	return NewToolCalled(ToolCalledOptions{Name: b.name, Threshold: &b.threshold, Tool: c.Tool, Args: args,
		Count: c.Count, Never: c.Never})
}

// Score counts the matching calls of in.Trajectory.
func (s *ToolCalled) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	if in.Trajectory == nil {
		return evalrun.Score{}, noTrajectory(KindToolCalled)
	}
	calls := in.Trajectory.Calls
	matching, ofTool := 0, 0
	for _, c := range calls {
		if c.Name != s.tool {
			continue
		}
		ofTool++
		if evalrun.ArgsContain(c.Args, s.args) {
			matching++
		}
	}
	what := shortName(s.tool)
	if s.args != nil {
		what += " with args containing " + shortArgs(s.args)
	}
	var ok bool
	var want string
	switch {
	case s.never:
		ok, want = matching == 0, "want never"
	case s.count >= 0:
		ok, want = matching == s.count, fmt.Sprintf("want exactly %d", s.count)
	default:
		ok, want = matching > 0, "want at least 1"
	}
	reason := fmt.Sprintf("%s called %s; %s", what, times(matching), want)
	if s.args != nil && ofTool > matching {
		reason += fmt.Sprintf(" (%s called %s in all)", shortName(s.tool), times(ofTool))
	}
	return passFail(ok, reason+"; "+callsMade(calls)), nil
}

// times returns "0 times", "1 time", "2 times".
func times(n int) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}

// callsMade lists the first calls of a trajectory for a reason.
func callsMade(calls []evalrun.ToolCall) string {
	if len(calls) == 0 {
		return "no tool was called"
	}
	shown := calls[:min(len(calls), reasonListMax)]
	list := make([]string, len(shown))
	for i, c := range shown {
		list[i] = callString(c)
	}
	s := strings.Join(list, ", ")
	if len(calls) > len(shown) {
		s += fmt.Sprintf(" and %d more", len(calls)-len(shown))
	}
	return fmt.Sprintf("calls made (%d): %s", len(calls), s)
}
