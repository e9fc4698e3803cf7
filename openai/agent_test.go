package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/target"
)

var weatherTool = Tool{
	Name:        "get_weather",
	Description: "Current weather for a city",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
}

// newAgent returns a chat target over the fake model with cfg's tools.
func newAgent(t *testing.T, m *fakeModel, cfg ChatTargetConfig) *ChatTarget {
	t.Helper()
	cfg.BaseURL = m.URL + "/v1"
	return newChatTarget(t, cfg)
}

// weatherItem asks for the weather in Paris, with a mock for that call.
func weatherItem() *evalrun.Item {
	return &evalrun.Item{ID: "w1", Input: evalrun.String("Weather in Paris?"), ToolMocks: []evalrun.ToolMock{
		{Name: "get_weather", Args: json.RawMessage(`{"city": "Paris"}`), Output: json.RawMessage(`{"temp_c": 18}`)},
	}}
}

// content dereferences a message content for comparisons.
func content(m wireMessage) string {
	if m.Content == nil {
		return "<null>"
	}
	return *m.Content
}

func TestAgentSingleCall(t *testing.T) {
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		if turn == 0 {
			return callTools(0, call{"get_weather", `{"city": "Paris"}`})
		}
		return answer("It is " + content(req.toolMessages()[0]))
	})
	ct := newAgent(t, m, ChatTargetConfig{System: "You are a weather bot.", Tools: []Tool{weatherTool},
		Price: &Price{InputPerMTok: 1.5, OutputPerMTok: 6}})
	out, err := ct.Execute(context.Background(), weatherItem())
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Value) != `"It is {\"temp_c\":18}"` {
		t.Errorf("output = %s", out.Value)
	}
	tr := out.Trajectory
	if tr == nil || tr.Steps != 2 || len(tr.Calls) != 1 {
		t.Fatalf("trajectory = %+v", tr)
	}
	c := tr.Calls[0]
	if c.Name != "get_weather" || string(c.Args) != `{"city": "Paris"}` || string(c.Output) != `{"temp_c": 18}` ||
		!c.Mocked || c.Error != "" || c.LatencyMS == nil {
		t.Errorf("call = %+v", c)
	}
	if *out.Usage.InputTokens != 20 || *out.Usage.OutputTokens != 10 {
		t.Errorf("usage = %d in, %d out, want both turns: 20, 10", *out.Usage.InputTokens, *out.Usage.OutputTokens)
	}
	if want := (20*1.5 + 10*6) / 1e6; out.Usage.CostUSD == nil || math.Abs(*out.Usage.CostUSD-want) > 1e-15 {
		t.Errorf("cost = %v, want %v", out.Usage.CostUSD, want)
	}

	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	// The tool definitions, as OpenAI takes them, in both requests.
	for i, r := range reqs {
		if len(r.Tools) != 1 || r.Tools[0].Type != "function" || r.Tools[0].Function.Name != "get_weather" ||
			r.Tools[0].Function.Description != "Current weather for a city" ||
			string(r.Tools[0].Function.Parameters) != string(weatherTool.Parameters) {
			t.Errorf("request %d tools = %+v", i, r.Tools)
		}
	}
	got := reqs[1].Messages
	if len(got) != 4 {
		t.Fatalf("second request has %d messages, want system, user, assistant, tool", len(got))
	}
	if got[0].Role != "system" || content(got[0]) != "You are a weather bot." || got[1].Role != "user" || content(got[1]) != "Weather in Paris?" {
		t.Errorf("first messages = %+v, %+v", got[0], got[1])
	}
	asst := got[2]
	if asst.Role != "assistant" || asst.Content != nil || len(asst.ToolCalls) != 1 || asst.ToolCalls[0].ID != "call_0_0" ||
		asst.ToolCalls[0].Function.Name != "get_weather" || asst.ToolCalls[0].Function.Arguments != `{"city": "Paris"}` {
		t.Errorf("assistant message = %+v", asst)
	}
	if tool := got[3]; tool.Role != "tool" || tool.ToolCallID != "call_0_0" || content(tool) != `{"temp_c":18}` {
		t.Errorf("tool message = %+v", tool)
	}
}

