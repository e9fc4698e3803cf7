package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// memoryModel is an http.RoundTripper answering chat completions from
// memory, without sockets: a request holding fewer than calls tool
// messages gets a reply calling get_weather, a later one the final answer.
// With calls = 0 every reply is the answer (a plain chat). It is for one
// goroutine.
type memoryModel struct {
	calls        int
	buf          bytes.Buffer
	header       http.Header
	call, answer []byte
}

func newMemoryModel(calls int) *memoryModel {
	call, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{
			"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_abc123", "type": "function",
				"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}}}},
		"usage": map[string]any{"prompt_tokens": 60, "completion_tokens": 12, "total_tokens": 72},
	})
	return &memoryModel{calls: calls, call: call, answer: []byte(completion("It is 18 degrees in Paris.")),
		header: http.Header{"Content-Type": []string{"application/json"}}}
}

var toolRole = []byte(`"role":"tool"`)

func (m *memoryModel) RoundTrip(req *http.Request) (*http.Response, error) {
	m.buf.Reset()
	if req.Body != nil {
		_, _ = m.buf.ReadFrom(req.Body)
		_ = req.Body.Close()
	}
	body := m.answer
	if bytes.Count(m.buf.Bytes(), toolRole) < m.calls {
		body = m.call
	}
	return &http.Response{StatusCode: http.StatusOK, Header: m.header, ContentLength: int64(len(body)),
		Body: io.NopCloser(bytes.NewReader(body)), Request: req}, nil
}

// benchTarget returns a chat target over a memory model.
func benchTarget(b *testing.B, m *memoryModel, tools []Tool) *ChatTarget {
	b.Helper()
	ct, err := NewChatTarget(ChatTargetConfig{
		ClientConfig: ClientConfig{BaseURL: "http://model.invalid/v1", HTTPClient: &http.Client{Transport: m}, LookupEnv: env()},
		Model:        "m", System: "You are a weather bot.", Tools: tools, Price: &Price{InputPerMTok: 0.15, OutputPerMTok: 0.6},
	})
	if err != nil {
		b.Fatal(err)
	}
	return ct
}

// benchTurns is the model turns of an agent item in BenchmarkAgentLoop:
// four turns calling a tool, then the answer.
const benchTurns = 5

// BenchmarkChatPlain is the baseline: one chat completion without tools,
// through the SDK's Post over the in-memory model.
func BenchmarkChatPlain(b *testing.B) {
	ct := benchTarget(b, newMemoryModel(0), nil)
	item := weatherItem()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ct.Execute(ctx, item); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAgentLoop runs an agent item of benchTurns model turns, each
// but the last calling a tool the item mocks (arguments checked against
// the tool's schema, matched against the mock's), and reports per model
// turn: its time and allocations, and the loop's overhead beyond a plain
// chat call. Each iteration times the agent item and benchTurns plain
// calls back to back, so that load on a shared machine weighs on both
// alike; allocations are counted apart (testing.AllocsPerRun), exactly.
func BenchmarkAgentLoop(b *testing.B) {
	agent := benchTarget(b, newMemoryModel(benchTurns-1), []Tool{weatherTool})
	plain := benchTarget(b, newMemoryModel(0), nil)
	item := weatherItem()
	ctx := context.Background()
	out, err := agent.Execute(ctx, item)
	if err != nil || out.Trajectory.Steps != benchTurns || len(out.Trajectory.Calls) != benchTurns-1 || !out.Trajectory.Calls[0].Mocked {
		b.Fatalf("warm-up: %+v, %v", out.Trajectory, err)
	}
	run := func(t *ChatTarget) func() {
		return func() {
			if _, err := t.Execute(ctx, item); err != nil {
				b.Fatal(err)
			}
		}
	}
	agentAllocs := testing.AllocsPerRun(200, run(agent))
	plainAllocs := testing.AllocsPerRun(200, run(plain))
	// Wall time, and CPU time (getrusage), which a loaded machine inflates
	// far less: waiting for a core is not counted.
	var agentTime, plainTime, agentCPU, plainCPU time.Duration
	for b.Loop() {
		start, cpuStart := time.Now(), cpuTime()
		run(agent)()
		mid, cpuMid := time.Now(), cpuTime()
		for range benchTurns {
			run(plain)()
		}
		agentTime += mid.Sub(start)
		plainTime += time.Since(mid)
		agentCPU += cpuMid - cpuStart
		plainCPU += cpuTime() - cpuMid
	}
	turns := float64(b.N * benchTurns)
	b.ReportMetric(float64(agentTime.Nanoseconds())/turns, "ns/turn")
	b.ReportMetric(float64(plainTime.Nanoseconds())/turns, "plain-ns/call")
	b.ReportMetric(float64((agentTime-plainTime).Nanoseconds())/turns, "overhead-ns/turn")
	b.ReportMetric(float64((agentCPU-plainCPU).Nanoseconds())/turns, "overhead-cpu-ns/turn")
	b.ReportMetric(float64(plainCPU.Nanoseconds())/turns, "plain-cpu-ns/call")
	b.ReportMetric(agentAllocs/benchTurns, "allocs/turn")
	b.ReportMetric(plainAllocs, "plain-allocs/call")
	b.ReportMetric((agentAllocs-benchTurns*plainAllocs)/benchTurns, "overhead-allocs/turn")
}

// cpuTime returns the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
