package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/evalrun/evalrun"
)

// Agents: an item's tool mocks and expected trajectory, a result's
// trajectory. Every store keeps them as the SQL stores do (JSON, NULL for
// absent), so each reads back what was written, [] apart from absent.

// agentItems returns items covering the shapes of the agent keys: mocks
// with and without args, outputs of every JSON kind (unicode and \u0000
// included), [] apart from absent.
func agentItems() []*evalrun.Item {
	full := item("full", "weather in Paris?", "18")
	full.ToolMocks = []evalrun.ToolMock{
		{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`), Output: json.RawMessage(`{"temp_c":18,"sky":"clair ☀"}`)},
		{Name: "get_weather", Output: json.RawMessage(`"no data"`)},
		{Name: "lookup", Args: json.RawMessage(`{"q":"Zürich","opts":{"n":[1,2.5,true,null]}}`), Output: json.RawMessage(`[1,"二",{"k":false}]`)},
		{Name: "num", Output: json.RawMessage(`-1.5e+300`)},
		{Name: "yes", Output: json.RawMessage(`true`)},
		{Name: "no", Output: json.RawMessage(`false`)},
		{Name: "nothing", Output: json.RawMessage(`null`)},
		{Name: "nul", Output: json.RawMessage(`"a\u0000b \ud83d\ude00"`)},
	}
	full.ExpectedTrajectory = []evalrun.ExpectedCall{
		{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)},
		{Name: "lookup"},
	}
	noCalls := item("no-calls", "say hi", "")
	noCalls.ToolMocks = []evalrun.ToolMock{}
	noCalls.ExpectedTrajectory = []evalrun.ExpectedCall{}
	onlyExpected := item("only-expected", "x", "")
	onlyExpected.ExpectedTrajectory = []evalrun.ExpectedCall{{Name: "search", Args: json.RawMessage(`{}`)}}
	plain := item("plain", "no agent keys", "y")
	return []*evalrun.Item{full, noCalls, onlyExpected, plain}
}

// testItemAgentRoundTrip: tool mocks and expected trajectories are stored
// and read back exactly, by ScanItems and as the item of a result; []
// stays apart from absent; re-importing them is no new version.
func testItemAgentRoundTrip(t *testing.T, s evalrun.Store) {
	items := agentItems()
	mustImport(t, s, "agents", cloneItems(items))
	diffItems(t, scanAll(t, s, "agents", 0), items)
	if _, created := mustImport(t, s, "agents", cloneItems(agentItems())); created {
		t.Fatal("re-importing the same agent items created a version")
	}
	mustCreateRun(t, s, testRun("r-agents", "agents", 1, base))
	var rs []*evalrun.ItemResult
	for i, it := range items {
		r := result("r-agents", i, 0)
		r.ItemID = it.ID
		rs = append(rs, r)
	}
	mustWrite(t, s, rs...)
	got := scanResults(t, s, "r-agents", evalrun.ResultQuery{})
	if len(got) != len(items) {
		t.Fatalf("got %d results, want %d", len(got), len(items))
	}
	for i, r := range got {
		if r.Item == nil {
			t.Fatalf("result %d has no item", i)
		}
		diffItems(t, []*evalrun.Item{r.Item}, items[i:i+1])
	}
	// The single-result read (a viewer's item page) sees them too.
	one := scanResults(t, s, "r-agents", evalrun.ResultQuery{FromIndex: 0, Limit: 1})
	if len(one) != 1 || one[0].Item == nil {
		t.Fatalf("single result read: %+v", one)
	}
	diffItems(t, []*evalrun.Item{one[0].Item}, items[:1])
}

// testImportChangedMock: a changed mock, a changed expected trajectory and
// a mock list that becomes [] are changed items: a new version with
// changed=3 that holds the new keys, the old version keeping the old ones.
func testImportChangedMock(t *testing.T, s evalrun.Store) {
	v1 := agentItems()
	mustImport(t, s, "agents", cloneItems(v1))
	v2 := agentItems()
	v2[0].ToolMocks[0].Output = json.RawMessage(`{"temp_c":19,"sky":"clair ☀"}`)
	v2[2].ExpectedTrajectory = append(v2[2].ExpectedTrajectory, evalrun.ExpectedCall{Name: "answer"})
	v2[3].ToolMocks = []evalrun.ToolMock{}
	v, created := mustImport(t, s, "agents", cloneItems(v2))
	if !created || v.Version != 2 || v.Changed != 3 || v.Added != 0 || v.Removed != 0 {
		t.Fatalf("re-import with changed agent keys: %+v (created %v), want version 2 with changed=3", v, created)
	}
	diffItems(t, scanAll(t, s, "agents", 1), v1)
	diffItems(t, scanAll(t, s, "agents", 2), v2)
	if n := countRows(t, s, "agents"); n != len(v1)+3 {
		t.Fatalf("%d item rows, want %d (only the changed items stored again)", n, len(v1)+3)
	}
	// Only a mock changed: still one changed item.
	v3 := agentItems()
	v3[0].ToolMocks[0].Output = json.RawMessage(`{"temp_c":19,"sky":"clair ☀"}`)
	v3[2].ExpectedTrajectory = v2[2].ExpectedTrajectory
	v3[3].ToolMocks = []evalrun.ToolMock{}
	v3[0].ToolMocks[1].Args = json.RawMessage(`{"city":"Lyon"}`)
	v, created = mustImport(t, s, "agents", cloneItems(v3))
	if !created || v.Version != 3 || v.Changed != 1 {
		t.Fatalf("re-import with one changed mock's args: %+v (created %v), want version 3 with changed=1", v, created)
	}
	diffItems(t, scanAll(t, s, "agents", 3), v3)
}

// agentTrajectory is a trajectory of every shape a call takes: with an
// output, with an error, mocked and not, latency measured and not, args
// absent.
func agentTrajectory() *evalrun.Trajectory {
	return &evalrun.Trajectory{Steps: 3, Calls: []evalrun.ToolCall{
		{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`), Output: json.RawMessage(`{"temp_c":18}`), Mocked: true},
		{Name: "search", Args: json.RawMessage(`{"q":"a<b & c>d ünï"}`), Error: "HTTP 500: " + nulText, LatencyMS: evalrun.Float64(12.5)},
		{Name: "search", Args: json.RawMessage(`{}`), Output: json.RawMessage(`"line1\nline2 \u0000 😀"`), LatencyMS: evalrun.Float64(0)},
		{Name: "nothing", Output: json.RawMessage(`null`), Mocked: true},
		{Name: "list", Args: json.RawMessage(`{"n":[1,2]}`), Output: json.RawMessage(`[true,false,1e-7]`)},
	}}
}

