package suite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/suite"
)

// toolsModel is an OpenAI-compatible server that calls every tool of the
// request once in its first turn (arguments {"n": 1}) and then answers
// with the tool messages' contents joined by "|". It records the tools it
// was offered.
type toolsModel struct {
	*httptest.Server
	mu      sync.Mutex
	offered []json.RawMessage
}

func newToolsModel(t *testing.T) *toolsModel {
	m := &toolsModel{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string  `json:"role"`
				Content *string `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function json.RawMessage `json:"function"`
			} `json:"tools"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		var msg map[string]any
		if last := req.Messages[len(req.Messages)-1]; last.Role != "tool" {
			m.mu.Lock()
			for _, tl := range req.Tools {
				m.offered = append(m.offered, tl.Function)
			}
			m.mu.Unlock()
			var calls []any
			for i, tl := range req.Tools {
				var f struct{ Name string }
				_ = json.Unmarshal(tl.Function, &f)
				calls = append(calls, map[string]any{"id": fmt.Sprint("c", i), "type": "function",
					"function": map[string]any{"name": f.Name, "arguments": `{"n": 1}`}})
			}
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}
		} else {
			var parts []string
			for _, m := range req.Messages {
				if m.Role == "tool" {
					parts = append(parts, *m.Content)
				}
			}
			msg = map[string]any{"role": "assistant", "content": strings.Join(parts, "|")}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": msg, "finish_reason": "stop"}}})
	}))
	t.Cleanup(m.Close)
	return m
}

// parseIn parses src as dir/suite.yaml (data.jsonl written beside it).
func parseIn(t *testing.T, dir, src string) (*suite.Suite, error) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "data.jsonl"), []byte(`{"input":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := suite.Parse([]byte(src), "suite.yaml", dir, suite.Options{})
	if s != nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

func TestOpenAITools(t *testing.T) {
	model := newToolsModel(t)
	toolSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b) // echoes {"id", "input"}
	}))
	defer toolSrv.Close()
	// The exec tool is given by a path relative to the suite file, and
	// the suite is parsed from elsewhere: it must resolve.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nread -r line\nprintf 'exec saw %s' \"$line\"\n"
	if err := os.WriteFile(filepath.Join(dir, "tools", "calc.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`dataset: {file: data.jsonl}
target:
  kind: openai
  model: m
  base_url: %s/v1
  max_steps: 4
  tools:
    - name: fetch
      description: Fetch a thing
      parameters: {type: object, properties: {n: {type: integer}}, required: [n]}
      run: {kind: http, url: %s}
    - name: calc
      run: {kind: exec, command: [./tools/calc.sh]}
scorers: [exact_match]
`, model.URL, toolSrv.URL)
	s, err := parseIn(t, dir, src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Target().Execute(context.Background(), &evalrun.Item{ID: "i1", Input: evalrun.String("go")})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"i1","input":{"n":1}}|exec saw {"id":"i1","input":{"n":1}}`
	if got := evalrun.Text(out.Value); got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	if tr := out.Trajectory; tr == nil || tr.Steps != 2 || len(tr.Calls) != 2 || tr.Calls[0].Name != "fetch" || tr.Calls[1].Name != "calc" {
		t.Errorf("trajectory = %+v", tr)
	}
	model.mu.Lock()
	offered := string(model.offered[0])
	model.mu.Unlock()
	if offered != `{"name":"fetch","description":"Fetch a thing","parameters":{"properties":{"n":{"type":"integer"}},"required":["n"],"type":"object"}}` {
		t.Errorf("offered tool = %s", offered)
	}
}

