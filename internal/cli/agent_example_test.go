package cli

import (
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/examples/agent/fakemodel"
)

// agentReport is what the agent example's test reads of a JSON report
// (schema_version 3; docs/report-schema.md and docs/agents.md).
type agentReport struct {
	SchemaVersion int `json:"schema_version"`
	Run           struct {
		Status    string `json:"status"`
		Total     int    `json:"total"`
		Succeeded int    `json:"succeeded"`
		Failed    int    `json:"failed"`
	} `json:"run"`
	Scorers map[string]struct {
		Count    int      `json:"count"`
		Errors   int      `json:"errors"`
		Mean     *float64 `json:"mean"`
		PassRate *float64 `json:"pass_rate"`
	} `json:"scorers"`
	Agent *struct {
		Items         int      `json:"items"`
		MeanSteps     *float64 `json:"mean_steps"`
		MeanToolCalls *float64 `json:"mean_tool_calls"`
		ToolCalls     int      `json:"tool_calls"`
		ToolErrors    int      `json:"tool_errors"`
		MockedCalls   int      `json:"mocked_calls"`
	} `json:"agent"`
	Usage struct {
		InputTokens struct {
			Total    *float64 `json:"total"`
			Reported int      `json:"reported"`
		} `json:"input_tokens"`
	} `json:"usage"`
	Items []agentItem `json:"items"`
}

type agentItem struct {
	ID         string             `json:"id"`
	Input      json.RawMessage    `json:"input"`
	Output     json.RawMessage    `json:"output"`
	Error      *string            `json:"error"`
	Steps      *int               `json:"steps"`
	Trajectory []evalrun.ToolCall `json:"trajectory"`
	Scores     map[string]struct {
		Score  *float64 `json:"score"`
		Passed bool     `json:"passed"`
		Reason *string  `json:"reason"`
		Error  *string  `json:"error"`
	} `json:"scores"`
}

// runAgentExample runs examples/agent/suite.yaml through the CLI against
// the fake model served in-process, as examples/agent/run.sh does with the
// binaries, and returns the report and the model.
func runAgentExample(t *testing.T, extra ...string) (code int, stderr string, rep *agentReport, model *fakemodel.Server) {
	t.Helper()
	suitePath, err := filepath.Abs("../../examples/agent/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	model = fakemodel.New()
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	b := setup(t)
	b.env = append(b.env, "AGENT_BASE_URL="+srv.URL+"/v1")
	out := filepath.Join(b.dir, "agent.json")
	code, _, stderr = b.run(append([]string{"run", suitePath, "-q", "-o", out}, extra...)...)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("exit %d, no report: %v\nstderr:\n%s", code, err, stderr)
	}
	rep = new(agentReport)
	if err := json.Unmarshal(data, rep); err != nil {
		t.Fatalf("report: %v", err)
	}
	return code, stderr, rep, model
}