// blockingTool is a run target that signals it started (closing mine) and
// then waits for other to be closed: two of them, each waiting on the
// other, finish only when they run at the same time.
func blockingTool(mine, other chan struct{}, result string) evalrun.Target {
	return evalrun.TargetFunc(func(ctx context.Context, it *evalrun.Item) (evalrun.Output, error) {
		close(mine)
		select {
		case <-other:
		case <-ctx.Done():
			return evalrun.Output{}, ctx.Err()
		}
		return evalrun.Output{Value: evalrun.String(result + " " + evalrun.Text(it.Input))}, nil
	})
}

func TestAgentParallelCallsRunConcurrently(t *testing.T) {
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		if turn == 0 {
			return callTools(0, call{"search", `{"q":"b"}`}, call{"get_weather", `{"city":"Paris"}`}, call{"lookup", `{"id":1}`})
		}
		var parts []string
		for _, tm := range req.toolMessages() {
			parts = append(parts, tm.ToolCallID+"="+content(tm))
		}
		return answer(strings.Join(parts, "|"))
	})
	a, b := make(chan struct{}), make(chan struct{})
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{
		weatherTool,
		{Name: "search", Run: blockingTool(a, b, "found")},
		{Name: "lookup", Run: blockingTool(b, a, "record")},
	}})
	// Without concurrency the first run would wait for the second until
	// this deadline, and its call would record the error.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := ct.Execute(ctx, weatherItem())
	if err != nil {
		t.Fatal(err)
	}
	want := `call_0_0=found {"q":"b"}|call_0_1={"temp_c":18}|call_0_2=record {"id":1}`
	if evalrun.Text(out.Value) != want {
		t.Errorf("output = %s, want %s", evalrun.Text(out.Value), want)
	}
	var names []string
	for _, c := range out.Trajectory.Calls {
		names = append(names, fmt.Sprintf("%s:%v:%s", c.Name, c.Mocked, c.Error))
		if c.LatencyMS == nil {
			t.Errorf("%s: no latency", c.Name)
		}
	}
	if diff := cmp.Diff([]string{"search:false:", "get_weather:true:", "lookup:false:"}, names); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestAgentSequentialCallsOverTurns(t *testing.T) {
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		switch turn {
		case 0:
			return callTools(0, call{"search", `{"q":"capital of France"}`})
		case 1:
			city := content(req.toolMessages()[0])
			return callTools(1, call{"get_weather", fmt.Sprintf(`{"city":%q}`, city)})
		}
		return answer("done: " + content(req.toolMessages()[0]))
	})
	item := weatherItem()
	item.ToolMocks = append(item.ToolMocks, evalrun.ToolMock{Name: "search", Output: evalrun.String("Paris")})
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{{Name: "search"}, weatherTool}})
	out, err := ct.Execute(context.Background(), item)
	if err != nil {
		t.Fatal(err)
	}
	if evalrun.Text(out.Value) != `done: {"temp_c":18}` {
		t.Errorf("output = %s", out.Value)
	}
	tr := out.Trajectory
	if tr.Steps != 3 || len(tr.Calls) != 2 || tr.Calls[0].Name != "search" || tr.Calls[1].Name != "get_weather" ||
		string(tr.Calls[1].Args) != `{"city":"Paris"}` {
		t.Fatalf("trajectory = %+v", tr)
	}
	reqs := m.requests()
	// The third request holds the whole conversation: user, then each
	// turn's assistant message and tool message.
	var roles []string
	for _, msg := range reqs[2].Messages {
		roles = append(roles, msg.Role)
	}
	if diff := cmp.Diff([]string{"user", "assistant", "tool", "assistant", "tool"}, roles); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	if *out.Usage.InputTokens != 30 {
		t.Errorf("input tokens = %d, want 30 over three turns", *out.Usage.InputTokens)
	}
}

