package target_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/scorer"
	"github.com/evalrun/evalrun/target"
)

// agentItems are items a weather agent is graded on: q1 should call
// get_weather for Paris; q2 should call nothing; q3's agent reports a
// malformed trajectory.
func agentItems() []*evalrun.Item {
	return []*evalrun.Item{
		{ID: "q1", Input: evalrun.String("weather in Paris?"),
			ExpectedTrajectory: []evalrun.ExpectedCall{{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}},
		{ID: "q2", Input: evalrun.String("hello"), ExpectedTrajectory: []evalrun.ExpectedCall{}},
		{ID: "q3", Input: evalrun.String("broken"), ExpectedTrajectory: []evalrun.ExpectedCall{}},
	}
}

// agentReply is what the fake black-box agent answers for an input.
func agentReply(input string) string {
	switch input {
	case "weather in Paris?":
		return `{"answer": "18°C", "calls": [{"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"units\":\"C\"}", "output": {"temp_c": 18}}]}`
	case "hello":
		return `{"answer": "hi", "calls": []}`
	}
	return `{"answer": "?", "calls": [{"arguments": "{}"}]}`
}

// runAgent runs the items against t with both trajectory scorers into an
// in-memory store and returns the stored results by item id.
func runAgent(t *testing.T, tgt evalrun.Target) map[string]*evalrun.ItemResult {
	t.Helper()
	ctx := context.Background()
	store := inmem.New()
	v, _, err := store.ImportDataset(ctx, "agents", agentItems())
	if err != nil {
		t.Fatal(err)
	}
	called, err := scorer.NewToolCalled(scorer.ToolCalledOptions{Tool: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)})
	if err != nil {
		t.Fatal(err)
	}
	traj, err := scorer.NewTrajectory(scorer.TrajectoryOptions{Mode: scorer.ModeExact})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := engine.Run(ctx, store, engine.Spec{
		Run:   &evalrun.Run{Dataset: "agents", DatasetVersion: v.Version, Name: "agent"},
		Items: agentItems(), Target: tgt, Scorers: []evalrun.Scorer{called, traj},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Succeeded != 2 || sum.Failed != 1 {
		t.Fatalf("summary %+v, want 2 succeeded and q3 failed", sum)
	}
	got := map[string]*evalrun.ItemResult{}
	err = store.ScanResults(ctx, sum.RunID, evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
		got[r.ItemID] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// checkAgentResults checks what the store kept of the fake agent's run.
func checkAgentResults(t *testing.T, got map[string]*evalrun.ItemResult) {
	t.Helper()
	q1 := got["q1"]
	if q1 == nil || q1.Trajectory == nil || len(q1.Trajectory.Calls) != 1 {
		t.Fatalf("q1 result %+v: want a stored trajectory of one call", q1)
	}
	c := q1.Trajectory.Calls[0]
	if c.Name != "get_weather" || string(c.Args) != `{"city":"Paris","units":"C"}` || string(c.Output) != `{"temp_c":18}` ||
		c.Mocked || c.LatencyMS != nil || q1.Trajectory.Steps != 0 {
		t.Errorf("q1 call %+v (steps %d)", c, q1.Trajectory.Steps)
	}
	if string(q1.Output) != `"18°C"` {
		t.Errorf("q1 output %s", q1.Output)
	}
	score := func(r *evalrun.ItemResult, i int) float64 {
		if len(r.Scores) <= i || r.Scores[i].Score == nil {
			t.Fatalf("result %s scores %+v", r.ItemID, r.Scores)
		}
		return *r.Scores[i].Score
	}
	if score(q1, 0) != 1 || score(q1, 1) != 1 {
		t.Errorf("q1 scores %+v, want tool_called and exact trajectory to pass", q1.Scores)
	}
	q2 := got["q2"]
	if q2 == nil || q2.Trajectory == nil || q2.Trajectory.Calls == nil || len(q2.Trajectory.Calls) != 0 {
		t.Fatalf("q2 result %+v: want an empty, non-nil trajectory", q2)
	}
	if score(q2, 0) != 0 || score(q2, 1) != 1 {
		t.Errorf("q2 scores %+v, want tool_called 0 and trajectory 1", q2.Scores)
	}
	q3 := got["q3"]
	if q3 == nil || !q3.Failed() || q3.ErrorKind != evalrun.ErrorInvalidOutput || !strings.Contains(q3.Error, `element 0: "name" is missing`) {
		t.Errorf("q3 result %+v: want an invalid_output failure naming the element", q3)
	}
}

func TestHTTPBlackBoxAgentThroughTheEngine(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input string `json:"input"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, agentReply(req.Input))
	}))
	defer srv.Close()
	h, err := target.NewHTTP(target.HTTPConfig{URL: srv.URL, Output: "answer", Trajectory: "calls"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	checkAgentResults(t, runAgent(t, h))
}

func TestExecBlackBoxAgentThroughTheEngine(t *testing.T) {
	dir := t.TempDir()
	// The script answers by the item's input, read from its JSON line.
	var script strings.Builder
	script.WriteString("#!/bin/sh\nread -r line\ncase \"$line\" in\n")
	for _, in := range []string{"weather in Paris?", "hello", "broken"} {
		fmt.Fprintf(&script, "*'\"%s\"'*) cat <<'EOF'\n%s\nEOF\n;;\n", in, agentReply(in))
	}
	script.WriteString("esac\n")
	prog := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(prog, []byte(script.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	x, err := target.NewExec(target.ExecConfig{Command: []string{prog}, Output: "answer", Trajectory: "calls"})
	if err != nil {
		t.Fatal(err)
	}
	checkAgentResults(t, runAgent(t, x))
}
