package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/sqlite"
)

// A saved-outputs file is refused where a dataset line would be: too long,
// not UTF-8, too deep, or a key given twice, each with its file and line.
func TestReadOutputsLimits(t *testing.T) {
	ok := `{"id": "a", "output": "x"}` + "\n"
	for _, tc := range []struct {
		name, content, want string
	}{
		{"too long", ok + `{"id": "b", "output": "` + strings.Repeat("x", dataset.MaxItemBytes) + `"}` + "\n",
			"outs.jsonl:2: line longer than 16777216 bytes"},
		{"invalid UTF-8", ok + "{\"id\": \"b\", \"output\": \"\xff\"}\n",
			"outs.jsonl:2: invalid UTF-8: byte 0xff"},
		{"too deep", ok + `{"id": "b", "output": ` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "}\n",
			"outs.jsonl:2: nested 201 levels deep (the limit is 128)"},
		{"duplicate key", ok + `{"id": "b", "output": "x", "id": "c"}` + "\n",
			`outs.jsonl:2: duplicate key "id"`},
		{"not an object", ok + "[1, 2]\n", `outs.jsonl:2: not a JSON object`},
		{"malformed", ok + `{"id": "b", "output": }` + "\n", `outs.jsonl:2: malformed JSON`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "outs.jsonl")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readOutputs(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || ExitCode(err) != ExitUsage {
				t.Errorf("readOutputs: %v, want an invalid-input error containing %q", err, tc.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "outs.jsonl")
	if err := os.WriteFile(path, []byte("\ufeff"+ok+"\r\n"+`{"id": 7, "output": {"a": 1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := readOutputs(path)
	if err != nil || string(s.outputs["a"]) != `"x"` || string(s.outputs["7"]) != `{"a": 1}` {
		t.Errorf("readOutputs of a valid file: %v, %v", err, s)
	}
}

// An --outputs line may carry an agent's trajectory and steps: they are
// replayed as the output's trajectory, arguments given as an object or as
// OpenAI's JSON string.
func TestReadOutputsTrajectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outs.jsonl")
	content := `{"id": "a", "output": "18", "steps": 2, "trajectory": [` +
		`{"name": "get_weather", "args": {"city": "Paris"}, "output": {"temp_c": 18}, "mocked": true, "latency_ms": 1.5},` +
		`{"name": "search", "arguments": "{\"q\": \"Zürich\"}", "error": "HTTP 500", "latency_ms": null},` +
		`{"name": "noop"},` +
		`{"name": "empty", "arguments": "", "output": null}]}` + "\n" +
		`{"id": "b", "output": "hi", "steps": 1}` + "\n" +
		`{"id": "c", "output": "plain"}` + "\n" +
		`{"id": "d", "output": "x", "trajectory": []}` + "\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := readOutputs(path)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(id string) *evalrun.Trajectory {
		t.Helper()
		o, err := s.Execute(t.Context(), &evalrun.Item{ID: id})
		if err != nil {
			t.Fatalf("Execute(%q): %v", id, err)
		}
		return o.Trajectory
	}
	got, _ := json.Marshal(exec("a"))
	want := `{"steps":2,"calls":[` +
		`{"name":"get_weather","args":{"city":"Paris"},"output":{"temp_c":18},"mocked":true,"latency_ms":1.5},` +
		`{"name":"search","args":{"q":"Zürich"},"error":"HTTP 500","mocked":false,"latency_ms":null},` +
		`{"name":"noop","args":{},"mocked":false,"latency_ms":null},` +
		`{"name":"empty","args":{},"mocked":false,"latency_ms":null}]}`
	if string(got) != want {
		t.Errorf("trajectory of a:\n got  %s\n want %s", got, want)
	}
	if tr := exec("b"); tr == nil || tr.Steps != 1 || tr.Calls == nil || len(tr.Calls) != 0 {
		t.Errorf("steps alone: %+v, want Steps 1 and no calls", tr)
	}
	if tr := exec("c"); tr != nil {
		t.Errorf("a line without trajectory replayed %+v, want none", tr)
	}
	if tr := exec("d"); tr == nil || tr.Calls == nil || len(tr.Calls) != 0 || tr.Steps != 0 {
		t.Errorf("an empty trajectory: %+v", tr)
	}
	// Each execution gets its own copy (repeats, scorers).
	first := exec("a")
	first.Calls[0].Name = "changed"
	if exec("a").Calls[0].Name != "get_weather" {
		t.Error("a replayed trajectory shares its calls with the next replay")
	}
}

// A bad trajectory or steps is refused with its file, line and what is
// wrong, before anything runs.
func TestReadOutputsTrajectoryErrors(t *testing.T) {
	line := func(rest string) string { return `{"id": "a", "output": "x"` + rest + "}\n" }
	for _, tc := range []struct{ name, content, want string }{
		{"misspelt key", line(`, "trajectroy": []`), `outs.jsonl:1: unknown key "trajectroy" (did you mean "trajectory"?`},
		{"misspelt call key", line(`, "trajectory": [{"name": "t", "arguements": {}}]`),
			`outs.jsonl:1: item "a": trajectory[0]: unknown key "arguements" (did you mean "arguments"?)`},
		{"not a list", line(`, "trajectory": {"name": "t"}`), `item "a": "trajectory" must be a list of tool calls`},
		{"null", line(`, "trajectory": null`), `"trajectory" must be a list of tool calls [{"name", "args", "output"}, ...], got null`},
		{"call not an object", line(`, "trajectory": ["t"]`), `trajectory[0]: is a string, want an object {"name", "args"}`},
		{"no name", line(`, "trajectory": [{"args": {}}]`), `trajectory[0]: "name" is missing`},
		{"name not a string", line(`, "trajectory": [{"name": 3}]`), `trajectory[0]: "name" is a number, want the tool's name`},
		{"both args", line(`, "trajectory": [{"name": "t", "args": {}, "arguments": "{}"}]`), `trajectory[0]: has both "args" and "arguments"; give one`},
		{"args a number", line(`, "trajectory": [{"name": "t", "args": 3}]`), `trajectory[0]: "args" is a number, want an object of arguments (or a JSON string holding one)`},
		{"name too long", line(`, "trajectory": [{"name": "` + strings.Repeat("n", 1025) + `"}]`), `trajectory[0]: "name" is 1025 bytes, at most 1024`},
		{"arguments not JSON", line(`, "trajectory": [{"name": "t", "arguments": "{city"}]`), `trajectory[0]: tool "t": arguments "{city" are not valid JSON`},
		{"arguments a list", line(`, "trajectory": [{"name": "t", "arguments": "[1]"}]`), `trajectory[0]: tool "t": "arguments" holds an array, want an object`},
		{"error not a string", line(`, "trajectory": [{"name": "t", "error": {"m": 1}}]`), `trajectory[0]: "error" is an object, want a string (the tool's failure)`},
		{"mocked not a boolean", line(`, "trajectory": [{"name": "t", "mocked": "yes"}]`), `"mocked" must be true or false, got a string`},
		{"negative latency", line(`, "trajectory": [{"name": "t", "latency_ms": -1}]`), `"latency_ms" must be a non-negative number or null, got -1`},
		{"duplicate call key", line(`, "trajectory": [{"name": "t", "name": "u"}]`), `trajectory[0]: duplicate key "name"`},
		{"negative steps", line(`, "steps": -1`), `outs.jsonl:1: item "a": "steps" must be a non-negative integer (the model turns), got -1`},
		{"fractional steps", line(`, "steps": 1.5`), `"steps" must be a non-negative integer (the model turns), got 1.5`},
		{"steps a string", line(`, "steps": "3"`), `"steps" must be a non-negative integer (the model turns), got "3"`},
		{"huge steps", line(`, "steps": 1e30`), `"steps" must be a non-negative integer`},
		{"second line", `{"id": "z", "output": 1}` + "\n" + line(`, "trajectory": [{}]`), `outs.jsonl:2: item "a": trajectory[0]: "name"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "outs.jsonl")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readOutputs(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || ExitCode(err) != ExitUsage {
				t.Errorf("readOutputs: %v\nwant an invalid-input error containing %s", err, tc.want)
			}
		})
	}
}

// run --outputs with trajectories stores them with the results: a report
// rebuilt later, a resume, the viewer read them back from the store.
func TestOutputsStoreTrajectories(t *testing.T) {
	b := setup(t)
	srv := newServer(t, false)
	suite := b.httpSuite(srv.URL)
	outs := b.write("outs.jsonl", `{"id": "a", "output": "x", "steps": 2, "trajectory": [{"name": "t", "arguments": "{\"k\": 1}", "output": "r"}]}`+"\n"+
		`{"id": "b", "output": "z"}`+"\n"+`{"id": "c", "output": "w", "steps": 1}`+"\n")
	code, _, stderr := b.run("run", suite, "-q", "--outputs", outs)
	if code != 0 || srv.n != 0 {
		t.Fatalf("exit %d (target called %d times)\n%s", code, srv.n, stderr)
	}
	id := strings.Fields(stderr)[1]
	st, err := sqlite.Open(t.Context(), strings.TrimPrefix(b.db, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := map[string]string{}
	if err := st.ScanResults(t.Context(), id, evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
		j, _ := json.Marshal(r.Trajectory)
		got[r.ItemID] = string(j)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a": `{"steps":2,"calls":[{"name":"t","args":{"k":1},"output":"r","mocked":false,"latency_ms":null}]}`,
		"b": "null",
		"c": `{"steps":1,"calls":[]}`,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("stored trajectory of %s = %s, want %s", k, got[k], w)
		}
	}
}

// A line's trajectory holds at most maxReplayedCalls calls.
func TestReadOutputsTrajectoryLimit(t *testing.T) {
	calls := func(n int) string {
		return `{"id": "a", "output": "x", "trajectory": [` + strings.TrimSuffix(strings.Repeat(`{"name":"t"},`, n), ",") + "]}\n"
	}
	dir := t.TempDir()
	at := filepath.Join(dir, "at.jsonl")
	past := filepath.Join(dir, "past.jsonl")
	if err := os.WriteFile(at, []byte(calls(maxReplayedCalls)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(past, []byte(calls(maxReplayedCalls+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := readOutputs(at)
	if err != nil || len(s.trajectories["a"].Calls) != maxReplayedCalls {
		t.Fatalf("a trajectory at the limit: %v", err)
	}
	_, err = readOutputs(past)
	if err == nil || !strings.Contains(err.Error(), `past.jsonl:1: item "a": "trajectory" has 10001 calls, more than the limit of 10000`) || ExitCode(err) != ExitUsage {
		t.Fatalf("a trajectory past the limit: %v", err)
	}
}