func TestAgentRunHTTPTool(t *testing.T) {
	var got atomic.Value
	toolSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b))
		_, _ = io.WriteString(w, `{"temp_c": 21, "sky": "clear"}`)
	}))
	defer toolSrv.Close()
	run, err := target.NewHTTP(target.HTTPConfig{URL: toolSrv.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		if turn == 0 {
			return callTools(0, call{"get_weather", `{"city":"Oslo"}`})
		}
		return answer(content(req.toolMessages()[0]))
	})
	tool := weatherTool
	tool.Run = run
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{tool}})
	out, err := ct.Execute(context.Background(), &evalrun.Item{ID: "o1", Input: evalrun.String("Oslo?")})
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := got.Load().(string); body != `{"id":"o1","input":{"city":"Oslo"}}` {
		t.Errorf("the tool received %s", body)
	}
	if evalrun.Text(out.Value) != `{"sky":"clear","temp_c":21}` && evalrun.Text(out.Value) != `{"temp_c":21,"sky":"clear"}` {
		t.Errorf("the model received %s", out.Value)
	}
	c := out.Trajectory.Calls[0]
	if c.Mocked || c.Error != "" || !evalrun.EqualValues(c.Output, json.RawMessage(`{"temp_c":21,"sky":"clear"}`)) {
		t.Errorf("call = %+v", c)
	}
}