// testResultTrajectoryRoundTrip: a result's trajectory is stored and read
// back exactly, by every read of results: one with calls, an empty one
// (Steps 1, Calls [] and not nil), none (nil), and a failed result's.
// Rewriting a result replaces its trajectory, also by none.
func testResultTrajectoryRoundTrip(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 5)
	withCalls := result("run-1", 0, 0)
	withCalls.Trajectory = agentTrajectory()
	empty := result("run-1", 1, 0)
	empty.Trajectory = &evalrun.Trajectory{Steps: 1}
	emptyList := result("run-1", 1, 1)
	emptyList.Trajectory = &evalrun.Trajectory{Steps: 1, Calls: []evalrun.ToolCall{}}
	none := result("run-1", 2, 0)
	bad := failed("run-1", 3, 0)
	bad.Trajectory = &evalrun.Trajectory{Steps: 10, Calls: agentTrajectory().Calls[:2]}
	mustWrite(t, s, withCalls, empty, emptyList)
	mustWrite(t, s, none, bad)

	want := []*evalrun.ItemResult{withCalls, empty, emptyList, none, bad}
	got := scanResults(t, s, "run-1", evalrun.ResultQuery{})
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d", len(got), len(want))
	}
	for i := range want {
		checkResult(t, got[i], want[i])
	}
	if got[1].Trajectory == nil || got[1].Trajectory.Calls == nil {
		t.Fatalf("an empty trajectory read back as %+v, want Calls [] (not nil)", got[1].Trajectory)
	}
	// The other reads: failed only, one result from an index.
	f := scanResults(t, s, "run-1", evalrun.ResultQuery{FailedOnly: true})
	if len(f) != 1 {
		t.Fatalf("FailedOnly gave %d results, want 1", len(f))
	}
	checkResult(t, f[0], bad)
	one := scanResults(t, s, "run-1", evalrun.ResultQuery{FromIndex: 0, Limit: 1})
	if len(one) != 1 {
		t.Fatalf("FromIndex 0, Limit 1 gave %d results", len(one))
	}
	checkResult(t, one[0], withCalls)

	// What the caller does with what it read does not reach the store.
	one[0].Trajectory.Calls[0].Name = "changed"
	one[0].Trajectory.Steps = 99
	checkResult(t, scanResults(t, s, "run-1", evalrun.ResultQuery{Limit: 1})[0], withCalls)

	// A rewrite replaces the trajectory: by another, by none.
	again := copyResult(withCalls)
	again.Trajectory = &evalrun.Trajectory{Steps: 2, Calls: []evalrun.ToolCall{{Name: "other", Args: json.RawMessage(`{}`)}}}
	gone := copyResult(bad)
	gone.Trajectory = nil
	mustWrite(t, s, again, gone)
	got = scanResults(t, s, "run-1", evalrun.ResultQuery{})
	checkResult(t, got[0], again)
	checkResult(t, got[4], gone)
}