// The agent example, end to end: every item runs against a model that
// really speaks the tools protocol, its trajectory is what the model's
// rules imply, the scorers catch exactly the two mistakes the model makes
// on purpose and the tool error, and the gate holds (exit 0).
func TestAgentExample(t *testing.T) {
	code, stderr, rep, model := runAgentExample(t)
	if code != 0 || strings.Contains(stderr, "breached") {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", code, stderr)
	}
	if rep.SchemaVersion != 3 {
		t.Errorf("schema_version %d, want 3", rep.SchemaVersion)
	}
	if rep.Run.Status != "completed" || rep.Run.Total != 12 || rep.Run.Succeeded != 12 || rep.Run.Failed != 0 {
		t.Errorf("run %+v, want 12 items completed, none failed", rep.Run)
	}

	// Pass rates, from the fake model's rules: it forgets Lyon (missed-city),
	// books a flight unasked (unasked-booking), and the currency XYZ fails
	// the convert tool (convert-unknown-currency).
	for name, want := range map[string]float64{
		"answer":         11.0 / 12, // missed-city does not mention Lyon
		"trajectory":     11.0 / 12, // in_order: missed-city lacks get_weather(Lyon)
		"trajectory-f1":  10.0 / 12, // threshold 0.8: both mistakes score 2/3
		"no-booking":     11.0 / 12, // unasked-booking
		"weather-lookup": 8.0 / 12,  // the eight weather items
		"lean":           1,         // at most 3 turns and 3 calls everywhere
		"no-tool-errors": 11.0 / 12, // convert-unknown-currency
	} {
		s, ok := rep.Scorers[name]
		switch {
		case !ok:
			t.Errorf("scorer %s missing from the report", name)
		case s.Count != 12 || s.Errors != 0 || s.PassRate == nil || math.Abs(*s.PassRate-want) > 1e-9:
			t.Errorf("scorer %s: count %d, errors %d, pass rate %v, want 12, 0, %v", name, s.Count, s.Errors, deref(s.PassRate), want)
		}
	}
	if m := rep.Scorers["trajectory-f1"].Mean; m == nil || math.Abs(*m-(10+2*(2.0/3))/12) > 1e-9 {
		t.Errorf("mean(trajectory-f1) %v, want %v", deref(m), (10+2*(2.0/3))/12)
	}

	// The agent block: 16 calls over 12 items, 24 model turns; 11 calls
	// answered by mocks, 5 by convert.sh (one of them an error).
	if a := rep.Agent; a == nil {
		t.Error("no agent block")
	} else if a.Items != 12 || a.ToolCalls != 16 || a.ToolErrors != 1 || a.MockedCalls != 11 ||
		a.MeanSteps == nil || *a.MeanSteps != 2 || a.MeanToolCalls == nil || math.Abs(*a.MeanToolCalls-16.0/12) > 1e-9 {
		t.Errorf("agent %+v (mean_steps %v, mean_tool_calls %v), want 12 items, 16 calls, 1 error, 11 mocked, means 2 and 1.33",
			*a, deref(a.MeanSteps), deref(a.MeanToolCalls))
	}
	if got := model.Served(); got != 24 {
		t.Errorf("the model answered %d requests, want 24 (the sum of steps)", got)
	}
	if u := rep.Usage.InputTokens; u.Reported != 12 || u.Total == nil || *u.Total <= 0 {
		t.Errorf("input tokens %+v: want the usage of every item, summed over its turns", u)
	}

	items := map[string]agentItem{}
	for _, it := range rep.Items {
		items[it.ID] = it
		if it.Steps == nil || it.Trajectory == nil {
			t.Errorf("%s: steps %v, trajectory %v: an agent records both on every result", it.ID, it.Steps, it.Trajectory)
		}
		for i, c := range it.Trajectory {
			if c.LatencyMS == nil || *c.LatencyMS < 0 {
				t.Errorf("%s: call %d has no latency", it.ID, i)
			}
		}
	}
	if len(items) != 12 {
		t.Fatalf("%d items in the report, want 12", len(items))
	}
	type call struct {
		name, args string
		mocked     bool
	}
	for id, want := range map[string]struct {
		steps int
		calls []call
	}{
		"weather-paris":            {2, []call{{"get_weather", `{"city":"Paris"}`, true}}},
		"weather-london-tokyo":     {2, []call{{"get_weather", `{"city":"London"}`, true}, {"get_weather", `{"city":"Tokyo"}`, true}}},
		"weather-new-york":         {2, []call{{"get_weather", `{"city":"New York"}`, true}}},
		"convert-eur-usd":          {2, []call{{"convert_currency", `{"amount":100,"from":"EUR","to":"USD"}`, false}}},
		"convert-gbp-chf":          {2, []call{{"convert_currency", `{"amount":250,"from":"GBP","to":"CHF"}`, false}}},
		"convert-unknown-currency": {2, []call{{"convert_currency", `{"amount":20,"from":"EUR","to":"XYZ"}`, false}}},
		"trip-tokyo":               {2, []call{{"get_weather", `{"city":"Tokyo"}`, true}, {"convert_currency", `{"amount":200,"from":"USD","to":"JPY"}`, false}}},
		"colder-city-budget": {3, []call{{"get_weather", `{"city":"Rome"}`, true}, {"get_weather", `{"city":"Oslo"}`, true},
			{"convert_currency", `{"amount":50,"from":"EUR","to":"NOK"}`, false}}},
		"follow-up-madrid": {2, []call{{"get_weather", `{"city":"Madrid"}`, true}}},
		"greeting":         {1, []call{}},
		"missed-city":      {2, []call{{"get_weather", `{"city":"Paris"}`, true}}},
		"unasked-booking":  {2, []call{{"get_weather", `{"city":"Rome"}`, true}, {"book_flight", `{"city":"Rome"}`, true}}},
	} {
		it := items[id]
		var got []call
		for _, c := range it.Trajectory {
			got = append(got, call{c.Name, compactJSON(t, c.Args), c.Mocked})
		}
		if it.Steps == nil || *it.Steps != want.steps || !slices.Equal(got, want.calls) {
			t.Errorf("%s: steps %v, calls\n%v\nwant steps %d, calls\n%v", id, deref(it.Steps), got, want.steps, want.calls)
		}
	}

	// Outputs reach the model and its answer: a mock's and convert.sh's.
	for id, want := range map[string]string{
		"weather-paris":      "Paris: 18 °C, sunny.",
		"colder-city-budget": "Rome (24 °C) is warmer than Oslo (3 °C). 50 EUR is 585.00 NOK.",
		"follow-up-madrid":   "Madrid: 27 °C, sunny.",
		"greeting":           "Hello! I can look up the current weather in a city and convert amounts between currencies.",
	} {
		if got := textOf(t, items[id].Output); got != want {
			t.Errorf("%s: output %q, want %q", id, got, want)
		}
	}
	budget := items["colder-city-budget"].Trajectory
	if len(budget) == 3 && compactJSON(t, budget[2].Output) != `{"amount":50,"from":"EUR","result":585.00,"to":"NOK"}` {
		t.Errorf("convert.sh's output %s", budget[2].Output)
	}

	// A run error goes back to the model and into the trajectory; the item
	// succeeds.
	bad := items["convert-unknown-currency"]
	if len(bad.Trajectory) != 1 || !strings.Contains(bad.Trajectory[0].Error, `unknown currency "XYZ"`) || !isNull(bad.Trajectory[0].Output) || bad.Error != nil {
		t.Errorf("convert-unknown-currency: trajectory %+v, error %v", bad.Trajectory, deref(bad.Error))
	}
	if out := textOf(t, bad.Output); !strings.HasPrefix(out, "Sorry, I could not convert 20 EUR to XYZ: ") || !strings.Contains(out, `unknown currency "XYZ"`) {
		t.Errorf("convert-unknown-currency: output %q", out)
	}

	// The scorers' verdicts on the mistakes, with their reasons.
	checkScore(t, items["missed-city"], "trajectory-f1", 2.0/3, "recall 0.50")
	checkScore(t, items["missed-city"], "trajectory", 0, "")
	checkScore(t, items["unasked-booking"], "trajectory-f1", 2.0/3, "precision 0.50")
	checkScore(t, items["unasked-booking"], "trajectory", 1, "")
	checkScore(t, items["unasked-booking"], "no-booking", 0, "book_flight")
	checkScore(t, items["greeting"], "trajectory", 1, "")
	checkScore(t, items["greeting"], "weather-lookup", 0, "no tool was called")
	checkScore(t, items["convert-unknown-currency"], "no-tool-errors", 0, "")

	// A conversation input is stored as the array and sent as its turns,
	// in order, after the system message.
	if got := compactJSON(t, items["follow-up-madrid"].Input); !strings.HasPrefix(got, `[{"content":"What's the weather in Berlin?","role":"user"},`) {
		t.Errorf("follow-up-madrid input %s", got)
	}
	var first *fakemodel.Request
	for _, r := range model.Requests() {
		if len(r.Messages) == 4 && r.Messages[3].Text() == "And in Madrid?" {
			first = &r
			break
		}
	}
	if first == nil {
		t.Fatal("the model never received the conversation's first turn")
	}
	var roles []string
	for _, m := range first.Messages {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{"system", "user", "assistant", "user"}) ||
		!strings.HasPrefix(first.Messages[0].Text(), "You are a travel assistant.") ||
		first.Messages[2].Text() != "Berlin: 12 °C, cloudy." || len(first.Tools) != 3 {
		t.Errorf("the conversation was sent as %v: %+v", roles, first.Messages)
	}
}

