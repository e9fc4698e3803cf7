package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

func TestCheckPath(t *testing.T) {
	good := []string{"calls", "result.calls", "tool_calls.#.function", `a\.b`, `calls.#(name=="x")#`,
		`calls.#(name=="a)b")#`, "@reverse", "calls|@reverse", "{a,b}", "[a,b]", "a.0.b", "..#", `a\\`, "calls.@this"}
	for _, p := range good {
		if err := checkPath("trajectory", p); err != nil {
			t.Errorf("checkPath(%q) = %v, want nil", p, err)
		}
	}
	bad := map[string]string{
		" ":                   "not blank",
		"a(":                  `unclosed '('`,
		"a)":                  `unbalanced ')'`,
		"[a,b}":               `unbalanced '}'`,
		`calls.#(name=="x)#`:  "unterminated string",
		`a\`:                  "ends with an escape",
		"@nope":               "unknown modifier @nope",
		"calls.@nope:1":       "unknown modifier @nope",
		"a\x01":               "control character",
		string([]byte{0xff}):  "not valid UTF-8",
		"calls|@flaten.names": "unknown modifier @flaten",
	}
	for p, want := range bad {
		err := checkPath("trajectory", p)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != "trajectory" || !errors.Is(err, evalrun.ErrInvalid) {
			t.Errorf("checkPath(%q) = %v, want a ConfigError on trajectory", p, err)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("checkPath(%q) = %q, want it to say %q", p, err, want)
		}
	}
	// Both targets check both paths when they are built.
	if _, err := NewHTTP(HTTPConfig{URL: "http://127.0.0.1:1/", Output: "a("}); err == nil || !strings.HasPrefix(err.Error(), "output: ") {
		t.Errorf("NewHTTP with a bad output path: %v", err)
	}
	if _, err := NewHTTP(HTTPConfig{URL: "http://127.0.0.1:1/", Trajectory: "@nope"}); err == nil || !strings.HasPrefix(err.Error(), "trajectory: ") {
		t.Errorf("NewHTTP with a bad trajectory path: %v", err)
	}
	if _, err := NewExec(ExecConfig{Command: []string{"true"}, Trajectory: " "}); err == nil || !strings.HasPrefix(err.Error(), "trajectory: ") {
		t.Errorf("NewExec with a bad trajectory path: %v", err)
	}
	if _, err := NewExec(ExecConfig{Command: []string{"true"}, Output: "]"}); err == nil || !strings.HasPrefix(err.Error(), "output: ") {
		t.Errorf("NewExec with a bad output path: %v", err)
	}
}

// agentServer answers every request with body.
func agentServer(t *testing.T, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPBlackBoxAgent(t *testing.T) {
	srv := agentServer(t, `{"answer": "18°C in Paris", "calls": [
		{"name": "get_weather", "args": {"city": "Paris"}, "output": {"temp_c": 18}},
		{"id": "call_2", "name": "search", "arguments": "{\"q\": \"hotels\"}", "error": "HTTP 503"},
		{"name": "noop"},
		{"name": "log", "arguments": "", "output": null, "error": null}
	]}`)
	h, err := NewHTTP(HTTPConfig{URL: srv.URL, Output: "answer", Trajectory: "calls"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	out, err := h.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("weather?")})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Value) != `"18°C in Paris"` {
		t.Errorf("output = %s", out.Value)
	}
	got, _ := json.Marshal(out.Trajectory)
	want := `{"calls":[` +
		`{"name":"get_weather","args":{"city":"Paris"},"output":{"temp_c":18},"mocked":false,"latency_ms":null},` +
		`{"name":"search","args":{"q":"hotels"},"error":"HTTP 503","mocked":false,"latency_ms":null},` +
		`{"name":"noop","args":{},"mocked":false,"latency_ms":null},` +
		`{"name":"log","args":{},"mocked":false,"latency_ms":null}]}`
	if string(got) != want {
		t.Errorf("trajectory\n got %s\nwant %s", got, want)
	}
}

func TestHTTPBlackBoxAgentOpenAIShape(t *testing.T) {
	// An agent that returns OpenAI's assistant message: a path through
	// the tool_calls' "function" objects gives {name, arguments}.
	srv := agentServer(t, `{"choices": [{"message": {"content": "done", "tool_calls": [
		{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
		{"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]}}]}`)
	h, err := NewHTTP(HTTPConfig{URL: srv.URL, Output: "choices.0.message.content",
		Trajectory: "choices.0.message.tool_calls.#.function"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	out, err := h.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("x")})
	if err != nil {
		t.Fatal(err)
	}
	tr := out.Trajectory
	if tr == nil || tr.Steps != 0 || len(tr.Calls) != 2 || tr.Calls[0].Name != "get_weather" ||
		string(tr.Calls[0].Args) != `{"city":"Paris"}` || tr.Calls[1].Name != "get_time" || tr.Calls[0].LatencyMS != nil {
		t.Errorf("trajectory = %+v", tr)
	}
}

func TestHTTPWithoutTrajectoryKeyRecordsNone(t *testing.T) {
	srv := agentServer(t, `{"answer": "x", "calls": [{"name": "a"}]}`)
	h, _ := NewHTTP(HTTPConfig{URL: srv.URL, Output: "answer"})
	defer h.Close()
	out, err := h.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("x")})
	if err != nil || out.Trajectory != nil {
		t.Errorf("a target that is not an agent: trajectory %+v, err %v; want nil", out.Trajectory, err)
	}
}

func TestBlackBoxTrajectoryErrors(t *testing.T) {
	cases := []struct {
		name, body, path string
		want             []string
	}{
		{"missing path", `{"answer": 1}`, "calls", []string{`trajectory path "calls" in the response: not found`}},
		{"not an array", `{"calls": {"name": "a"}}`, "calls", []string{"is an object, want an array"}},
		{"a string", `{"calls": "a"}`, "calls", []string{"is a string, want an array"}},
		{"element not an object", `{"calls": [{"name": "a"}, 5]}`, "calls", []string{"element 1: is a number, want an object"}},
		{"element without name", `{"calls": [{"name": "a"}, {"args": {}}]}`, "calls", []string{`element 1: "name" is missing`}},
		{"blank name", `{"calls": [{"name": " "}]}`, "calls", []string{`element 0: "name" is blank`}},
		{"name not a string", `{"calls": [{"name": 3}]}`, "calls", []string{`element 0: "name" is a number`}},
		{"long name", `{"calls": [{"name": "` + strings.Repeat("n", MaxToolNameBytes+1) + `"}]}`, "calls", []string{"at most 1024"}},
		{"bad arguments string", `{"calls": [{"name": "a", "arguments": "{\"city\": "}]}`, "calls",
			[]string{`element 0: tool "a": arguments "{\"city\":" are not valid JSON`}},
		{"arguments not an object", `{"calls": [{"name": "a", "args": [1]}]}`, "calls", []string{`"args" is an array, want an object`}},
		{"arguments string holding a number", `{"calls": [{"name": "a", "arguments": "5"}]}`, "calls", []string{`"arguments" holds a number`}},
		{"error not a string", `{"calls": [{"name": "a", "error": {"code": 7}}]}`, "calls", []string{`element 0: "error" is an object, want a string`}},
		{"key given twice", `{"calls": [{"name": "a", "name": "b"}]}`, "calls", []string{`element 0: duplicate key "name"`}},
		{"args and arguments", `{"calls": [{"name": "a", "args": {}, "arguments": "{}"}]}`, "calls", []string{`both "args" and "arguments"`}},
		{"too many calls", `{"calls": [` + strings.Repeat(`{"name":"a"},`, MaxTrajectoryCalls) + `{"name":"a"}]}`, "calls",
			[]string{"more than 10000 tool calls"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := agentServer(t, tc.body)
			h, err := NewHTTP(HTTPConfig{URL: srv.URL, Trajectory: tc.path})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			_, err = h.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("x")})
			wantKind(t, err, evalrun.ErrorInvalidOutput)
			if !errors.Is(err, ErrInvalidTrajectory) {
				t.Errorf("error %v does not match ErrInvalidTrajectory", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestBlackBoxTrajectoryAtTheLimits(t *testing.T) {
	for _, body := range []string{
		`{"calls": null}`,
		`{"calls": []}`,
		`{"calls": [` + strings.Repeat(`{"name":"a"},`, MaxTrajectoryCalls-1) + `{"name":"a"}]}`,
		`{"calls": [{"name": "` + strings.Repeat("n", MaxToolNameBytes) + `"}]}`,
	} {
		srv := agentServer(t, body)
		h, _ := NewHTTP(HTTPConfig{URL: srv.URL, Trajectory: "calls"})
		out, err := h.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("x")})
		h.Close()
		if err != nil || out.Trajectory == nil || out.Trajectory.Calls == nil {
			t.Fatalf("%.40s…: trajectory %v, err %v", body, out.Trajectory, err)
		}
	}
}

func TestHTTPTrajectoryNeedsAJSONResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("just text"))
	}))
	defer srv.Close()
	h, _ := NewHTTP(HTTPConfig{URL: srv.URL, Trajectory: "calls"})
	defer h.Close()
	_, err := h.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("x")})
	wantKind(t, err, evalrun.ErrorInvalidOutput)
	if err == nil || !strings.Contains(err.Error(), "the response is not JSON") {
		t.Errorf("error %v", err)
	}
}

// agentScript writes an executable shell script printing stdout.
func agentScript(t *testing.T, stdout string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sh")
	script := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\ncat <<'EOF'\n%s\nEOF\n", stdout)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExecBlackBoxAgent(t *testing.T) {
	prog := agentScript(t, `{"answer": "Paris", "steps": [{"name": "lookup", "arguments": "{\"q\":\"capital of France\"}", "output": "Paris"}]}`)
	x := newExec(t, ExecConfig{Command: []string{prog}, Output: "answer", Trajectory: "steps"})
	out, err := x.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("capital?")})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Value) != `"Paris"` {
		t.Errorf("output = %s", out.Value)
	}
	tr := out.Trajectory
	if tr == nil || len(tr.Calls) != 1 || tr.Calls[0].Name != "lookup" || string(tr.Calls[0].Args) != `{"q":"capital of France"}` ||
		string(tr.Calls[0].Output) != `"Paris"` || tr.Calls[0].Mocked {
		t.Errorf("trajectory = %+v", tr)
	}
	// Without an output path the whole of standard output is the output.
	x = newExec(t, ExecConfig{Command: []string{prog}, Trajectory: "steps"})
	if out, err = x.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("capital?")}); err != nil ||
		!strings.HasPrefix(string(out.Value), `{"answer"`) || out.Trajectory == nil {
		t.Errorf("whole stdout: %s %+v %v", out.Value, out.Trajectory, err)
	}
}

