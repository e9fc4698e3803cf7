package web

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/report"
)

const runAgent = "20260304T130000-dddddddd"

// Markup a model or a tool could put in a trajectory: each, if it ran, sets
// window.__pwned (the browser test checks it stays undefined).
const (
	pwnScript = `<script>window.__pwned=1</script>`
	pwnImg    = `"><img src=x onerror="window.__pwned=2">`
)

// longArgs are arguments long enough to be shown collapsed (over 20 lines).
func longArgs() json.RawMessage {
	m := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y"} {
		m["field_"+k] = "value of " + k
	}
	return evalrun.JSON(m)
}

// seedAgent stores dataset "agents" and a finished agent run of three
// items: "weather" (a conversation input; four calls: mocked, failed with
// markup in its error, collapsed arguments and markup in its output, and a
// tool named with markup), "noop" (an agent that called nothing) and
// "broken" (the target failed after one call).
func seedAgent(t testing.TB, s evalrun.Store) {
	t.Helper()
	ctx := context.Background()
	conv := `[{"role":"system","content":"You are a weather bot."},` +
		`{"role":"user","content":"Weather in Paris? ` + strings.ReplaceAll(pwnScript, `"`, `\"`) + `"},` +
		`{"role":"assistant","content":"Which unit?"},{"role":"user","content":"Celsius"}]`
	items := []*evalrun.Item{
		{ID: "weather", Input: json.RawMessage(conv)},
		{ID: "noop", Input: evalrun.String("say hi")},
		{ID: "broken", Input: evalrun.String("book a flight")},
	}
	if _, _, err := s.ImportDataset(ctx, "agents", items); err != nil {
		t.Fatal(err)
	}
	run := &evalrun.Run{
		ID: runAgent, Name: "weather agent", Dataset: "agents", DatasetVersion: 1,
		Target:  evalrun.TargetInfo{Kind: "openai", Name: "gpt-4o-mini"},
		Scorers: []evalrun.ScorerInfo{{Name: "called", Kind: "tool_called", Threshold: 1}},
		Status:  evalrun.RunCompleted, Total: 3, Succeeded: 2, Failed: 1,
		CreatedAt: t0.Add(3 * time.Hour), StartedAt: t0.Add(3 * time.Hour), CompletedAt: t0.Add(3*time.Hour + time.Minute),
	}
	if err := s.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	one, zero := 1.0, 0.0
	results := []*evalrun.ItemResult{{
		RunID: runAgent, Index: 0, ItemID: "weather", Output: evalrun.String("18 °C in Paris"), Attempts: 1,
		Latency: 2 * time.Second, StartedAt: t0, CompletedAt: t0.Add(2 * time.Second),
		Scores: []evalrun.ScorerResult{{Scorer: "called", Score: &one, Passed: true, Reason: "get_weather called"}},
		Trajectory: &evalrun.Trajectory{Steps: 3, Calls: []evalrun.ToolCall{
			{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`), Output: json.RawMessage(`{"temp_c":18}`), Mocked: true, LatencyMS: fptr(0.02)},
			{Name: "search", Args: json.RawMessage(`{"q":"` + pwnScript + `"}`), Error: "HTTP 500: <b>down</b> " + pwnImg, LatencyMS: fptr(120.6)},
			{Name: "lookup_many", Args: longArgs(), Output: evalrun.String(pwnScript + pwnImg)},
			{Name: `x` + pwnImg, Args: json.RawMessage(`{}`), Output: json.RawMessage(`"done"`), LatencyMS: fptr(1500)},
		}},
	}, {
		RunID: runAgent, Index: 1, ItemID: "noop", Output: evalrun.String("hi"), Attempts: 1,
		Latency: time.Second, StartedAt: t0, CompletedAt: t0.Add(time.Second),
		Scores:     []evalrun.ScorerResult{{Scorer: "called", Score: &zero, Reason: "no call"}},
		Trajectory: &evalrun.Trajectory{Steps: 1, Calls: []evalrun.ToolCall{}},
	}, {
		RunID: runAgent, Index: 2, ItemID: "broken", Error: "max_steps (2) exceeded", ErrorKind: evalrun.ErrorInvalidOutput, Attempts: 1,
		Latency: time.Second, StartedAt: t0, CompletedAt: t0.Add(time.Second),
		Trajectory: &evalrun.Trajectory{Steps: 2, Calls: []evalrun.ToolCall{
			{Name: "book", Args: json.RawMessage(`{"to":"NYC"}`), Output: json.RawMessage(`"pending"`), LatencyMS: fptr(3)},
		}},
	}}
	if err := s.WriteResults(ctx, results); err != nil {
		t.Fatal(err)
	}
}

func setupAgent(t *testing.T) *bundle {
	t.Helper()
	st := inmem.New()
	seed(t, st)
	seedAgent(t, st)
	return setupStore(t, st, Options{})
}

// calls splits an item page's timeline into its calls' HTML, in order.
func calls(t *testing.T, body string) []string {
	t.Helper()
	start := strings.Index(body, `<ol class="timeline" id="timeline">`)
	if start < 0 {
		t.Fatalf("no timeline in:\n%s", body)
	}
	end := start + strings.Index(body[start:], "</ol>")
	parts := strings.Split(body[start:end], `<li class="call`)
	return parts[1:]
}

// TestItemTrajectoryTimeline checks the item page of an agent item: the
// header, then each call in order with its name, arguments, output or
// error (marked as failed), mocked badge and latency, every model- or
// tool-controlled string escaped.
func TestItemTrajectoryTimeline(t *testing.T) {
	b := setupAgent(t)
	body := b.mustGet(t, "/runs/"+runAgent+"/items/0", http.StatusOK).body
	contains(t, "trajectory header", body, `<section id="trajectory">`,
		`<span class="count" id="trajectory-summary">3 steps · 4 tool calls · <span class="bad">1 failed</span> · 1 mocked</span>`)
	lacks(t, "finished item", body, "the calls of its last attempt")

	cs := calls(t, body)
	if len(cs) != 4 {
		t.Fatalf("%d calls in the timeline, want 4", len(cs))
	}
	want := []struct {
		name, latency  string
		mocked, failed bool
		has            []string
	}{
		{"get_weather", "&lt; 1 ms", true, false, []string{`<div class="k">arguments</div><pre class="value json">{
  &#34;city&#34;: &#34;Paris&#34;
}</pre>`, `<div class="k">output</div><pre class="value json">{
  &#34;temp_c&#34;: 18
}</pre>`}},
		{"search", "121 ms", false, true, []string{
			`&#34;q&#34;: &#34;&lt;script&gt;window.__pwned=1&lt;/script&gt;&#34;`,
			`<div class="k">error</div><pre class="value error-value">HTTP 500: &lt;b&gt;down&lt;/b&gt; &#34;&gt;&lt;img src=x onerror=&#34;window.__pwned=2&#34;&gt;</pre>`}},
		{"lookup_many", "—", false, false, []string{
			`<details><summary>27 lines`, `&#34;field_y&#34;: &#34;value of y&#34;`,
			`<pre class="value">&lt;script&gt;window.__pwned=1&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=&#34;window.__pwned=2&#34;&gt;</pre>`}},
		{`x&#34;&gt;&lt;img src=x onerror=&#34;window.__pwned=2&#34;&gt;`, "1.50 s", false, false, []string{`<pre class="value">done</pre>`}},
	}
	for i, w := range want {
		c := cs[i]
		contains(t, "call "+w.name, c, `<span class="call-n">`+string(rune('1'+i))+`</span>`,
			`<span class="call-name mono">`+w.name+`</span>`,
			`<span class="call-latency muted" title="latency">`+w.latency+`</span>`)
		contains(t, "call "+w.name, c, w.has...)
		if got := strings.Contains(c, `<span class="badge mocked">mocked</span>`); got != w.mocked {
			t.Errorf("call %d %s: mocked badge %v, want %v", i+1, w.name, got, w.mocked)
		}
		if got := strings.HasPrefix(c, ` call-failed"`); got != w.failed {
			t.Errorf("call %d %s: marked failed %v, want %v", i+1, w.name, got, w.failed)
		}
		if got := strings.Contains(c, `<div class="k">output</div>`); got == w.failed {
			t.Errorf("call %d %s: output shown %v with failed %v: a failed call shows its error instead", i+1, w.name, got, w.failed)
		}
	}
	lacks(t, "escaped item page", body, pwnScript, `<img src=x`, `<b>down`)
}

// TestItemTrajectoryKinds checks the other shapes: an agent that called
// nothing, a failed agent item (its last attempt's calls), an item whose
// target is not an agent (no trajectory section).
func TestItemTrajectoryKinds(t *testing.T) {
	b := setupAgent(t)
	noop := b.mustGet(t, "/runs/"+runAgent+"/items/1", http.StatusOK).body
	contains(t, "agent without calls", noop, `id="trajectory-summary">1 step · 0 tool calls</span>`, `<p class="muted" id="no-calls">No tool calls.</p>`)
	lacks(t, "agent without calls", noop, `id="timeline"`)

	broken := b.mustGet(t, "/runs/"+runAgent+"/items/2", http.StatusOK).body
	contains(t, "failed agent item", broken, `2 steps · 1 tool call</span>`, "The target failed: these are the calls of its last attempt.",
		`<span class="call-name mono">book</span>`, `<span class="call-latency muted" title="latency">3 ms</span>`)

	plain := b.mustGet(t, "/runs/"+runB+"/items/0", http.StatusOK).body
	lacks(t, "non-agent item", plain, `id="trajectory"`, "Trajectory", "No tool calls", `id="conversation"`)
	contains(t, "non-agent input unchanged", plain, `<div id="input"><pre class="value json">{
  &#34;question&#34;: &#34;question 1&#34;
}</pre></div>`)
}

// TestItemConversationInput checks that a conversation input is shown as
// its messages, role then content, in order and escaped.
func TestItemConversationInput(t *testing.T) {
	b := setupAgent(t)
	body := b.mustGet(t, "/runs/"+runAgent+"/items/0", http.StatusOK).body
	contains(t, "conversation", body, `<h2>Input <span class="count">conversation, 4 messages</span></h2>`)
	re := regexp.MustCompile(`<li class="msg-(\w+)"><span class="role">(\w+)</span><pre class="value">([^<]*)</pre></li>`)
	var got []string
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		if m[1] != m[2] {
			t.Errorf("message class %q with role %q", m[1], m[2])
		}
		got = append(got, m[2]+": "+m[3])
	}
	want := []string{
		"system: You are a weather bot.",
		"user: Weather in Paris? &lt;script&gt;window.__pwned=1&lt;/script&gt;",
		"assistant: Which unit?",
		"user: Celsius",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("conversation messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A string input is not a conversation.
	lacks(t, "string input", b.mustGet(t, "/runs/"+runAgent+"/items/1", http.StatusOK).body, `id="conversation"`, "conversation,")
}

// TestRunAgentFigures checks the run page's agent table: means per item
// with a trajectory (steps 3, 1, 2; calls 4, 0, 1), and no table for a run
// without trajectories.
func TestRunAgentFigures(t *testing.T) {
	b := setupAgent(t)
	body := b.mustGet(t, "/runs/"+runAgent, http.StatusOK).body
	contains(t, "agent figures", body, `<table class="grid narrow" id="agent">`,
		`<td class="n">3</td>`+"\n    "+`<td class="n strong" id="mean-steps">2.00</td>`+"\n    "+`<td class="n strong" id="mean-calls">1.67</td>`+"\n    "+
			`<td class="n">5</td>`+"\n    "+`<td class="n bad">1</td>`+"\n    "+`<td class="n">1</td>`)
	lacks(t, "run without agents", b.mustGet(t, "/runs/"+runB, http.StatusOK).body, `id="agent"`)
}

// TestStoredReportEmptyAgent: a stored "agent" block with no items
// describes no agent; the run page shows no agent figures for it.
func TestStoredReportEmptyAgent(t *testing.T) {
	st := &reportStore{countingStore: &countingStore{Store: inmem.New()}, reports: map[string][]byte{}}
	seedAgent(t, st)
	rep, err := report.FromStore(context.Background(), st, runAgent)
	if err != nil {
		t.Fatal(err)
	}
	rep.Agent = &report.AgentSummary{}
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	st.reports[runAgent] = buf.Bytes()
	st.scans.Store(0)
	b := setupStore(t, st, Options{})
	lacks(t, "empty stored agent block", b.mustGet(t, "/runs/"+runAgent, http.StatusOK).body, `id="agent"`)
	if n := st.scans.Load(); n != 0 {
		t.Fatalf("%d scans with a stored report, want 0", n)
	}
}

// TestStoredReportAgent serves a stored report with an "agent" block: the
// run page shows its figures without scanning the results.
func TestStoredReportAgent(t *testing.T) {
	st := &reportStore{countingStore: &countingStore{Store: inmem.New()}, reports: map[string][]byte{}}
	seedAgent(t, st)
	rep, err := report.FromStore(context.Background(), st, runAgent)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	// The block the report package writes (PRODUCT.md, "Agents"), with
	// figures the results do not give: proves they come from the report.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &fields); err != nil {
		t.Fatal(err)
	}
	fields["agent"] = json.RawMessage(`{"items":3,"mean_steps":7.25,"steps_reported":3,"mean_tool_calls":9.5,"tool_calls":28,"tool_errors":2,"mocked_calls":4}`)
	data, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	st.reports[runAgent] = data
	st.scans.Store(0)
	b := setupStore(t, st, Options{})
	contains(t, "stored agent block", b.mustGet(t, "/runs/"+runAgent, http.StatusOK).body, `id="mean-steps">7.25</td>`, `id="mean-calls">9.50</td>`)
	if n := st.scans.Load(); n != 0 {
		t.Fatalf("%d scans with a stored report, want 0", n)
	}
}

// TestItemsCallsColumn checks the items table's tool calls column: shown
// for a page with trajectories, absent otherwise.
func TestItemsCallsColumn(t *testing.T) {
	b := setupAgent(t)
	body := b.mustGet(t, "/runs/"+runAgent+"/items", http.StatusOK).body
	re := regexp.MustCompile(`<td class="n calls">(.*?)</td>`)
	var got []string
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		got = append(got, m[1])
	}
	want := `4 <span class="bad" title="failed calls">(1 failed)</span>|0|1`
	if strings.Join(got, "|") != want {
		t.Fatalf("calls column %q, want %q", strings.Join(got, "|"), want)
	}
	contains(t, "calls header", body, `<th class="n" title="tool calls (failed)">Calls</th>`)
	lacks(t, "run without agents", b.mustGet(t, "/runs/"+runB+"/items", http.StatusOK).body, "calls", "Calls")
}

// TestAPIItemTrajectory checks that the item's JSON holds the whole
// trajectory (steps, calls in order, mocked, error, latency) and none for
// a non-agent item.
func TestAPIItemTrajectory(t *testing.T) {
	b := setupAgent(t)
	got := decode[struct {
		Result struct {
			Trajectory *evalrun.Trajectory `json:"trajectory"`
		} `json:"result"`
	}](t, b.mustGet(t, "/api/runs/"+runAgent+"/items/0", http.StatusOK))
	tr := got.Result.Trajectory
	if tr == nil || tr.Steps != 3 || len(tr.Calls) != 4 {
		t.Fatalf("trajectory = %+v", tr)
	}
	if c := tr.Calls[1]; c.Name != "search" || c.Error != "HTTP 500: <b>down</b> "+pwnImg || c.Mocked || c.LatencyMS == nil || *c.LatencyMS != 120.6 {
		t.Fatalf("call 2 = %+v", c)
	}
	if c := tr.Calls[2]; c.LatencyMS != nil || !strings.Contains(string(c.Args), "field_y") {
		t.Fatalf("call 3 = %+v", c)
	}
	noop := b.mustGet(t, "/api/runs/"+runAgent+"/items/1", http.StatusOK).body
	contains(t, "empty trajectory", noop, `"trajectory": {
      "steps": 1,
      "calls": []
    }`)
	lacks(t, "non-agent item JSON", b.mustGet(t, "/api/runs/"+runB+"/items/0", http.StatusOK).body, `"trajectory"`)
}

// TestTrajectoryBounds shows an item with 1,500 calls, the first three
// with 1 MB outputs and the next 97 with 20 KB ones: the page shows 1,000
// calls, each value cut at 16 KB, and stops showing values after 1 MB of
// them; it stays a few MB. (The values are kept small enough for a store
// that copies them through JSON.)
func TestTrajectoryBounds(t *testing.T) {
	st := inmem.New()
	seedAgent(t, st)
	big := evalrun.String(strings.Repeat("<b>x</b>", 1<<17))       // 1 MB of markup
	medium := evalrun.String(strings.Repeat("<b>x</b>", 20<<10/8)) // 20 KB
	tr := &evalrun.Trajectory{Steps: 10}
	for i := range 1500 {
		out := json.RawMessage(`"ok"`)
		switch {
		case i < 3:
			out = big
		case i < 100: // enough to spend the page's budget
			out = medium
		}
		tr.Calls = append(tr.Calls, evalrun.ToolCall{Name: "fetch", Args: json.RawMessage(`{"n":1}`), Output: out, LatencyMS: fptr(2)})
	}
	res := &evalrun.ItemResult{RunID: runAgent, Index: 1, ItemID: "noop", Attempts: 1, Output: evalrun.String("ok"),
		StartedAt: t0, CompletedAt: t0.Add(time.Second), Trajectory: tr}
	if err := st.WriteResults(context.Background(), []*evalrun.ItemResult{res}); err != nil {
		t.Fatal(err)
	}
	b := setupStore(t, st, Options{})
	body := b.mustGet(t, "/runs/"+runAgent+"/items/1", http.StatusOK).body
	if len(body) > 4<<20 {
		t.Fatalf("page of %d bytes, want at most 4 MB", len(body))
	}
	if n := strings.Count(body, `<li class="call`); n != maxCallsShown {
		t.Fatalf("%d calls shown, want %d", n, maxCallsShown)
	}
	full := strings.Count(body, `<div class="k">output</div>`)
	omitted := strings.Count(body, "arguments and output not shown")
	if full+omitted != maxCallsShown || full == 0 || full > trajectoryBudget/maxCallValueBytes+1 {
		t.Fatalf("%d calls with values, %d omitted", full, omitted)
	}
	contains(t, "bounded trajectory", body, "1,500 tool calls", "and 500 more calls in",
		"1,048,576 bytes, the first", "… (truncated, 1048576 bytes)", "20,480 bytes, the first", "… (truncated, 20480 bytes)", `href="/api/runs/`+runAgent+`/items/1"`)
	lacks(t, "bounded trajectory", body, "<b>x")
}

// TestItemsToolErrorsFilter checks tool_errors=1: only the results with a
// failed tool call, on the page and in the API.
func TestItemsToolErrorsFilter(t *testing.T) {
	b := setupAgent(t)
	body := b.mustGet(t, "/runs/"+runAgent+"/items?tool_errors=1", http.StatusOK).body
	contains(t, "filtered page", body, `id="tool-errors" checked`, `href="/runs/`+runAgent+`/items/0">weather</a>`)
	lacks(t, "filtered page", body, `>noop</a>`, `>broken</a>`)
	contains(t, "unfiltered agent page", b.mustGet(t, "/runs/"+runAgent+"/items", http.StatusOK).body, `id="tool-errors">`)

	got := decode[ItemsJSON](t, b.mustGet(t, "/api/runs/"+runAgent+"/items?tool_errors=1&sort=-latency", http.StatusOK))
	if len(got.Items) != 1 || got.Items[0].ID != "weather" || got.Total == nil || *got.Total != 1 {
		t.Fatalf("API tool_errors=1: %+v", got)
	}
	plain := b.mustGet(t, "/runs/"+runB+"/items?tool_errors=1", http.StatusOK).body
	contains(t, "run without agents", plain, `id="no-items"`)
	lacks(t, "unfiltered run without agents", b.mustGet(t, "/runs/"+runB+"/items", http.StatusOK).body, `id="tool-errors"`)
	contains(t, "bad value", b.mustGet(t, "/runs/"+runAgent+"/items?tool_errors=maybe", http.StatusBadRequest).body, `bad tool_errors=&#34;maybe&#34;: want 1 or 0`)
}

// queryLogStore records the queries of the scans of results.
type queryLogStore struct {
	evalrun.Store
	mu      sync.Mutex
	queries []evalrun.ResultQuery
}

func (s *queryLogStore) ScanResults(ctx context.Context, runID string, q evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	s.mu.Lock()
	s.queries = append(s.queries, q)
	s.mu.Unlock()
	return s.Store.ScanResults(ctx, runID, q, fn)
}

// take returns the queries recorded since the last call.
func (s *queryLogStore) take() []evalrun.ResultQuery {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queries
	s.queries = nil
	return q
}

func skippedAgentData(qs []evalrun.ResultQuery) bool {
	return slices.ContainsFunc(qs, func(q evalrun.ResultQuery) bool { return q.SkipAgentData })
}

// TestItemsSkipAgentData checks that the scans of sorted and filtered
// items listings leave out the agent data (ResultQuery.SkipAgentData)
// while the page still shows its rows' tool calls (the Calls column, the
// API's trajectories), and that tool_errors=1, which needs the
// trajectories, never skips them.
func TestItemsSkipAgentData(t *testing.T) {
	st := &queryLogStore{Store: inmem.New()}
	seed(t, st)
	seedAgent(t, st)
	b := setupStore(t, st, Options{})
	re := regexp.MustCompile(`<td class="n calls">(.*?)</td>`)
	const weatherCalls = `4 <span class="bad" title="failed calls">(1 failed)</span>`
	for _, tc := range []struct {
		query, calls string
		ids          []string
		skips        bool
	}{
		{"sort=latency", "0|1|" + weatherCalls, []string{"noop", "broken", "weather"}, true},
		{"sort=-latency", weatherCalls + "|0|1", []string{"weather", "noop", "broken"}, true},
		{"sort=-score:called", weatherCalls + "|0|1", []string{"weather", "noop", "broken"}, true},
		{"sort=latency&size=1&page=3", weatherCalls, []string{"weather"}, true},  // a later page: a second scan
		{"sort=latency&size=2&page=2", weatherCalls, []string{"weather"}, true},  // idem
		{"q=o", "0|1", []string{"noop", "broken"}, true},                         // search, input order
		{"q=o&sort=-latency", "0|1", []string{"noop", "broken"}, true},           // search, sorted
		{"scorer=called", "0|1", []string{"noop", "broken"}, true},               // filter by score
		{"failed=1&q=broken", "1", []string{"broken"}, true},                     // failed only and search
		{"tool_errors=1", weatherCalls, []string{"weather"}, false},              // needs the trajectories
		{"tool_errors=1&sort=latency", weatherCalls, []string{"weather"}, false}, // idem, sorted
		{"tool_errors=1&q=e&sort=-latency&size=1", weatherCalls, []string{"weather"}, false},
		{"", weatherCalls + "|0|1", []string{"weather", "noop", "broken"}, false}, // a page of the store's: nothing to skip
	} {
		st.take()
		body := b.mustGet(t, "/runs/"+runAgent+"/items?"+tc.query, http.StatusOK).body
		var calls []string
		for _, m := range re.FindAllStringSubmatch(body, -1) {
			calls = append(calls, m[1])
		}
		if got := strings.Join(calls, "|"); got != tc.calls {
			t.Errorf("%s: calls column %q, want %q", tc.query, got, tc.calls)
		}
		if got := skippedAgentData(st.take()); got != tc.skips {
			t.Errorf("%s: a scan skipped the agent data: %v, want %v", tc.query, got, tc.skips)
		}
		api := decode[ItemsJSON](t, b.mustGet(t, "/api/runs/"+runAgent+"/items?"+tc.query, http.StatusOK))
		var ids []string
		for _, row := range api.Items {
			ids = append(ids, row.ID)
			want := map[string]int{"weather": 4, "noop": 0, "broken": 1}[row.ID]
			if row.Trajectory == nil && want > 0 || len(row.Trajectory) != want || row.Steps == 0 {
				t.Errorf("%s: API row %q: steps %d, %d calls, want %d calls", tc.query, row.ID, row.Steps, len(row.Trajectory), want)
			}
		}
		if !slices.Equal(ids, tc.ids) {
			t.Errorf("%s: API items %v, want %v", tc.query, ids, tc.ids)
		}
	}
}