func TestOpenAIToolProblems(t *testing.T) {
	const head = "dataset: {file: data.jsonl}\nscorers: [exact_match]\ntarget:\n  kind: openai\n  model: m\n  base_url: http://127.0.0.1:1/v1\n"
	many := "  tools:\n"
	for i := range 129 {
		many += fmt.Sprintf("    - {name: t%d}\n", i)
	}
	for _, tc := range []struct {
		name, body, want string
	}{
		{"tools not a list", "  tools: {name: a}\n", "7:10: target.tools: must be a list of tools"},
		{"missing name", "  tools:\n    - description: d\n", "8:7: target.tools[0].name: missing"},
		{"bad name", "  tools:\n    - name: get weather\n", `8:13: target.tools[0].name: "get weather" is not a tool name`},
		{"duplicate name", "  tools:\n    - name: a\n    - name: a\n", `9:13: target.tools[1].name: duplicate tool name "a" (tools[0] has it)`},
		{"unknown key", "  tools:\n    - name: a\n      params: {}\n", "9:7: target.tools[0].params: unknown key"},
		{"parameters a list", "  tools:\n    - name: a\n    - name: b\n      parameters: [1]\n", "10:19: target.tools[1].parameters: must be a JSON Schema object, got a list"},
		{"parameters of a string", "  tools:\n    - name: a\n      parameters: {type: string}\n", `9:19: target.tools[0].parameters: type must be "object"`},
		{"parameters not a schema", "  tools:\n    - name: a\n    - name: b\n      parameters: {type: object, properties: {x: {type: strin}}}\n",
			"10:19: target.tools[1].parameters: not a valid JSON Schema: at '/properties/x/type'"},
		{"parameters not JSON", "  tools:\n    - name: a\n      parameters: {type: object, minimum: .inf}\n", "9:19: target.tools[0].parameters: not expressible as JSON"},
		{"run of kind openai", "  tools:\n    - name: a\n      run: {kind: openai, model: x}\n", `9:19: target.tools[0].run.kind: a tool's run target cannot be of kind "openai"`},
		{"run of kind workflow", "  tools:\n    - name: a\n      run:\n        kind: workflow\n", `10:15: target.tools[0].run.kind: a tool's run target cannot be of kind "workflow"`},
		{"run with a trajectory", "  tools:\n    - name: a\n      run: {kind: exec, command: [sh], trajectory: calls}\n",
			"9:52: target.tools[0].run.trajectory: a tool's run target cannot report a trajectory"},
		{"run without kind", "  tools:\n    - name: a\n      run: {url: http://x}\n", "9:12: target.tools[0].run.kind: missing"},
		{"run bad url", "  tools:\n    - name: a\n      run: {kind: http, url: ftp://x}\n", "9:30: target.tools[0].run.url: \"ftp://x\": scheme must be http or https"},
		{"run missing program", "  tools:\n    - name: a\n      run: {kind: exec, command: [./nope.sh]}\n", "9:34: target.tools[0].run.command: stat "},
		{"max_steps zero", "  max_steps: 0\n", "7:14: target.max_steps: must be at least 1, got 0"},
		{"max_steps too big", "  max_steps: 101\n", "7:14: target.max_steps: must be in [1,100], got 101"},
		{"max_steps text", "  max_steps: many\n", `7:14: target.max_steps: must be a whole number, got "many"`},
		{"too many tools", many, "8:5: target.tools: 129 tools, more than the limit of 128"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, head+tc.body)
			lines := problems(t, err)
			found := false
			for _, l := range lines {
				if strings.HasPrefix(l, "suite.yaml:"+tc.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("problems:\n%s\nwant one starting suite.yaml:%s", strings.Join(lines, "\n"), tc.want)
			}
		})
	}
}

func TestChatPlanOfConversation(t *testing.T) {
	s, err := parse(t, `dataset: {name: d}
target: {kind: openai, model: gpt-4o-mini, base_url: "http://127.0.0.1:9/v1", system: Be brief., prompt: "Q: {{ .Metadata.missing }}",
  tools: [{name: a}]}
scorers: [exact_match]
`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.ChatPlan().Prompt(&evalrun.Item{Input: json.RawMessage(`[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]`)})
	if err != nil || got != "Be brief.\nhi\nyo" {
		t.Errorf("Prompt = %q, %v", got, err)
	}
}

// Every problem of the tools is reported in one go, each at its place:
// the parser's own and those of the tool definitions alike.
func TestOpenAIToolProblemsAllAtOnce(t *testing.T) {
	_, err := parse(t, `dataset: {file: data.jsonl}
scorers: [exact_match]
target:
  kind: openai
  model: m
  base_url: http://127.0.0.1:1/v1
  max_steps: 1000
  tools:
    - name: get weather
      parameters: {type: object, properties: {city: {type: strin}}}
    - name: calc
      parameters: [1]
      run: {kind: openai, model: x}
    - name: calc
    - description: no name
`)
	got := problems(t, err)
	want := []string{
		"suite.yaml:7:14: target.max_steps: must be in [1,100], got 1000",
		`suite.yaml:9:13: target.tools[0].name: "get weather" is not a tool name: use 1 to 64 letters, digits, _ or -`,
		"suite.yaml:10:19: target.tools[0].parameters: not a valid JSON Schema: at '/properties/city/type'",
		"suite.yaml:12:19: target.tools[1].parameters: must be a JSON Schema object, got a list",
		`suite.yaml:13:19: target.tools[1].run.kind: a tool's run target cannot be of kind "openai"`,
		`suite.yaml:14:13: target.tools[2].name: duplicate tool name "calc" (tools[1] has it)`,
		"suite.yaml:15:7: target.tools[3].name: missing",
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %s\nwant it to start %s", i, got[i], want[i])
		}
	}
}

// A tool_called scorer naming a near miss of one of the openai target's
// tools is a typo (with never: true it would pass whatever the agent did);
// a name far from every tool is a deliberate check of a tool the model was
// not given, and is accepted.
func TestToolCalledToolCheckedAgainstTargetTools(t *testing.T) {
	const head = "dataset: {file: data.jsonl}\n" +
		"target: {kind: openai, model: m, base_url: 'http://127.0.0.1:1/v1', tools: [{name: get_weather}, {name: book_flight}]}\n"
	_, err := parse(t, head+"scorers:\n  - {kind: tool_called, tool: get_wether, never: true}\n")
	compareLines(t, problems(t, err), []string{
		`suite.yaml:4:31: scorers[0].tool: "get_wether" is not one of the target's tools (did you mean "get_weather"? the target's tools: get_weather, book_flight)`,
	})
	for _, tool := range []string{"get_weather", "delete_everything"} {
		if _, err := parse(t, head+"scorers:\n  - {kind: tool_called, tool: "+tool+", never: true}\n"); err != nil {
			t.Errorf("tool %s: %v", tool, err)
		}
	}
	// Without a tool list (a black-box agent) any name goes.
	if _, err := parse(t, "dataset: {file: data.jsonl}\ntarget: {kind: http, url: 'http://127.0.0.1:1/', trajectory: calls}\n"+
		"scorers:\n  - {kind: tool_called, tool: get_wether}\n"); err != nil {
		t.Errorf("black-box agent: %v", err)
	}
}