func TestExecBlackBoxAgentErrors(t *testing.T) {
	cases := []struct {
		name, stdout, output, traj string
		kind                       evalrun.ErrorKind
		want                       string
	}{
		{"text stdout", "the answer is 4", "", "calls", evalrun.ErrorInvalidOutput, `trajectory path "calls": standard output is not JSON`},
		{"no calls", `{"answer": 4}`, "", "calls", evalrun.ErrorInvalidOutput, `trajectory path "calls" in standard output: not found`},
		{"element without name", `{"calls": [{"args": {}}]}`, "", "calls", evalrun.ErrorInvalidOutput, `element 0: "name" is missing`},
		{"output path on text", "the answer is 4", "answer", "", evalrun.ErrorPermanent, "standard output is not JSON"},
		{"output path missing", `{"x": 4}`, "answer", "", evalrun.ErrorPermanent, `output path "answer" not found in standard output`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newExec(t, ExecConfig{Command: []string{agentScript(t, tc.stdout)}, Output: tc.output, Trajectory: tc.traj})
			_, err := x.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("x")})
			wantKind(t, err, tc.kind)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// A hostile response nested millions of levels deep is an error, not a
// stack overflow (gjson's own validation recurses); nesting up to
// encoding/json's 10,000 levels is read.
func TestBlackBoxDeepResponse(t *testing.T) {
	deep := `{"answer": 1, "calls": ` + strings.Repeat("[", 12<<20) + `]}`
	for _, cfg := range []HTTPConfig{{Trajectory: "calls", MaxResponseBytes: 16 << 20}, {Output: "answer", MaxResponseBytes: 16 << 20}} {
		srv := agentServer(t, deep)
		cfg.URL = srv.URL
		h, _ := NewHTTP(cfg)
		_, err := h.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("x")})
		h.Close()
		if err == nil || !strings.Contains(err.Error(), "not JSON") && !strings.Contains(err.Error(), "not valid JSON") {
			t.Errorf("%+v: error %v, want not JSON", cfg, err)
		}
	}
	args := strings.Repeat(`{"a":`, 9000) + "1" + strings.Repeat("}", 9000)
	srv := agentServer(t, `{"calls": [{"name": "a", "args": `+args+`}]}`)
	h, _ := NewHTTP(HTTPConfig{URL: srv.URL, Trajectory: "calls"})
	defer h.Close()
	out, err := h.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("x")})
	if err != nil || len(out.Trajectory.Calls) != 1 || len(out.Trajectory.Calls[0].Args) != len(args) {
		t.Fatalf("9,000 levels: %v", err)
	}
}
