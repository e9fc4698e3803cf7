package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"go.opentelemetry.io/otel/codes"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/tracing"
	"github.com/evalrun/evalrun/target"
)

// This file is the chat target's agent: its tools and the tool-calling
// loop. The contract is PRODUCT.md, "Agents: conversations, tools and
// trajectories".

// Bounds of an agent. A suite comes from people the runner may not trust
// and a model's replies from a program: both are bounded on purpose.
const (
	// DefaultMaxSteps is the bound on model turns when max_steps is unset.
	DefaultMaxSteps = 10
	// MaxMaxSteps is the largest max_steps: a hundred turns is far past
	// any agent worth evaluating, and each turn resends the conversation.
	MaxMaxSteps = 100
	// MaxTools is the most tools a target may offer, OpenAI's own limit.
	MaxTools = 128
	// MaxToolCallsPerTurn is the most tool calls one model turn may make;
	// more fails the item (a model stuck repeating itself would otherwise
	// start that many tool runs at once).
	MaxToolCallsPerTurn = 64
	// MaxConversationBytes bounds what one item's loop adds to the
	// conversation: the calls' arguments and the tools' results. Each
	// turn resends the conversation and the trajectory keeps it, while a
	// model reply and a run tool's output are bounded only one at a time
	// (64 calls of 10 MB a turn, for 100 turns, was 64 GB for one item).
	// 32 MiB is far past any model's context window (a million tokens
	// are some 4 MB of text).
	MaxConversationBytes = 32 << 20
)

// Tool is a function the model of a [ChatTarget] may call.
type Tool struct {
	// Name is what the model calls the tool, matching
	// ^[a-zA-Z0-9_-]{1,64}$ (OpenAI's rule). Required and unique.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments object; nil means
	// the tool takes none. Arguments that do not match it go back to the
	// model as an error.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Run answers the calls the item's tool_mocks do not: its input is the
	// call's arguments object, its output (as text) the tool's result. Nil
	// means none: an unmocked call fails the item.
	Run evalrun.Target `json:"-"`
}

// toolNamePattern is OpenAI's rule for function names.
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// tool is a validated Tool as the loop uses it.
type tool struct {
	name   string
	schema *jsonschema.Schema // nil: the arguments are not checked
	run    evalrun.Target
}

// ValidateTools checks tool definitions as [NewChatTarget] does and
// returns every problem, each a *[target.ConfigError] naming its key
// (tools[1].parameters), joined with errors.Join; nil when they are fine.
// A tool's run target is not checked: it is built already.
func ValidateTools(ts []Tool) error {
	_, err := compileTools(ts)
	return err
}