func TestAgentRunExecTool(t *testing.T) {
	// The program reads the item as one JSON line and answers with it
	// wrapped: {"seen": {"id": ..., "input": {arguments}}}.
	run, err := target.NewExec(target.ExecConfig{Command: []string{"/bin/sh", "-c", `read -r line; printf '{"seen": %s}' "$line"`}})
	if err != nil {
		t.Fatal(err)
	}
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		if turn == 0 {
			return callTools(0, call{"calc", `{"expr":"2+2"}`})
		}
		return answer(content(req.toolMessages()[0]))
	})
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{{Name: "calc", Run: run}}})
	out, err := ct.Execute(context.Background(), &evalrun.Item{ID: "c1", Input: evalrun.String("2+2?")})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"seen":{"id":"c1","input":{"expr":"2+2"}}}`; evalrun.Text(out.Value) != want {
		t.Errorf("the model received %s, want %s", out.Value, want)
	}
}

func TestAgentRunErrorGoesBackToModel(t *testing.T) {
	toolSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "weather service down", http.StatusServiceUnavailable)
	}))
	defer toolSrv.Close()
	run, err := target.NewHTTP(target.HTTPConfig{URL: toolSrv.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		if turn == 0 {
			return callTools(0, call{"get_weather", `{"city":"Oslo"}`})
		}
		return answer("sorry: " + content(req.toolMessages()[0]))
	})
	tool := weatherTool
	tool.Run = run
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{tool}})
	out, err := ct.Execute(context.Background(), &evalrun.Item{ID: "o1", Input: evalrun.String("Oslo?")})
	if err != nil {
		t.Fatalf("a tool's failure failed the item: %v", err)
	}
	text := evalrun.Text(out.Value)
	if !strings.HasPrefix(text, "sorry: error: HTTP 503") || !strings.Contains(text, "weather service down") {
		t.Errorf("the model received %q", text)
	}
	c := out.Trajectory.Calls[0]
	if !strings.Contains(c.Error, "HTTP 503") || c.Output != nil {
		t.Errorf("call = %+v", c)
	}
}

func TestAgentUnmatchedMockFailsItem(t *testing.T) {
	m := newFakeModel(t, func(turn int, _ wireRequest, _ *http.Request) turnReply {
		return callTools(turn, call{"get_weather", `{"city":"London"}`})
	})
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{weatherTool}})
	_, err := ct.Execute(context.Background(), weatherItem())
	e := wantKind(t, err, evalrun.ErrorPermanent)
	if !strings.Contains(err.Error(), `"get_weather"`) || !strings.Contains(err.Error(), `{"city":"London"}`) {
		t.Errorf("error %q does not name the tool and its arguments", err)
	}
	tr := e.Trajectory
	if tr == nil || tr.Steps != 1 || len(tr.Calls) != 1 || tr.Calls[0].Error == "" || string(tr.Calls[0].Args) != `{"city":"London"}` {
		t.Fatalf("trajectory = %+v", tr)
	}
	if e.Usage.InputTokens == nil || *e.Usage.InputTokens != 10 {
		t.Errorf("usage = %+v, want the turn's", e.Usage)
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("%d requests after the item failed, want 1", n)
	}
}

func TestAgentCallWithoutMockOrRunFailsItem(t *testing.T) {
	m := newFakeModel(t, func(turn int, _ wireRequest, _ *http.Request) turnReply {
		return callTools(turn, call{"get_weather", `{"city":"Rome"}`})
	})
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{weatherTool}})
	_, err := ct.Execute(context.Background(), &evalrun.Item{ID: "r", Input: evalrun.String("Rome?")})
	e := wantKind(t, err, evalrun.ErrorPermanent)
	if !strings.Contains(err.Error(), `"get_weather"`) || !strings.Contains(err.Error(), `{"city":"Rome"}`) || !strings.Contains(err.Error(), "no run target") {
		t.Errorf("error = %q", err)
	}
	if e.Trajectory == nil || len(e.Trajectory.Calls) != 1 {
		t.Errorf("trajectory = %+v", e.Trajectory)
	}
}

func TestAgentMaxStepsExceeded(t *testing.T) {
	m := newFakeModel(t, func(turn int, _ wireRequest, _ *http.Request) turnReply {
		return callTools(turn, call{"get_weather", `{"city":"Paris"}`})
	})
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{weatherTool}, MaxSteps: 3})
	_, err := ct.Execute(context.Background(), weatherItem())
	e := wantKind(t, err, evalrun.ErrorPermanent)
	if !strings.Contains(err.Error(), "max_steps 3") {
		t.Errorf("error %q does not name max_steps", err)
	}
	if n := len(m.requests()); n != 3 {
		t.Errorf("%d model turns, want 3", n)
	}
	tr := e.Trajectory
	if tr == nil || tr.Steps != 3 || len(tr.Calls) != 3 {
		t.Fatalf("trajectory = %+v", tr)
	}
	if !tr.Calls[1].Mocked || tr.Calls[2].Mocked || !strings.Contains(tr.Calls[2].Error, "max_steps") {
		t.Errorf("calls = %+v", tr.Calls)
	}
	if *e.Usage.InputTokens != 30 || *e.Usage.OutputTokens != 15 {
		t.Errorf("usage = %d in, %d out, want 30, 15", *e.Usage.InputTokens, *e.Usage.OutputTokens)
	}
}

func TestAgentBadCallsGoBackToModel(t *testing.T) {
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		if turn == 0 {
			return callTools(0,
				call{"get_wether", `{"city":"Paris"}`},   // no such tool
				call{"get_weather", `{"city": "Par`},     // not JSON
				call{"get_weather", `{"city": 75}`},      // against the schema
				call{"get_weather", `{"town": "Paris"}`}, // a required property missing
				call{"get_weather", `{"city": "Paris"}`}) // fine
		}
		var parts []string
		for _, tm := range req.toolMessages() {
			parts = append(parts, content(tm))
		}
		return answer(strings.Join(parts, "\n"))
	})
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{weatherTool}})
	out, err := ct.Execute(context.Background(), weatherItem())
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(evalrun.Text(out.Value), "\n")
	wants := []string{
		`error: unknown tool "get_wether": call one of get_weather`,
		`error: invalid arguments: arguments "{\"city\": \"Par" are not valid JSON`,
		`error: the arguments do not match the parameters of get_weather: at '/city': got number, want string`,
		`error: the arguments do not match the parameters of get_weather: at '': missing property 'city'`,
		`{"temp_c":18}`,
	}
	if diff := cmp.Diff(wants, got); diff != "" {
		t.Errorf("tool messages (-want +got):\n%s", diff)
	}
	calls := out.Trajectory.Calls
	if len(calls) != 5 || calls[0].Error == "" || calls[1].Error == "" || string(calls[1].Args) != `"{\"city\": \"Par"` || calls[4].Error != "" {
		t.Errorf("calls = %+v", calls)
	}
}

func TestAgentTooManyCallsInOneTurn(t *testing.T) {
	m := newFakeModel(t, func(turn int, _ wireRequest, _ *http.Request) turnReply {
		calls := make([]call, MaxToolCallsPerTurn+1)
		for i := range calls {
			calls[i] = call{"get_weather", `{"city":"Paris"}`}
		}
		return callTools(turn, calls...)
	})
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{weatherTool}})
	_, err := ct.Execute(context.Background(), weatherItem())
	wantKind(t, err, evalrun.ErrorPermanent)
	if !strings.Contains(err.Error(), "65 tool calls") || !strings.Contains(err.Error(), "64") {
		t.Errorf("error = %q", err)
	}
}