// testTrajectoryInvalid: a trajectory holding a value that is not JSON is
// refused alike by every store (ErrInvalid), writing nothing of the batch.
func testTrajectoryInvalid(t *testing.T, s evalrun.Store) {
	setupRun(t, s, 2)
	good := result("run-1", 0, 0)
	r := result("run-1", 1, 0)
	r.Trajectory = &evalrun.Trajectory{Calls: []evalrun.ToolCall{{Name: "x", Args: json.RawMessage(`{`)}}}
	err := s.WriteResults(t.Context(), []*evalrun.ItemResult{good, r})
	if !errors.Is(err, evalrun.ErrInvalid) {
		t.Fatalf("WriteResults with arguments that are not JSON: %v, want ErrInvalid", err)
	}
	if got := scanResults(t, s, "run-1", evalrun.ResultQuery{}); len(got) != 0 {
		t.Fatalf("the refused batch stored %d results", len(got))
	}
}

// checkTrajectory fails unless got is want: nil apart from empty, the
// calls' JSON byte for byte.
func checkTrajectory(t *testing.T, what string, got, want *evalrun.Trajectory) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("%s trajectory = %s, want %s", what, showTrajectory(got), showTrajectory(want))
	}
	if want == nil {
		return
	}
	if got.Calls == nil {
		t.Fatalf("%s trajectory has nil Calls, want a non-nil list", what)
	}
	if got.Steps != want.Steps || len(got.Calls) != len(want.Calls) {
		t.Fatalf("%s trajectory = %s, want %s", what, showTrajectory(got), showTrajectory(want))
	}
	for i, w := range want.Calls {
		g := got.Calls[i]
		if g.Name != w.Name || !equalRaw(g.Args, w.Args) || !equalRaw(g.Output, w.Output) || g.Error != w.Error ||
			g.Mocked != w.Mocked || !eqFloatPtr(g.LatencyMS, w.LatencyMS) {
			t.Fatalf("%s trajectory call %d:\n got  %s\n want %s", what, i, showCall(g), showCall(w))
		}
	}
}

func showTrajectory(tr *evalrun.Trajectory) string {
	if tr == nil {
		return "nil"
	}
	b, _ := json.Marshal(tr)
	return string(b)
}

func showCall(c evalrun.ToolCall) string {
	return fmt.Sprintf("name=%q args=%q (nil=%v) output=%q (nil=%v) error=%q mocked=%v latency=%v",
		c.Name, c.Args, c.Args == nil, c.Output, c.Output == nil, c.Error, c.Mocked, showFloat(c.LatencyMS))
}

