package report

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// hostileTool is a tool name a black-box agent might report: HTML, a pipe
// and Markdown emphasis.
const hostileTool = "<img src=x onerror=alert(1)>|**x**"

// hugeArgs is a tool call's arguments of 100 KB.
var hugeArgs = `{"q":"` + strings.Repeat("A", 100_000) + `"}`

func agentRun() *evalrun.Run {
	return &evalrun.Run{
		ID: "20260102T030405-agent001", Name: "weather-agent", Dataset: "weather", DatasetVersion: 1,
		Target:  evalrun.TargetInfo{Kind: "openai", Name: "agent"},
		Scorers: []evalrun.ScorerInfo{{Name: "called", Kind: "tool_called", Threshold: 0.5}},
		Status:  evalrun.RunCompleted, Total: 4, Succeeded: 3, Failed: 1,
		CreatedAt: t0, StartedAt: t0, CompletedAt: t0.Add(time.Second),
	}
}

// agentResults are three results of an agent (a conversation with a mocked
// and a failed call; no call at all; a failure after a hostile call with
// huge arguments) and one of a plain target.
func agentResults() []*evalrun.ItemResult {
	lat := 12.5
	conv := json.RawMessage(`[{"role":"system","content":"You are a weather bot."},{"role":"user","content":"Weather in Paris?\nAnd <b>tomorrow</b>?"}]`)
	rs := []*evalrun.ItemResult{
		{Index: 0, ItemID: "a1", Item: &evalrun.Item{ID: "a1", Input: conv}, Output: evalrun.String("18°C"),
			Attempts: 1, Latency: 40 * time.Millisecond,
			Trajectory: &evalrun.Trajectory{Steps: 3, Calls: []evalrun.ToolCall{
				{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`), Output: json.RawMessage(`{"temp_c":18}`), Mocked: true, LatencyMS: &lat},
				{Name: "search", Args: json.RawMessage(`{}`), Error: "search is down"},
			}},
			Scores: []evalrun.ScorerResult{score("called", 0, 0.5)}},
		{Index: 1, ItemID: "a2", Item: &evalrun.Item{ID: "a2", Input: evalrun.String("hi")}, Output: evalrun.String("hello"),
			Attempts: 1, Trajectory: &evalrun.Trajectory{Steps: 1, Calls: []evalrun.ToolCall{}},
			Scores: []evalrun.ScorerResult{score("called", 1, 0.5)}},
		{Index: 2, ItemID: "a3", Item: &evalrun.Item{ID: "a3", Input: evalrun.String("weather?")},
			Error: "tool " + hostileTool + " has no mock for arguments " + hugeArgs, ErrorKind: evalrun.ErrorPermanent, Attempts: 1,
			Trajectory: &evalrun.Trajectory{Steps: 2, Calls: []evalrun.ToolCall{
				{Name: hostileTool, Args: json.RawMessage(hugeArgs), Output: json.RawMessage(`"</script><script>alert(1)</script>"`)},
			}}},
		{Index: 3, ItemID: "plain", Item: item("plain", nil), Output: evalrun.String("answer plain"), Attempts: 1,
			Scores: []evalrun.ScorerResult{score("called", 1, 0.5)}},
	}
	for _, r := range rs {
		r.RunID = "20260102T030405-agent001"
	}
	return rs
}

func agentReport(opts ...Option) *Report { return Build(agentRun(), agentResults(), opts...) }

func TestAgentJSON(t *testing.T) {
	data := renderJSON(t, agentReport())
	if err := validate(t, compileSchema(t), data); err != nil {
		t.Fatalf("agent report does not match the schema: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if string(m["schema_version"]) != "3" {
		t.Errorf("schema_version = %s, want 3", m["schema_version"])
	}
	wantAgent := `{"items":3,"mean_steps":2,"steps_reported":3,"mean_tool_calls":1,"tool_calls":3,"tool_errors":1,"mocked_calls":1}`
	if got := compact(t, m["agent"]); got != wantAgent {
		t.Errorf("agent = %s\nwant    %s", got, wantAgent)
	}
	// "agent" comes before "items", which stays last (the streaming
	// writers rely on it).
	if i, j := bytes.Index(data, []byte(`"agent":`)), bytes.Index(data, []byte("\n  \"items\":")); i < 0 || j < i {
		t.Errorf(`"agent" at %d, "items" at %d`, i, j)
	}

	var items []map[string]json.RawMessage
	if err := json.Unmarshal(m["items"], &items); err != nil {
		t.Fatal(err)
	}
	wantA1 := `[{"name":"get_weather","args":{"city":"Paris"},"output":{"temp_c":18},"error":null,"mocked":true,"latency_ms":12.5},` +
		`{"name":"search","args":{},"output":null,"error":"search is down","mocked":false,"latency_ms":null}]`
	if got := compact(t, items[0]["trajectory"]); got != wantA1 {
		t.Errorf("items[0].trajectory = %s\nwant %s", got, wantA1)
	}
	if string(items[0]["steps"]) != "3" || compact(t, items[0]["input"]) != compact(t, agentResults()[0].Item.Input) {
		t.Errorf("items[0] steps %s input %s", items[0]["steps"], items[0]["input"])
	}
	if got := compact(t, items[1]["trajectory"]); got != "[]" || string(items[1]["steps"]) != "1" {
		t.Errorf("an agent that called nothing: trajectory %s steps %s, want [] and 1", got, items[1]["steps"])
	}
	// Huge arguments and hostile names are written exactly in the JSON.
	var a3 []TrajectoryCall
	if err := json.Unmarshal(items[2]["trajectory"], &a3); err != nil {
		t.Fatal(err)
	}
	if len(a3) != 1 || a3[0].Name != hostileTool || compact(t, a3[0].Args) != hugeArgs || string(a3[0].Output) != `"</script><script>alert(1)</script>"` {
		t.Errorf("items[2].trajectory lost its exact values (name %q, %d bytes of args)", a3[0].Name, len(a3[0].Args))
	}
	for _, k := range []string{"trajectory", "steps"} {
		if v, ok := items[3][k]; ok {
			t.Errorf("items[3] (not an agent) has %q: %s", k, v)
		}
	}

	back, err := ReadJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agentReport(), back, cmp.Comparer(sameJSON), cmpIgnoreIndex); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func compact(t *testing.T, v json.RawMessage) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		t.Fatalf("compact %.80s: %v", v, err)
	}
	return buf.String()
}

func TestAgentSummaryLines(t *testing.T) {
	const line = "3 items, mean 2.0 steps, 1.0 tool calls per item (1 tool error, 1 mocked)"
	rep := agentReport()
	var term, md bytes.Buffer
	if err := WriteTerminal(&term, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, rep, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(term.String(), "\nagent: "+line+"\n") {
		t.Errorf("terminal has no agent line %q:\n%s", line, term.String())
	}
	if !strings.Contains(md.String(), "\n**Agent:** "+line+"\n") {
		t.Errorf("Markdown has no agent line %q:\n%s", line, md.String())
	}

	// Hostile text (HTML, pipes, emphasis, a 100 KB message) cannot break
	// the Markdown: the failure row is escaped and cut.
	out := md.String()
	for _, raw := range []string{"<img", "<script", "|**x**"} {
		if strings.Contains(out, raw) {
			t.Errorf("Markdown contains raw %q", raw)
		}
	}
	if !strings.Contains(out, `&lt;img src=x onerror=alert(1)&gt;\|\*\*x\*\*`) {
		t.Errorf("Markdown does not show the escaped tool name in the failure:\n%s", out)
	}
	if len(out) > 8<<10 {
		t.Errorf("Markdown is %d bytes: the 100 KB failure message was not cut", len(out))
	}
	if strings.Contains(term.String(), strings.Repeat("A", 200)) {
		t.Error("terminal shows the huge arguments uncut")
	}

	// Without trajectories there is no agent block and no line.
	plain := fixtureReport(t)
	term.Reset()
	md.Reset()
	WriteTerminal(&term, plain)
	WriteMarkdown(&md, plain, MarkdownOptions{})
	if plain.Agent != nil || strings.Contains(term.String(), "agent:") || strings.Contains(md.String(), "**Agent:**") {
		t.Errorf("a report without trajectories shows an agent summary: %+v", plain.Agent)
	}
	if bytes.Contains(renderJSON(t, plain), []byte(`"agent"`)) {
		t.Error(`a report without trajectories has an "agent" key`)
	}
}

// TestAgentWithoutSteps: a black-box agent reports calls but no steps:
// mean_steps is null, not 0, and the line says so.
func TestAgentWithoutSteps(t *testing.T) {
	rs := agentResults()
	for _, r := range rs {
		if r.Trajectory != nil {
			r.Trajectory.Steps = 0
		}
	}
	rep := Build(agentRun(), rs)
	a := rep.Agent
	if a == nil || a.MeanSteps != nil || a.StepsReported != 0 || a.Items != 3 || a.ToolCalls != 3 {
		t.Fatalf("agent = %+v, want 3 items, 3 calls, mean_steps nil", a)
	}
	data := renderJSON(t, rep)
	if !bytes.Contains(data, []byte(`"mean_steps": null`)) || bytes.Contains(data, []byte(`"steps": `)) {
		t.Errorf("mean_steps not null or an item has steps:\n%s", data[:min(len(data), 3000)])
	}
	if err := validate(t, compileSchema(t), data); err != nil {
		t.Errorf("schema: %v", err)
	}
	var term bytes.Buffer
	WriteTerminal(&term, rep)
	if want := "agent: 3 items, steps not reported, 1.0 tool calls per item (1 tool error, 1 mocked)"; !strings.Contains(term.String(), want) {
		t.Errorf("terminal lacks %q:\n%s", want, term.String())
	}
}

func TestAgentJUnit(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, agentReport()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Name    string        `xml:"name,attr"`
			Error   *junitProblem `xml:"error"`
			Failure *junitProblem `xml:"failure"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit is not XML: %v", err)
	}
	if len(doc.Cases) != 4 {
		t.Fatalf("%d test cases, want 4", len(doc.Cases))
	}
	a1 := doc.Cases[0].Failure
	if a1 == nil {
		t.Fatal("a1 has no failure")
	}
	want := "called: score 0 below threshold 0.5: r:called\n\n" +
		"conversation:\nsystem: You are a weather bot.\nuser: Weather in Paris? And <b>tomorrow</b>?\n\n" +
		"trajectory: 2 tool calls in 3 steps\n" +
		`1. get_weather {"city":"Paris"} → {"temp_c":18} (mocked) [12ms]` + "\n" +
		"2. search {} → error: search is down"
	if a1.Body != want {
		t.Errorf("a1 failure text:\n%s\nwant:\n%s", a1.Body, want)
	}
	a3 := doc.Cases[2].Error
	if a3 == nil {
		t.Fatal("a3 has no error")
	}
	if !strings.Contains(a3.Body, "trajectory: 1 tool call in 2 steps\n1. "+hostileTool+` {"q":"AAAA`) ||
		!strings.Contains(a3.Body, `→ </script><script>alert(1)</script>`) {
		t.Errorf("a3 error text lacks its trajectory:\n%.2000s", a3.Body)
	}
	if len(a3.Body) > maxProblemBytes+200 {
		t.Errorf("a3 error text is %d bytes, over the bound %d", len(a3.Body), maxProblemBytes)
	}
	// The passing agent item and the plain item have no problem; a
	// plain failing item keeps the text it had before version 3.
	if doc.Cases[1].Failure != nil || doc.Cases[1].Error != nil || doc.Cases[3].Failure != nil {
		t.Errorf("passing cases have problems: %+v", doc.Cases)
	}
}

func TestInputText(t *testing.T) {
	many := make([]evalrun.ConversationMessage, 60)
	for i := range many {
		many[i] = evalrun.ConversationMessage{Role: "user", Content: fmt.Sprintf("m%d", i)}
	}
	manyJSON, _ := json.Marshal(many)
	long, _ := json.Marshal([]evalrun.ConversationMessage{{Role: "user", Content: strings.Repeat("x", 1000)}})
	for _, tc := range []struct {
		name, in, want string
	}{
		{"conversation", `[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi\n\nthere"},{"role":"assistant","content":"Hello"}]`,
			"system: Be brief.\nuser: Hi there\nassistant: Hello"},
		{"string", `"what is 2+2?"`, "what is 2+2?"},
		{"object", `{"question": "q"}`, `{"question":"q"}`},
		{"array that is not a conversation", `[{"role":"user","content":"x","name":"n"}]`, `[{"role":"user","content":"x","name":"n"}]`},
		{"long content", string(long), "user: " + strings.Repeat("x", maxShownValue-1) + "…"},
	} {
		if got := inputText(json.RawMessage(tc.in)); got != tc.want {
			t.Errorf("%s: inputText = %q, want %q", tc.name, got, tc.want)
		}
	}
	got := inputText(manyJSON)
	if lines := strings.Split(got, "\n"); len(lines) != maxShownEntries+1 || lines[maxShownEntries] != "… and 10 more messages" {
		t.Errorf("60 messages: %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

// TestAgentStream: the streamed JSON and JUnit of an agent run are those of
// the report with its rows, and the agent block of a report built from the
// store without rows is the same.
func TestAgentStream(t *testing.T) {
	store := &fakeStore{run: agentRun(), results: agentResults()}
	ctx := context.Background()
	lean, err := FromStore(ctx, store, store.run.ID, WithoutItems())
	if err != nil {
		t.Fatal(err)
	}
	full := agentReport()
	if diff := cmp.Diff(full.Agent, lean.Agent); diff != "" {
		t.Errorf("agent block without rows (-want +got):\n%s", diff)
	}
	src := ItemSource{Store: store, RunID: store.run.ID}
	for _, f := range []Format{FormatJSON, FormatJUnit} {
		var want, got bytes.Buffer
		if err := Write(&want, full, f); err != nil {
			t.Fatal(err)
		}
		if err := WriteStream(ctx, &got, lean, f, src); err != nil {
			t.Fatal(err)
		}
		if want.String() != got.String() {
			t.Errorf("%s: streamed output differs from the report with rows", f)
		}
	}
}

// v2Reader is what a consumer written against schema_version 2 decodes: a
// Go struct with version 2 fields only (encoding/json ignores the others).
type v2Reader struct {
	SchemaVersion int `json:"schema_version"`
	Run           struct {
		ID        string `json:"id"`
		Status    string `json:"status"`
		Total     int    `json:"total"`
		Succeeded int    `json:"succeeded"`
		Failed    int    `json:"failed"`
		CacheHits int    `json:"cache_hits"`
	} `json:"run"`
	Scorers map[string]struct {
		Count    int      `json:"count"`
		Mean     *float64 `json:"mean"`
		PassRate *float64 `json:"pass_rate"`
	} `json:"scorers"`
	MacroPassRate *float64 `json:"macro_pass_rate"`
	Failures      []struct {
		ItemID  *string `json:"item_id"`
		Stage   string  `json:"stage"`
		Message string  `json:"message"`
	} `json:"failures"`
	Items []struct {
		Index  int             `json:"index"`
		ID     string          `json:"id"`
		Input  json.RawMessage `json:"input"`
		Output json.RawMessage `json:"output"`
		Error  *string         `json:"error"`
		Scores map[string]struct {
			Score  *float64 `json:"score"`
			Passed bool     `json:"passed"`
		} `json:"scores"`
	} `json:"items"`
}

// TestVersion2ReaderReadsVersion3 proves that version 3 only adds to
// version 2, against the version 2 JSON Schema as it was
// (testdata/report.v2.schema.json, kept from before version 3):
//
//   - that schema forbids unknown properties, so a strict version 2
//     validator rejects a version 3 report; it must reject it only for
//     the version number and the added fields, nothing else;
//   - the version 3 report without its additions validates against it,
//     and is exactly the version 2 report of the same results without
//     trajectories;
//   - a version 2 Go reader (a struct of version 2 fields) decodes the
//     version 3 report with the right values.
func TestVersion2ReaderReadsVersion3(t *testing.T) {
	v2 := compileSchemaFile(t, "testdata/report.v2.schema.json")
	data := renderJSON(t, agentReport())

	// 1. Where the version 2 schema objects.
	err := validate(t, v2, data)
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("the v2 schema accepts a v3 report or failed otherwise: %v", err)
	}
	var where []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		loc := "/" + strings.Join(e.InstanceLocation, "/")
		if ap, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
			for _, p := range ap.Properties {
				where = append(where, strings.TrimSuffix(loc, "/")+"/"+p)
			}
			return
		}
		where = append(where, loc)
	}
	walk(verr)
	slices.Sort(where)
	where = slices.Compact(where)
	want := []string{"/agent", "/items/0/steps", "/items/0/trajectory", "/items/1/steps", "/items/1/trajectory",
		"/items/2/steps", "/items/2/trajectory", "/schema_version"}
	if diff := cmp.Diff(want, where); diff != "" {
		t.Errorf("the v2 schema objects to more than the v3 additions (-want +got):\n%s", diff)
	}

	// 2. Version 3 minus its additions is version 2.
	var now map[string]any
	if err := json.Unmarshal(data, &now); err != nil {
		t.Fatal(err)
	}
	now["schema_version"] = 2.0
	delete(now, "agent")
	for _, it := range now["items"].([]any) {
		delete(it.(map[string]any), "trajectory")
		delete(it.(map[string]any), "steps")
	}
	stripped, err := json.Marshal(now)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(t, v2, stripped); err != nil {
		t.Errorf("v3 without its additions does not match the v2 schema: %v", err)
	}
	rs := agentResults()
	for _, r := range rs {
		r.Trajectory = nil
	}
	var before map[string]any
	if err := json.Unmarshal(renderJSON(t, Build(agentRun(), rs)), &before); err != nil {
		t.Fatal(err)
	}
	before["schema_version"] = 2.0
	if diff := cmp.Diff(before, now); diff != "" {
		t.Errorf("v3 minus its additions differs from the report without trajectories (-before +v3):\n%s", diff)
	}

	// 3. A version 2 Go reader.
	var r v2Reader
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("a v2 reader cannot decode a v3 report: %v", err)
	}
	if r.SchemaVersion != 3 || r.Run.ID != "20260102T030405-agent001" || r.Run.Status != "completed" ||
		r.Run.Total != 4 || r.Run.Succeeded != 3 || r.Run.Failed != 1 || r.Run.CacheHits != 0 {
		t.Errorf("run read as %+v (version %d)", r.Run, r.SchemaVersion)
	}
	called := r.Scorers["called"]
	if called.Count != 3 || called.Mean == nil || *called.Mean != 2.0/3 || called.PassRate == nil || *called.PassRate != 2.0/3 ||
		r.MacroPassRate == nil || *r.MacroPassRate != 2.0/3 {
		t.Errorf("scorers read as %+v, macro %v", r.Scorers, r.MacroPassRate)
	}
	if len(r.Failures) != 1 || r.Failures[0].Stage != "target" || *r.Failures[0].ItemID != "a3" ||
		!strings.HasPrefix(r.Failures[0].Message, "tool "+hostileTool) {
		t.Errorf("failures read as %+v", r.Failures)
	}
	if len(r.Items) != 4 || r.Items[0].ID != "a1" || string(r.Items[1].Output) != `"hello"` || r.Items[2].Error == nil ||
		r.Items[3].ID != "plain" || !r.Items[1].Scores["called"].Passed || r.Items[0].Scores["called"].Passed {
		t.Errorf("items read as %+v", r.Items)
	}
	if _, ok := evalrun.Conversation(r.Items[0].Input); !ok {
		t.Errorf("items[0].input is no longer the conversation: %s", r.Items[0].Input)
	}
}

// TestSchemaRejectsAgentDrift mutates the version 3 fields.
func TestSchemaRejectsAgentDrift(t *testing.T) {
	sch := compileSchema(t)
	good := string(renderJSON(t, agentReport()))
	mutations := map[string][2]string{
		"agent in version 2":   {`"schema_version": 3`, `"schema_version": 2`},
		"mean_steps of 0":      {`"mean_steps": 2`, `"mean_steps": 0`},
		"agent without items":  {`"items": 3,`, ``},
		"call without mocked":  {`"mocked": true,`, ``},
		"steps of 0":           {`"steps": 3`, `"steps": 0`},
		"steps without calls":  {`"steps": 1,` + "\n      \"trajectory\": []", `"steps": 1`},
		"trajectory an object": {`"trajectory": []`, `"trajectory": {}`},
		"renamed tool_calls":   {`"tool_calls": 3`, `"calls": 3`},
	}
	schemaRejects(t, sch, good, mutations)
	// Trajectories in a version 2 report are rejected too.
	var m map[string]any
	json.Unmarshal([]byte(good), &m)
	m["schema_version"] = 2.0
	delete(m, "agent")
	v2, _ := json.Marshal(m)
	if err := validate(t, sch, v2); err == nil {
		t.Error("the schema accepts items[].trajectory in a version 2 report")
	}
}

// TestVersion2SchemaKept guards the copy of the version 2 schema the
// compatibility test relies on: it still describes version 2.
func TestVersion2SchemaKept(t *testing.T) {
	data, err := os.ReadFile("testdata/report.v2.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"schema_version": {"enum": [1, 2]}`)) {
		t.Error("testdata/report.v2.schema.json is not the version 2 schema")
	}
}

// TestCompareAgentCounts: a regressed agent item carries its tool calls and
// steps on both sides, from reports and from the store alike; a plain item
// carries none.
func TestCompareAgentCounts(t *testing.T) {
	a, b := agentResults(), agentResults()
	// In B, a2 (passed in A) loops: five calls in six steps, and fails
	// the scorer; plain regresses too.
	b[1].Trajectory = &evalrun.Trajectory{Steps: 6, Calls: make([]evalrun.ToolCall, 5)}
	b[1].Scores = []evalrun.ScorerResult{score("called", 0, 0.5)}
	b[3].Scores = []evalrun.ScorerResult{score("called", 0, 0.5)}
	runB := agentRun()
	runB.ID = "b"
	fromReports, err := Compare(Build(agentRun(), a), Build(runB, b), CompareOptions{Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	store := &twoRunStore{runs: map[string]*fakeStore{
		"a": {run: agentRun(), results: a}, "b": {run: runB, results: b}}}
	store.runs["a"].run.ID = "a"
	fromStore, err := CompareStore(context.Background(), store, "a", "b", CompareOptions{Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Comparison{"reports": fromReports, "store": fromStore} {
		if c.SchemaVersion != 3 || len(c.Regressed) != 2 {
			t.Fatalf("%s: version %d, regressed %+v", name, c.SchemaVersion, c.Regressed)
		}
		var buf bytes.Buffer
		WriteComparisonJSON(&buf, c)
		var got struct {
			Regressed []map[string]any `json:"regressed"`
		}
		json.Unmarshal(buf.Bytes(), &got)
		a2, plain := got.Regressed[0], got.Regressed[1]
		if a2["item_id"] != "a2" || a2["calls_a"] != 0.0 || a2["calls_b"] != 5.0 || a2["steps_a"] != 1.0 || a2["steps_b"] != 6.0 {
			t.Errorf("%s: regressed a2 = %v", name, a2)
		}
		for _, k := range []string{"calls_a", "calls_b", "steps_a", "steps_b"} {
			if _, ok := plain[k]; ok {
				t.Errorf("%s: the plain item has %s", name, k)
			}
		}
		buf.Reset()
		WriteComparisonMarkdown(&buf, c, MarkdownOptions{})
		if !strings.Contains(buf.String(), "| a2 | called | 1.000 | 0.000 | tool calls 0 → 5; steps 1 → 6 |") {
			t.Errorf("%s: Markdown lacks the agent note:\n%s", name, buf.String())
		}
	}
}

// twoRunStore serves several runs, for CompareStore.
type twoRunStore struct {
	evalrun.RunStore
	runs map[string]*fakeStore
}

func (s *twoRunStore) GetRun(ctx context.Context, id string) (*evalrun.Run, error) {
	if r, ok := s.runs[id]; ok {
		return r.GetRun(ctx, id)
	}
	return nil, evalrun.ErrNotFound
}

func (s *twoRunStore) ScanResults(ctx context.Context, id string, q evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	return s.runs[id].ScanResults(ctx, id, q, fn)
}

// TestAgentOddTrajectories: what a black-box agent or a damaged store might
// hand over still gives a valid report: nil calls, negative steps, values
// that are not JSON.
func TestAgentOddTrajectories(t *testing.T) {
	rs := []*evalrun.ItemResult{
		{Index: 0, ItemID: "nil-calls", Output: evalrun.String("x"), Trajectory: &evalrun.Trajectory{Steps: -4}},
		{Index: 1, ItemID: "not-json", Output: evalrun.String("x"), Trajectory: &evalrun.Trajectory{Calls: []evalrun.ToolCall{
			{Name: "t", Args: json.RawMessage(`{"a":`), Output: json.RawMessage(`<html>`)},
			{Name: "u"},
		}}},
	}
	rep := Build(&evalrun.Run{ID: "odd", Status: evalrun.RunCompleted}, rs)
	data := renderJSON(t, rep)
	if err := validate(t, compileSchema(t), data); err != nil {
		t.Fatalf("schema: %v\n%s", err, data)
	}
	if rep.Items[0].Trajectory == nil || len(rep.Items[0].Trajectory) != 0 || rep.Items[0].Steps != 0 {
		t.Errorf("nil calls, steps -4: row %+v", rep.Items[0])
	}
	got := rep.Items[1].Trajectory
	if string(got[0].Args) != `"{\"a\":"` || evalrun.Text(got[0].Output) != "<html>" || string(got[1].Args) != "{}" || got[1].Output != nil {
		t.Errorf("values that are not JSON: %+v", got)
	}
	if a := rep.Agent; a.Items != 2 || a.MeanSteps != nil || a.ToolCalls != 2 {
		t.Errorf("agent = %+v", a)
	}
	// A 1 MB output is shown by its beginning only.
	big := json.RawMessage(`"` + strings.Repeat("B", 1<<20) + `"`)
	if line := valueLine(big); len([]rune(line)) != maxShownValue || !strings.HasPrefix(line, `"BBB`) {
		t.Errorf("valueLine of 1 MB: %d runes, %.20q", len([]rune(line)), line)
	}
}