func TestAgentRunPanicIsTheCallsError(t *testing.T) {
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		if turn == 0 {
			return callTools(0, call{"boom", `{}`}, call{"boom", `{}`})
		}
		return answer(content(req.toolMessages()[1]))
	})
	boom := evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) { panic("kaboom") })
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{{Name: "boom", Run: boom}}})
	out, err := ct.Execute(context.Background(), weatherItem())
	if err != nil {
		t.Fatal(err)
	}
	if text := evalrun.Text(out.Value); text != "error: tool boom panicked: kaboom" {
		t.Errorf("the model received %q", text)
	}
}

func TestAgentWithoutToolCallsRecordsAnEmptyTrajectory(t *testing.T) {
	m := newFakeModel(t, func(int, wireRequest, *http.Request) turnReply { return answer("18 degrees") })
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{weatherTool}})
	out, err := ct.Execute(context.Background(), weatherItem())
	if err != nil {
		t.Fatal(err)
	}
	if out.Trajectory == nil || out.Trajectory.Steps != 1 || out.Trajectory.Calls == nil || len(out.Trajectory.Calls) != 0 {
		t.Errorf("trajectory = %+v", out.Trajectory)
	}
	b, _ := json.Marshal(out.Trajectory)
	if string(b) != `{"steps":1,"calls":[]}` {
		t.Errorf("trajectory JSON = %s", b)
	}
}

func TestAgentNormalizesCallsOfLooseServers(t *testing.T) {
	// Some OpenAI-compatible servers send arguments as an object and no
	// call id: the assistant message sent back has both in OpenAI's form
	// (the fake refuses anything else).
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		if turn == 0 {
			return chatReply(map[string]any{"role": "assistant", "tool_calls": []any{
				map[string]any{"function": map[string]any{"name": "get_weather", "arguments": map[string]any{"city": "Paris"}}},
			}}, "tool_calls")
		}
		return answer(req.Messages[1].ToolCalls[0].Function.Arguments + " " + content(req.toolMessages()[0]))
	})
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{weatherTool}})
	out, err := ct.Execute(context.Background(), weatherItem())
	if err != nil {
		t.Fatal(err)
	}
	if text := evalrun.Text(out.Value); text != `{"city":"Paris"} {"temp_c":18}` {
		t.Errorf("output = %q", text)
	}
}

