package report

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
)

// This file holds the agent side of the report (schema_version 3): the
// per-item trajectory, the run's "agent" block and how both are shown to
// people. The contract is PRODUCT.md, "Agents: conversations, tools and
// trajectories".

// AgentSummary is the "agent" block (schema_version 3): the trajectories of
// the results of an agent. The report has one only when some result
// recorded a trajectory.
type AgentSummary struct {
	// Items is the number of results with a trajectory, the denominator of
	// MeanToolCalls.
	Items int `json:"items"`
	// MeanSteps is the mean number of model turns over the results that
	// reported steps (StepsReported of them); nil when none did (a
	// black-box agent that does not say).
	MeanSteps *float64 `json:"mean_steps"`
	// StepsReported is the number of results with steps > 0.
	StepsReported int `json:"steps_reported"`
	// MeanToolCalls is ToolCalls / Items.
	MeanToolCalls float64 `json:"mean_tool_calls"`
	// ToolCalls is the number of tool calls over all trajectories.
	ToolCalls int `json:"tool_calls"`
	// ToolErrors is the number of those calls that recorded an error.
	ToolErrors int `json:"tool_errors"`
	// MockedCalls is the number of those calls the item's tool_mocks
	// answered.
	MockedCalls int `json:"mocked_calls"`
}

// TrajectoryCall is one tool call in an item row's trajectory: an
// [evalrun.ToolCall] written with every key present, null where there is
// no value (as the rest of the item row).
type TrajectoryCall struct {
	Name string `json:"name"`
	// Args is the call's arguments as recorded ({} when none).
	Args json.RawMessage `json:"args"`
	// Output is the tool's result; nil (null) when the tool failed or the
	// agent did not report it.
	Output json.RawMessage `json:"output"`
	// Error is the tool's failure; nil when it did not fail.
	Error  *string `json:"error"`
	Mocked bool    `json:"mocked"`
	// LatencyMS is nil when not measured.
	LatencyMS *float64 `json:"latency_ms"`
}

// agentAcc accumulates the [AgentSummary]: a few counters, whatever the
// size of the run.
type agentAcc struct {
	items, stepsN         int
	steps                 int64
	calls, errors, mocked int
}

func (a *agentAcc) add(t *evalrun.Trajectory) {
	a.items++
	if t.Steps > 0 {
		a.stepsN++
		a.steps += int64(t.Steps)
	}
	a.calls += len(t.Calls)
	failed, mocked := t.CallCounts()
	a.errors += failed
	a.mocked += mocked
}

func (a *agentAcc) summary() *AgentSummary {
	if a.items == 0 {
		return nil
	}
	s := &AgentSummary{Items: a.items, StepsReported: a.stepsN, ToolCalls: a.calls, ToolErrors: a.errors, MockedCalls: a.mocked,
		MeanToolCalls: float64(a.calls) / float64(a.items)}
	if a.stepsN > 0 {
		s.MeanSteps = floatPtr(float64(a.steps) / float64(a.stepsN))
	}
	return s
}

// trajectoryRow converts a recorded trajectory into the row's calls, never
// nil: [] for an agent that called nothing. Raw values are shared with t
// when they are valid JSON.
func trajectoryRow(t *evalrun.Trajectory) []TrajectoryCall {
	out := make([]TrajectoryCall, len(t.Calls))
	for i := range t.Calls {
		c := &t.Calls[i]
		tc := TrajectoryCall{Name: c.Name, Args: validJSON(c.Args), Output: validJSON(c.Output), Mocked: c.Mocked, LatencyMS: c.LatencyMS}
		if tc.Args == nil {
			tc.Args = json.RawMessage("{}")
		}
		if c.Error != "" {
			msg := c.Error
			tc.Error = &msg
		}
		out[i] = tc
	}
	return out
}