func showFloat(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// equalAgentKeys reports whether two items' tool mocks and expected
// trajectories are the same, nil apart from empty, JSON byte for byte.
func equalAgentKeys(a, b *evalrun.Item) bool {
	if (a.ToolMocks == nil) != (b.ToolMocks == nil) || len(a.ToolMocks) != len(b.ToolMocks) ||
		(a.ExpectedTrajectory == nil) != (b.ExpectedTrajectory == nil) || len(a.ExpectedTrajectory) != len(b.ExpectedTrajectory) {
		return false
	}
	for i, m := range a.ToolMocks {
		o := b.ToolMocks[i]
		if m.Name != o.Name || !equalRaw(m.Args, o.Args) || !equalRaw(m.Output, o.Output) {
			return false
		}
	}
	for i, c := range a.ExpectedTrajectory {
		o := b.ExpectedTrajectory[i]
		if c.Name != o.Name || !equalRaw(c.Args, o.Args) {
			return false
		}
	}
	return true
}

func showAgentKeys(it *evalrun.Item) string {
	m, _ := json.Marshal(it.ToolMocks)
	e, _ := json.Marshal(it.ExpectedTrajectory)
	return fmt.Sprintf("tool_mocks=%s (nil=%v) expected_trajectory=%s (nil=%v)", m, it.ToolMocks == nil, e, it.ExpectedTrajectory == nil)
}

// testSkipAgentData: ResultQuery.SkipAgentData leaves out a result's
// trajectory and its item's tool mocks and expected trajectory, and
// nothing else (every other field as without it), in every read of
// results; without it they are there.
func testSkipAgentData(t *testing.T, s evalrun.Store) {
	items := agentItems()
	mustImport(t, s, "agents", cloneItems(items))
	mustCreateRun(t, s, testRun("r-agents", "agents", 1, base))
	var rs []*evalrun.ItemResult
	for i, it := range items {
		r := result("r-agents", i, 0)
		if i == 2 {
			r = failed("r-agents", i, 0)
		}
		r.ItemID = it.ID
		r.Trajectory = agentTrajectory()
		rs = append(rs, r)
	}
	mustWrite(t, s, rs...)
	for _, q := range []evalrun.ResultQuery{{}, {FailedOnly: true}, {FromIndex: 1, Limit: 2}} {
		full := scanResults(t, s, "r-agents", q)
		sq := q
		sq.SkipAgentData = true
		skipped := scanResults(t, s, "r-agents", sq)
		if len(full) == 0 || len(skipped) != len(full) {
			t.Fatalf("%+v: %d results with SkipAgentData, %d without (want the same, > 0)", q, len(skipped), len(full))
		}
		for i, r := range full {
			if r.Trajectory == nil || r.Item == nil {
				t.Fatalf("%+v: result %d without SkipAgentData: %+v, want its trajectory and item", q, i, r)
			}
			if r.Item.ID == "full" && (r.Item.ToolMocks == nil || r.Item.ExpectedTrajectory == nil) {
				t.Fatalf("%+v: item %q without SkipAgentData lost its agent keys: %s", q, r.Item.ID, showAgentKeys(r.Item))
			}
			got := skipped[i]
			if got.Trajectory != nil {
				t.Fatalf("%+v: result %d with SkipAgentData has a trajectory %+v", q, i, got.Trajectory)
			}
			if got.Item == nil || got.Item.ToolMocks != nil || got.Item.ExpectedTrajectory != nil {
				t.Fatalf("%+v: result %d with SkipAgentData has item %+v, want one without agent keys", q, i, got.Item)
			}
			want := copyResult(r)
			want.Trajectory = nil
			if r.Item != nil {
				it := *r.Item
				it.ToolMocks, it.ExpectedTrajectory = nil, nil
				want.Item = &it
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%+v: result %d with SkipAgentData differs beyond the agent fields:\n got  %+v\n want %+v", q, i, got, want)
			}
		}
	}
	// The full read is unchanged by the skipping reads: the item with
	// every agent key still has them.
	got := scanResults(t, s, "r-agents", evalrun.ResultQuery{Limit: 1})
	diffItems(t, []*evalrun.Item{got[0].Item}, items[:1])
	checkResult(t, got[0], rs[0])
}