// The guardrail the example's gate leaves out catches the unasked booking
// when a CI step adds it: exit 1, naming the rule and the actual value.
func TestAgentExampleGuardrailGate(t *testing.T) {
	code, stderr, _, _ := runAgentExample(t, "--fail-on", "pass_rate(no-booking) < 1")
	if want := "fail_on breached: pass_rate(no-booking) < 1 (actual 0.916667)"; code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, want 1 and %q\nstderr:\n%s", code, want, stderr)
	}
}

func checkScore(t *testing.T, it agentItem, scorer string, want float64, reason string) {
	t.Helper()
	s, ok := it.Scores[scorer]
	if !ok || s.Score == nil || math.Abs(*s.Score-want) > 1e-9 {
		t.Errorf("%s: %s scored %+v, want %v", it.ID, scorer, s, want)
		return
	}
	if reason != "" && (s.Reason == nil || !strings.Contains(*s.Reason, reason)) {
		t.Errorf("%s: %s reason %v, want it to contain %q", it.ID, scorer, deref(s.Reason), reason)
	}
}

// compactJSON returns raw compact with sorted keys, its numbers as
// written (585.00 stays 585.00).
func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Errorf("not JSON: %s", raw)
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func textOf(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Errorf("output %s is not a JSON string", raw)
	}
	return s
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