// agentLine is the summary line of the agent block, for the terminal and
// Markdown: "40 items, mean 2.3 steps, 1.8 tool calls per item (3 tool
// errors, 70 mocked)".
func agentLine(a *AgentSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d item%s, ", a.Items, plural(a.Items))
	if a.MeanSteps != nil {
		fmt.Fprintf(&b, "mean %.1f steps, ", *a.MeanSteps)
	} else {
		b.WriteString("steps not reported, ")
	}
	fmt.Fprintf(&b, "%.1f tool calls per item (%d tool error%s, %d mocked)",
		a.MeanToolCalls, a.ToolErrors, plural(a.ToolErrors), a.MockedCalls)
	return b.String()
}

// The bounds of what a JUnit problem shows of an agent item: the
// conversation's messages and the trajectory's calls, each cut to a line
// of at most maxShownValue runes, at most maxShownEntries of each.
const (
	maxShownValue   = 300
	maxShownEntries = 50
)

// inputText renders an item's input for people: a conversation as one
// "role: content" line per message, anything else as its text (a JSON
// string's contents, other values compact). Every line is cut to
// [maxShownValue] runes and at most [maxShownEntries] messages are shown.
func inputText(input json.RawMessage) string {
	msgs, ok := evalrun.Conversation(input)
	if !ok {
		return truncate(evalrun.Text(input), maxShownValue)
	}
	var b strings.Builder
	for i, m := range msgs {
		if i == maxShownEntries {
			fmt.Fprintf(&b, "… and %d more messages\n", len(msgs)-i)
			break
		}
		fmt.Fprintf(&b, "%s: %s\n", m.Role, truncate(m.Content, maxShownValue))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// trajectoryText renders an item row's trajectory for people: one line per
// call, "1. name {args} → output" (or "→ error: …"), marked "(mocked)"
// and with its latency, each value cut to [maxShownValue] runes and at
// most [maxShownEntries] calls shown.
func trajectoryText(steps int, calls []TrajectoryCall) string {
	var b strings.Builder
	fmt.Fprintf(&b, "trajectory: %d tool call%s", len(calls), plural(len(calls)))
	if steps > 0 {
		fmt.Fprintf(&b, " in %d step%s", steps, plural(steps))
	}
	for i := range calls {
		if i == maxShownEntries {
			fmt.Fprintf(&b, "\n… and %d more calls", len(calls)-i)
			break
		}
		c := &calls[i]
		fmt.Fprintf(&b, "\n%d. %s %s", i+1, truncate(c.Name, maxLabelBytes), valueLine(c.Args))
		if c.Error != nil {
			fmt.Fprintf(&b, " → error: %s", truncate(*c.Error, maxShownValue))
		} else if c.Output != nil {
			fmt.Fprintf(&b, " → %s", valueLine(c.Output))
		}
		if c.Mocked {
			b.WriteString(" (mocked)")
		}
		if c.LatencyMS != nil {
			fmt.Fprintf(&b, " [%s]", msText(c.LatencyMS))
		}
	}
	return b.String()
}

// valueLine shows a JSON value on one line of at most [maxShownValue]
// runes: a string's text, other values compact. Of a large value only its
// beginning is read (shown as written, its space collapsed), so that a
// 100 MB output costs no more than a small one.
func valueLine(v json.RawMessage) string {
	const readAtMost = 16 * maxShownValue
	if len(v) > readAtMost {
		return truncate(string(bounded.Prefix(v, readAtMost)), maxShownValue)
	}
	return truncate(evalrun.Text(v), maxShownValue)
}

// agentDetails is what a failing JUnit test case adds about an agent item:
// its conversation input and its trajectory, "" for a row that has
// neither (a plain item keeps its text as before version 3).
func agentDetails(it *ItemRow) string {
	var parts []string
	if _, ok := evalrun.Conversation(it.Input); ok {
		parts = append(parts, "conversation:\n"+inputText(it.Input))
	}
	if it.Trajectory != nil {
		parts = append(parts, trajectoryText(it.Steps, it.Trajectory))
	}
	return bounded.Cut(strings.Join(parts, "\n\n"), maxProblemBytes/2)
}
