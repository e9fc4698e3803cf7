package web

import (
	"encoding/json"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/bounded"
)

// This file holds what the viewer shows of agents: the run's agent figures,
// an item's trajectory as a timeline and a conversation input.

// Bounds of a trajectory on the item page. An agent's calls and outputs are
// model- or tool-controlled and may be huge (a black-box agent reports any
// number of calls): the page shows the first maxCallsShown calls, each value
// (arguments, output, error) cut at maxCallValueBytes, and stops showing
// values once trajectoryBudget bytes of them are on the page (the calls
// after that show their name, status and latency only). The item's JSON
// holds everything.
const (
	maxCallsShown     = 1000
	maxCallValueBytes = 16 << 10
	trajectoryBudget  = 1 << 20
)

// Bounds of a conversation input on the item page, as for a trajectory.
const (
	maxMessagesShown   = 500
	maxMessageBytes    = 16 << 10
	conversationBudget = 1 << 20
)

// trajectoryView is an item's trajectory as the item page draws it.
type trajectoryView struct {
	Steps int
	Calls []callView
	// Total is the number of calls; More those not shown.
	Total, More    int
	Errors, Mocked int
	// Partial is set when the target failed: the trajectory is what the
	// agent did in its last attempt before failing.
	Partial bool
}

// callView is one tool call of the timeline.
type callView struct {
	N      int // 1-based position
	Name   string
	Args   value
	Output value
	Error  string
	Mocked bool
	// Latency is the call's latency as text, "—" when not measured.
	Latency string
	// Omitted is set when the page's budget for values was spent: the
	// call's arguments and output are only in the item's JSON.
	Omitted bool
}

// newTrajectoryView bounds t for the page; nil for a nil t (not an agent).
func newTrajectoryView(t *evalrun.Trajectory, failed bool) *trajectoryView {
	if t == nil {
		return nil
	}
	v := &trajectoryView{Steps: t.Steps, Total: len(t.Calls), Partial: failed}
	v.Errors, v.Mocked = t.CallCounts()
	shown := t.Calls[:min(len(t.Calls), maxCallsShown)]
	v.More = len(t.Calls) - len(shown)
	v.Calls = make([]callView, len(shown))
	budget := trajectoryBudget
	for i := range shown {
		c := &shown[i]
		cv := callView{N: i + 1, Name: bounded.Cut(c.Name, maxLabelBytes), Mocked: c.Mocked, Latency: callLatency(c.LatencyMS)}
		if budget <= 0 {
			cv.Omitted = true
			v.Calls[i] = cv
			continue
		}
		cv.Args = prettyN(c.Args, maxCallValueBytes)
		cv.Error = bounded.Cut(c.Error, maxCallValueBytes)
		cv.Output = value{Empty: true}
		if c.Error == "" {
			cv.Output = prettyN(c.Output, maxCallValueBytes)
		}
		budget -= len(cv.Args.Text) + len(cv.Error) + len(cv.Output.Text)
		v.Calls[i] = cv
	}
	return v
}

// callLatency writes a tool call's latency: mocked calls take microseconds,
// which the page's usual "0 ms" would hide.
func callLatency(p *float64) string {
	switch {
	case p == nil:
		return "—"
	case *p < 1:
		return "< 1 ms"
	}
	return msText(p)
}

// conversationView is a conversation input as the item page shows it.
type conversationView struct {
	Messages []messageView
	// Total is the number of messages; More those not shown.
	Total, More int
}

type messageView struct {
	Role    string
	Content value
	// Omitted is set when the page's budget was spent.
	Omitted bool
}

// newConversationView returns the view of input when it is a conversation
// (evalrun.Conversation), else nil.
func newConversationView(input json.RawMessage) *conversationView {
	msgs, ok := evalrun.Conversation(input)
	if !ok {
		return nil
	}
	shown := msgs[:min(len(msgs), maxMessagesShown)]
	v := &conversationView{Total: len(msgs), More: len(msgs) - len(shown), Messages: make([]messageView, len(shown))}
	budget := conversationBudget
	for i, m := range shown {
		mv := messageView{Role: m.Role}
		if budget <= 0 {
			mv.Omitted = true
		} else {
			mv.Content = textValue(m.Content, maxMessageBytes)
			budget -= len(mv.Content.Text)
		}
		v.Messages[i] = mv
	}
	return v
}