func TestConversationInput(t *testing.T) {
	conv := json.RawMessage(`[{"role":"user","content":"My name is Ada."},{"role":"assistant","content":"Hello Ada."},{"role":"user","content":"What is my name?"}]`)
	for _, withTools := range []bool{false, true} {
		t.Run(fmt.Sprintf("tools=%v", withTools), func(t *testing.T) {
			m := newFakeModel(t, func(int, wireRequest, *http.Request) turnReply { return answer("Ada") })
			cfg := ChatTargetConfig{System: "Be brief.", Prompt: "never rendered {{ .Metadata.missing }}"}
			if withTools {
				cfg.Tools = []Tool{weatherTool}
			}
			ct := newAgent(t, m, cfg)
			out, err := ct.Execute(context.Background(), &evalrun.Item{ID: "c", Input: conv})
			if err != nil {
				t.Fatal(err)
			}
			if evalrun.Text(out.Value) != "Ada" || (out.Trajectory != nil) != withTools {
				t.Errorf("output = %s, trajectory %+v", out.Value, out.Trajectory)
			}
			var got []string
			for _, msg := range m.requests()[0].Messages {
				got = append(got, msg.Role+": "+content(msg))
			}
			want := []string{"system: Be brief.", "user: My name is Ada.", "assistant: Hello Ada.", "user: What is my name?"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAgentCancelReturnsPromptly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	m := newFakeModel(t, func(turn int, _ wireRequest, r *http.Request) turnReply {
		if turn == 0 {
			return callTools(0, call{"get_weather", `{"city":"Paris"}`})
		}
		cancel()
		<-r.Context().Done() // hangs until the client goes away
		return answer("too late")
	})
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{weatherTool}})
	_, err := ct.Execute(ctx, weatherItem())
	e := wantKind(t, err, evalrun.ErrorCanceled)
	if e.Trajectory == nil || len(e.Trajectory.Calls) != 1 {
		t.Errorf("trajectory = %+v", e.Trajectory)
	}
}

// closeCounter is a run target that counts its Close calls.
type closeCounter struct{ closed atomic.Int64 }

func (c *closeCounter) Execute(context.Context, *evalrun.Item) (evalrun.Output, error) {
	return evalrun.Output{Value: evalrun.String("ok")}, nil
}
func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

func TestChatTargetClosesRunTargets(t *testing.T) {
	run := &closeCounter{}
	ct, err := NewChatTarget(ChatTargetConfig{ClientConfig: ClientConfig{BaseURL: "http://127.0.0.1:1/v1", LookupEnv: env()}, Model: "m",
		Tools: []Tool{{Name: "t", Run: run}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ct.Close(); err != nil {
		t.Fatal(err)
	}
	if run.closed.Load() != 1 {
		t.Errorf("run target closed %d times, want 1", run.closed.Load())
	}
}

func TestToolConfigValidation(t *testing.T) {
	many := make([]Tool, MaxTools+1)
	for i := range many {
		many[i] = Tool{Name: fmt.Sprintf("t%d", i)}
	}
	for _, tc := range []struct {
		name     string
		cfg      ChatTargetConfig
		key, msg string
	}{
		{"missing name", ChatTargetConfig{Tools: []Tool{{}}}, "tools[0].name", "required"},
		{"bad name", ChatTargetConfig{Tools: []Tool{{Name: "get weather"}}}, "tools[0].name", "not a tool name"},
		{"long name", ChatTargetConfig{Tools: []Tool{{Name: strings.Repeat("a", 65)}}}, "tools[0].name", "not a tool name"},
		{"duplicate", ChatTargetConfig{Tools: []Tool{{Name: "a"}, {Name: "a"}}}, "tools[1].name", `duplicate tool name "a"`},
		{"params not object", ChatTargetConfig{Tools: []Tool{{Name: "a", Parameters: json.RawMessage(`[1]`)}}}, "tools[0].parameters", "JSON Schema object"},
		{"params type", ChatTargetConfig{Tools: []Tool{{Name: "a", Parameters: json.RawMessage(`{"type":"string"}`)}}}, "tools[0].parameters", `type must be "object"`},
		{"bad schema", ChatTargetConfig{Tools: []Tool{{Name: "a"}, {Name: "b", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"strin"}}}`)}}},
			"tools[1].parameters", "at '/properties/x/type'"},
		{"remote ref", ChatTargetConfig{Tools: []Tool{{Name: "a", Parameters: json.RawMessage(`{"$ref":"file:///etc/passwd"}`)}}}, "tools[0].parameters", "cannot refer to another document"},
		{"too many tools", ChatTargetConfig{Tools: many}, "tools", "more than the limit of 128"},
		{"max_steps negative", ChatTargetConfig{MaxSteps: -1}, "max_steps", "must be in [1,100]"},
		{"max_steps too big", ChatTargetConfig{MaxSteps: 101}, "max_steps", "must be in [1,100]"},
		{"tools through params", ChatTargetConfig{Params: map[string]any{"tools": []any{}}}, "params", "use the target's tools key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Model, cfg.BaseURL, cfg.LookupEnv = "m", "http://127.0.0.1:1/v1", env()
			for _, err := range []error{cfg.Validate(), func() error { _, err := NewChatTarget(cfg); return err }()} {
				var ce *target.ConfigError
				if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(ce.Err.Error(), tc.msg) {
					t.Errorf("error = %v, want key %s with %q", err, tc.key, tc.msg)
				}
				if err != nil && strings.Contains(err.Error(), "\n") {
					t.Errorf("error spans lines: %q", err)
				}
			}
		})
	}
	ok := ChatTargetConfig{Model: "m", MaxSteps: 100, Tools: []Tool{weatherTool, {Name: "A-b_9"}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestAgentMocksMatchArgumentsAsJSON(t *testing.T) {
	m := newFakeModel(t, func(turn int, req wireRequest, _ *http.Request) turnReply {
		if turn == 0 {
			return callTools(0, call{"get_weather", `{"unit": "c", "city": "Paris"}`}, call{"get_weather", `{"city":"Rome"}`},
				call{"get_weather", `{"city":"Oslo"}`}, call{"get_weather", `{"unit":"c","city":"Paris"}`})
		}
		var parts []string
		for _, tm := range req.toolMessages() {
			parts = append(parts, content(tm))
		}
		return answer(strings.Join(parts, ","))
	})
	item := &evalrun.Item{ID: "m", Input: evalrun.String("?"), ToolMocks: []evalrun.ToolMock{
		{Name: "get_weather", Args: json.RawMessage(`{"city":"Oslo"}`), Output: evalrun.String("A")},
		{Name: "get_weather", Output: evalrun.String("B")},
		{Name: "get_weather", Args: json.RawMessage(`{ "city" : "Paris", "unit" : "c" }`), Output: evalrun.String("C")},
	}}
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{{Name: "get_weather"}}})
	out, err := ct.Execute(context.Background(), item)
	if err != nil {
		t.Fatal(err)
	}
	if got := evalrun.Text(out.Value); got != "C,B,A,C" {
		t.Errorf("mocks answered %s, want C,B,A,C", got)
	}
	if string(item.ToolMocks[2].Args) != `{ "city" : "Paris", "unit" : "c" }` {
		t.Errorf("the item's mock was changed: %s", item.ToolMocks[2].Args)
	}
}

func TestAgentConversationGrowthIsBounded(t *testing.T) {
	// A run tool that answers every call with 100 KB, called 8 times a
	// turn by a model that never stops: past the bound on what the loop
	// adds to the conversation, the item fails before max_steps instead of
	// resending (and recording) ever more.
	big := strings.Repeat("x", 100_000)
	toolSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%q", big)
	}))
	defer toolSrv.Close()
	run, err := target.NewHTTP(target.HTTPConfig{URL: toolSrv.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := newFakeModel(t, func(turn int, _ wireRequest, _ *http.Request) turnReply {
		calls := make([]call, 8)
		for i := range calls {
			calls[i] = call{"get_weather", fmt.Sprintf(`{"city":"c%d"}`, i)}
		}
		return callTools(turn, calls...)
	})
	tool := weatherTool
	tool.Run = run
	ct := newAgent(t, m, ChatTargetConfig{Tools: []Tool{tool}, MaxSteps: 100})
	ct.maxConversation = 2_000_000 // 2.5 turns of 800 KB
	_, err = ct.Execute(context.Background(), &evalrun.Item{ID: "f1", Input: evalrun.String("flood")})
	e := wantKind(t, err, evalrun.ErrorPermanent)
	if !strings.Contains(err.Error(), "more than the limit of 2000000 per item") {
		t.Errorf("error %q does not name the limit", err)
	}
	if n := len(m.requests()); n != 3 {
		t.Errorf("%d model turns, want 3 (the third turn's results pass the bound)", n)
	}
	if e.Trajectory == nil || len(e.Trajectory.Calls) != 24 {
		n := -1
		if e.Trajectory != nil {
			n = len(e.Trajectory.Calls)
		}
		t.Errorf("trajectory has %d calls, want the 24 made", n)
	}
}

// Every call of a turn is sent back with an id of its own: a missing or
// repeated id gets a generated one that no other call has, even when the
// model itself used that generated form.
func TestNormalizeCallsMakesIDsUnique(t *testing.T) {
	calls := make([]toolCall, 4)
	calls[0].ID = "call_2_1" // the id call 1 would get
	calls[1].ID = ""
	calls[2].ID = "call_2_1" // a repeat of call 0's
	calls[3].ID = "x"
	normalizeCalls(calls, 2)
	ids := map[string]bool{}
	for _, c := range calls {
		if c.ID == "" || ids[c.ID] {
			t.Fatalf("ids not unique: %+v", calls)
		}
		ids[c.ID] = true
	}
	if calls[0].ID != "call_2_1" || calls[3].ID != "x" {
		t.Errorf("the model's own unique ids changed: %+v", calls)
	}
}