// compileTools validates ts and compiles their parameter schemas. The error
// joins a *target.ConfigError per problem (see ValidateTools).
func compileTools(ts []Tool) ([]tool, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	if len(ts) > MaxTools {
		return nil, &target.ConfigError{Key: "tools", Err: fmt.Errorf("%d tools, more than the limit of %d", len(ts), MaxTools)}
	}
	out := make([]tool, len(ts))
	seen := make(map[string]int, len(ts))
	var errs []error
	for i, t := range ts {
		key := fmt.Sprintf("tools[%d]", i)
		switch j, dup := seen[t.Name]; {
		case t.Name == "":
			errs = append(errs, &target.ConfigError{Key: key + ".name", Err: errors.New("required")})
		case !toolNamePattern.MatchString(t.Name):
			errs = append(errs, &target.ConfigError{Key: key + ".name", Err: fmt.Errorf("%q is not a tool name: use 1 to 64 letters, digits, _ or -", t.Name)})
		case dup:
			errs = append(errs, &target.ConfigError{Key: key + ".name", Err: fmt.Errorf("duplicate tool name %q (tools[%d] has it)", t.Name, j)})
		default:
			seen[t.Name] = i
		}
		out[i] = tool{name: t.Name, run: t.Run}
		if t.Parameters != nil {
			sch, err := compileParameters(t.Parameters)
			if err != nil {
				errs = append(errs, &target.ConfigError{Key: key + ".parameters", Err: err})
			}
			out[i].schema = sch
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// compileParameters compiles a tool's parameters schema. It must be a
// JSON object; the arguments of a call are an object, so a "type" other
// than "object" could never match. References to other documents are
// refused: the schema is sent to the model as it is.
func compileParameters(params json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be a JSON Schema object, e.g. {type: object, properties: {city: {type: string}}}")
	}
	if ty, ok := obj["type"].(string); ok && ty != "object" {
		return nil, fmt.Errorf("type must be \"object\" (a tool's arguments are an object), got %q", ty)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	url := "urn:evalrun:tool"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %s", schemaErrorText(err))
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %s", schemaErrorText(err))
	}
	return sch, nil
}

// refusingLoader loads no document: a tool's schema must be whole.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("a tool's parameters cannot refer to another document (%s): write the schema out", url)
}

// schemaErrorText returns a schema library error on one line, cut short:
// the innermost causes of a nested validation report ("at '/city': got
// number, want string"), else the message with its lines joined.
func schemaErrorText(err error) string {
	lines := strings.Split(err.Error(), "\n")
	var leaves []string
	for i := 1; i < len(lines); i++ {
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		if i+1 < len(lines) && len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > indent {
			continue // a cause follows, more indented
		}
		leaves = append(leaves, strings.TrimPrefix(strings.TrimSpace(lines[i]), "- "))
	}
	text := strings.Join(leaves, "; ")
	if text == "" {
		text = strings.Join(strings.Fields(err.Error()), " ")
	}
	return snippet([]byte(text))
}

// toolDefinitions encodes the tools as a request's "tools".
func toolDefinitions(ts []Tool) (json.RawMessage, error) {
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	type definition struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	defs := make([]definition, len(ts))
	for i, t := range ts {
		defs[i] = definition{Type: "function", Function: function{Name: t.Name, Description: t.Description, Parameters: t.Parameters}}
	}
	return json.Marshal(defs)
}

// agentRun is the state of one item's tool-calling loop (one attempt).
type agentRun struct {
	t      *ChatTarget
	item   *evalrun.Item
	traj   *evalrun.Trajectory
	tokens tokenCount
	// grown is the bytes of arguments and tool results the loop has added
	// to the conversation (see MaxConversationBytes).
	grown int

	// mocks is the item's tool_mocks with the Args of each called tool's
	// mocks made canonical once (see mockFor); nil until the first call.
	mocks      *evalrun.Item
	canonTools []string

	// sink is the engine's, when there is one: the loop publishes its
	// trajectory to it so that an item its deadline ends still shows
	// what the agent did (see evalrun.TrajectorySink).
	sink *evalrun.TrajectorySink
}

// timedOutCall is the error a published trajectory gives a call still
// running: the published copy is kept only when the item's deadline ends
// the attempt before the loop returns.
const timedOutCall = "no result: the attempt's time ran out while the tool ran"

// publish gives the sink a copy of the trajectory so far; the calls at the
// indexes running are recorded as cut short by the deadline.
func (a *agentRun) publish(running ...int) {
	if a.sink == nil {
		return
	}
	calls := slices.Clone(a.traj.Calls)
	for _, i := range running {
		calls[i].Output, calls[i].Error, calls[i].LatencyMS = nil, timedOutCall, nil
	}
	a.sink.Publish(&evalrun.Trajectory{Steps: a.traj.Steps, Calls: calls})
}

// mockFor is item.MockFor over the item's mocks with their arguments
// canonical: MockFor then canonicalizes only the call's arguments, not
// every mock's at every call.
func (a *agentRun) mockFor(name string, args json.RawMessage) (*evalrun.ToolMock, bool) {
	if len(a.item.ToolMocks) == 0 {
		return nil, false
	}
	if a.mocks == nil {
		a.mocks = &evalrun.Item{ToolMocks: slices.Clone(a.item.ToolMocks)}
	}
	if !slices.Contains(a.canonTools, name) {
		a.canonTools = append(a.canonTools, name)
		for i := range a.mocks.ToolMocks {
			m := &a.mocks.ToolMocks[i]
			if m.Name != name || m.Args == nil {
				continue
			}
			if c, err := evalrun.Canonical(m.Args); err == nil {
				m.Args = c
			}
		}
	}
	return a.mocks.MockFor(name, args)
}

// runAgent runs the tool-calling loop from req, the item's first request:
// model turn, tool calls answered (concurrently), model turn again, until
// a reply without tool calls, whose text is the output. Every error
// carries the usage and the trajectory so far; a transient one makes the
// engine retry the whole item, which starts the conversation again.
func (t *ChatTarget) runAgent(ctx context.Context, item *evalrun.Item, req *chatRequest) (evalrun.Output, error) {
	a := &agentRun{t: t, item: item, traj: &evalrun.Trajectory{Calls: []evalrun.ToolCall{}}, sink: evalrun.TrajectorySinkOf(ctx)}
	for {
		resp, status, err := t.send(ctx, req)
		if err != nil {
			return evalrun.Output{}, a.fail(err)
		}
		a.traj.Steps++
		a.tokens.add(resp)
		if len(resp.Choices) == 0 || len(resp.Choices[0].Message.ToolCalls) == 0 {
			text, err := finalText(resp, status, evalrun.Usage{})
			if err != nil {
				return evalrun.Output{}, a.fail(err)
			}
			return evalrun.Output{Value: evalrun.String(text), Usage: a.tokens.usage(t.price), Trajectory: a.traj}, nil
		}
		msg := &resp.Choices[0].Message
		calls := msg.ToolCalls
		if len(calls) > MaxToolCallsPerTurn {
			return evalrun.Output{}, a.fail(evalrun.Errorf(evalrun.ErrorPermanent,
				"model turn %d made %d tool calls, more than the limit of %d per turn", a.traj.Steps, len(calls), MaxToolCallsPerTurn))
		}
		if a.traj.Steps >= t.maxSteps {
			a.unanswered(calls)
			return evalrun.Output{}, a.fail(evalrun.Errorf(evalrun.ErrorPermanent,
				"the model still called tools at turn %d of max_steps %d: raise max_steps or look at the trajectory for a loop", a.traj.Steps, t.maxSteps))
		}
		contents, err := a.answer(ctx, calls)
		if ctx.Err() != nil {
			return evalrun.Output{}, a.fail(target.ClassifyTransport(fmt.Errorf("openai: %w", context.Cause(ctx))))
		}
		if err != nil {
			return evalrun.Output{}, a.fail(err)
		}
		for i := range calls {
			a.grown += len(calls[i].Function.Arguments) + len(contents[i])
		}
		if a.grown > t.maxConversation {
			return evalrun.Output{}, a.fail(evalrun.Errorf(evalrun.ErrorPermanent,
				"at turn %d the tool calls and their results reached %d bytes, more than the limit of %d per item: "+
					"make the tools return less or look at the trajectory for a loop", a.traj.Steps, a.grown, t.maxConversation))
		}
		a.publish()
		normalizeCalls(calls, a.traj.Steps)
		req.Messages = append(req.Messages, chatMessage{Role: "assistant", Content: msg.Content, ToolCalls: calls})
		for i := range calls {
			req.Messages = append(req.Messages, chatMessage{Role: "tool", Content: &contents[i], ToolCallID: calls[i].ID})
		}
	}
}

// fail returns err carrying the usage and the trajectory so far.
func (a *agentRun) fail(err error) error {
	var e *evalrun.Error
	if !errors.As(err, &e) {
		e = &evalrun.Error{Kind: evalrun.KindOf(err), Err: err}
		err = e
	}
	e.Usage = a.tokens.usage(a.t.price)
	e.Trajectory = a.traj
	return err
}

// unanswered records calls the loop will not answer (past max_steps).
func (a *agentRun) unanswered(calls []toolCall) {
	msg := fmt.Sprintf("not answered: the item reached max_steps (%d)", a.t.maxSteps)
	for i := range calls {
		args, err := evalrun.ParseArguments(calls[i].Function.Arguments)
		if err != nil {
			args = rawArguments(calls[i].Function.Arguments)
		}
		a.traj.Calls = append(a.traj.Calls, evalrun.ToolCall{Name: calls[i].Function.Name, Args: args, Error: msg})
	}
}

// answer answers the tool calls of one model turn, appending their records
// to the trajectory in the order the model listed them, and returns the
// content of each call's tool message. Calls answered by a run target run
// concurrently; mocks and refusals are answered at once. The error is the
// first call (in order) that fails the item: a mocked tool no mock
// matches, or a tool with neither a mock nor a run target.
func (a *agentRun) answer(ctx context.Context, calls []toolCall) ([]string, error) {
	base := len(a.traj.Calls)
	a.traj.Calls = append(a.traj.Calls, make([]evalrun.ToolCall, len(calls))...)
	recs := a.traj.Calls[base:]
	contents := make([]string, len(calls))
	latencies := make([]float64, len(calls))
	type pending struct {
		i  int
		tl *tool
	}
	var runBuf [4]pending
	runs := runBuf[:0]
	var fatal error
	clock := a.t.cl.clock
	for i := range calls {
		c, rec := &calls[i], &recs[i]
		rec.Name = c.Function.Name
		start := clock.Now()
		args, tl, err := a.prepare(c)
		rec.Args = args
		if err != nil {
			rec.Error = err.Error()
			contents[i] = "error: " + rec.Error
		} else {
			m, mocked := a.mockFor(tl.name, args)
			switch {
			case m != nil:
				rec.Output, rec.Mocked = m.Output, true
				contents[i] = evalrun.Text(m.Output)
			case mocked:
				err = fmt.Errorf("tool %q has tool_mocks on this item, but none matches the arguments %s", tl.name, argsText(args))
			case tl.run != nil:
				runs = append(runs, pending{i, tl})
				continue // its latency is the run's
			default:
				err = fmt.Errorf("tool %q was called with arguments %s, but the item has no tool_mocks for it and the tool has no run target", tl.name, argsText(args))
			}
			if err != nil {
				rec.Error = err.Error()
				if fatal == nil {
					fatal = evalrun.Permanent(err)
				}
			}
		}
		latencies[i] = msSince(clock, start)
		rec.LatencyMS = &latencies[i]
	}
	if fatal != nil {
		// The item fails: the run targets are not started.
		for _, r := range runs {
			recs[r.i].Error = "not run: another call of the turn failed the item"
		}
		return contents, fatal
	}
	if len(runs) > 0 && a.sink != nil {
		running := make([]int, len(runs))
		for j, r := range runs {
			running[j] = base + r.i
		}
		a.publish(running...)
	}
	switch len(runs) {
	case 0:
	case 1:
		r := runs[0]
		a.run(ctx, r.tl, &recs[r.i], &contents[r.i], &latencies[r.i])
	default:
		var wg sync.WaitGroup
		for _, r := range runs[1:] {
			wg.Go(func() { a.run(ctx, r.tl, &recs[r.i], &contents[r.i], &latencies[r.i]) })
		}
		r := runs[0]
		a.run(ctx, r.tl, &recs[r.i], &contents[r.i], &latencies[r.i])
		wg.Wait()
	}
	return contents, nil
}

// prepare parses and checks a call: its tool must be one of the target's
// and its arguments JSON matching the tool's parameters. The error, sent
// back to the model, is the call's; args is what the trajectory records
// (the raw text as a JSON string when it is not JSON).
func (a *agentRun) prepare(c *toolCall) (args json.RawMessage, tl *tool, err error) {
	args, err = evalrun.ParseArguments(c.Function.Arguments)
	if err != nil {
		return rawArguments(c.Function.Arguments), nil, fmt.Errorf("invalid arguments: %w", err)
	}
	for i := range a.t.tools {
		if a.t.tools[i].name == c.Function.Name {
			tl = &a.t.tools[i]
			break
		}
	}
	if tl == nil {
		return args, nil, fmt.Errorf("unknown tool %q: call one of %s", snippet([]byte(c.Function.Name)), a.t.toolNames())
	}
	if tl.schema != nil {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
		if err != nil {
			return args, nil, fmt.Errorf("invalid arguments: %w", err)
		}
		if err := tl.schema.Validate(v); err != nil {
			return args, nil, fmt.Errorf("the arguments do not match the parameters of %s: %s", tl.name, schemaErrorText(err))
		}
	}
	return args, tl, nil
}

// run answers a call with its tool's run target, the call's arguments as
// the input. A failure is the call's (sent to the model as "error: …"),
// never the item's; a panic too.
func (a *agentRun) run(ctx context.Context, tl *tool, rec *evalrun.ToolCall, content *string, latency *float64) {
	clock := a.t.cl.clock
	start := clock.Now()
	ctx, span := tracing.StartToolCall(ctx, tl.name, "")
	defer func() {
		if p := recover(); p != nil {
			rec.Output = nil
			rec.Error = fmt.Sprintf("tool %s panicked: %v", tl.name, p)
			*content = "error: " + rec.Error
		}
		*latency = msSince(clock, start)
		rec.LatencyMS = latency
		if rec.Error != "" && span.IsRecording() {
			span.SetStatus(codes.Error, rec.Error)
		}
		span.End()
	}()
	out, err := tl.run.Execute(ctx, &evalrun.Item{ID: a.item.ID, Input: rec.Args})
	if err != nil {
		rec.Error = err.Error()
		*content = "error: " + rec.Error
		return
	}
	rec.Output = out.Value
	*content = evalrun.Text(out.Value)
}

// normalizeCalls makes the model's calls fit to be sent back in the
// assistant message: an id for each (some servers send none; the tool
// message must name it), type function, and the arguments as OpenAI's
// JSON string.
func normalizeCalls(calls []toolCall, step int) {
	for i := range calls {
		c := &calls[i]
		// An id names one call of the turn: a missing or repeated one gets
		// one of evalrun's that no other call of the turn has (the
		// model's own ids are kept, so a generated one must not take one).
		if c.ID == "" || hasID(calls[:i], c.ID, -1) {
			base := "call_" + strconv.Itoa(step) + "_" + strconv.Itoa(i)
			id := base
			for n := 1; hasID(calls, id, i); n++ {
				id = base + "_" + strconv.Itoa(n)
			}
			c.ID = id
		}
		if c.Type == "" {
			c.Type = "function"
		}
		switch raw := bytes.TrimSpace(c.Function.Arguments); {
		case len(raw) == 0 || string(raw) == "null":
			c.Function.Arguments = json.RawMessage(`"{}"`)
		case raw[0] != '"':
			s, _ := json.Marshal(string(raw))
			c.Function.Arguments = s
		}
	}
}

// hasID reports whether a call of calls other than the one at index skip
// has id.
func hasID(calls []toolCall, id string, skip int) bool {
	for j := range calls {
		if j != skip && calls[j].ID == id {
			return true
		}
	}
	return false
}

// rawArguments is what the trajectory records of arguments that are not
// JSON: their text, as a JSON string.
func rawArguments(raw json.RawMessage) json.RawMessage {
	text := string(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		text = s
	}
	b, _ := json.Marshal(text)
	return b
}

// argsText returns arguments for an error message: compact, cut short.
func argsText(args json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		b.Reset()
		b.Write(args)
	}
	return snippet(b.Bytes())
}

// toolNames lists the target's tool names for an error message.
func (t *ChatTarget) toolNames() string {
	names := make([]string, 0, min(len(t.tools), 11))
	for i := range t.tools {
		if i == 10 {
			names = append(names, "…")
			break
		}
		names = append(names, t.tools[i].name)
	}
	return strings.Join(names, ", ")
}

// msSince returns the milliseconds from start to now on clock.
func msSince(clock evalrun.Clock, start time.Time) float64 {
	return float64(clock.Now().Sub(start)) / float64(time.Millisecond)
}
