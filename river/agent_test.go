package river

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
)

// agentBuilder rebuilds a run as an agent: a target that "calls" each tool
// the item mocks (in order, answered by the mock) and answers with the
// number of calls; an item whose input starts with "fail" fails after its
// calls, attaching them. Its scorer scores 1 when the recorded calls are
// the item's expected trajectory. Mocks and expected trajectories reach it
// only from the store: the worker reads the items.
type agentBuilder struct{ testBuilder }

func (b *agentBuilder) Build(context.Context, *evalrun.Run) (evalrun.Target, []evalrun.Scorer, engine.Options, error) {
	tgt := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		tr := agentCalls(it)
		var input string
		_ = json.Unmarshal(it.Input, &input)
		if strings.HasPrefix(input, "fail") {
			return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorPermanent, Trajectory: tr, Err: errors.New("agent gave up")}
		}
		return evalrun.Output{Value: evalrun.String(fmt.Sprint(len(tr.Calls))), Trajectory: tr}, nil
	})
	return tgt, []evalrun.Scorer{trajectoryScorer{}}, engine.Options{RetryDelay: -1}, nil
}

// agentCalls is the trajectory the test agent records for it: one call per
// mock, mocked, the second one timed.
func agentCalls(it *evalrun.Item) *evalrun.Trajectory {
	tr := &evalrun.Trajectory{Steps: len(it.ToolMocks) + 1, Calls: []evalrun.ToolCall{}}
	for i, m := range it.ToolMocks {
		args := m.Args
		if args == nil {
			args = json.RawMessage(`{}`)
		}
		c := evalrun.ToolCall{Name: m.Name, Args: args, Output: m.Output, Mocked: true}
		if i == 1 {
			c.LatencyMS = evalrun.Float64(2.5)
		}
		tr.Calls = append(tr.Calls, c)
	}
	return tr
}

// trajectoryScorer scores 1 when the calls are the expected trajectory's
// tools in order; an item without one is a scorer error.
type trajectoryScorer struct{}

func (trajectoryScorer) Name() string { return "trajectory" }

func (trajectoryScorer) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	if in.Item.ExpectedTrajectory == nil {
		return evalrun.Score{}, errors.New("item has no expected_trajectory")
	}
	if in.Trajectory == nil || len(in.Trajectory.Calls) != len(in.Item.ExpectedTrajectory) {
		return evalrun.Score{Value: 0}, nil
	}
	for i, c := range in.Trajectory.Calls {
		if c.Name != in.Item.ExpectedTrajectory[i].Name {
			return evalrun.Score{Value: 0}, nil
		}
	}
	return evalrun.Score{Value: 1}, nil
}

// A worker runs agent items with the mocks and expected trajectories the
// store keeps, and stores each result's trajectory (a failed item's too);
// the coordinator's results read them back.
func TestWorkerStoresTrajectories(t *testing.T) {
	b := setup(t, 0)
	items := []*evalrun.Item{
		{ID: "two", Input: evalrun.String("weather"), ToolMocks: []evalrun.ToolMock{
			{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`), Output: json.RawMessage(`{"temp_c":18,"note":"a\u0000b ☀"}`)},
			{Name: "convert", Output: json.RawMessage(`64.4`)},
		}, ExpectedTrajectory: []evalrun.ExpectedCall{{Name: "get_weather"}, {Name: "convert"}}},
		{ID: "none", Input: evalrun.String("hello"), ToolMocks: []evalrun.ToolMock{}, ExpectedTrajectory: []evalrun.ExpectedCall{}},
		{ID: "fails", Input: evalrun.String("fail"), ToolMocks: []evalrun.ToolMock{{Name: "search", Output: json.RawMessage(`null`)}}},
	}
	if _, _, err := b.store.ImportDataset(t.Context(), "agents", items); err != nil {
		t.Fatal(err)
	}
	b.startWorker(t, &agentBuilder{testBuilder{store: b.store}}, 2)
	// The coordinator is handed the items without their agent keys: what the
	// worker uses can only come from the store.
	bare := make([]*evalrun.Item, len(items))
	for i, it := range items {
		bare[i] = &evalrun.Item{ID: it.ID, Input: it.Input}
	}
	rec := b.enqueue(t, "agents", bare, runConfig{})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := b.coord.Wait(ctx, rec.ID, WaitOptions{LoadResults: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Succeeded != 2 || s.Failed != 1 || len(s.Results) != 3 {
		t.Fatalf("summary = %+v, want 2 succeeded, 1 failed", s)
	}
	stored := map[string]*evalrun.ItemResult{}
	if err := b.store.ScanResults(ctx, rec.ID, evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
		stored[r.ItemID] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"two": `{"steps":3,"calls":[{"name":"get_weather","args":{"city":"Paris"},"output":{"temp_c":18,"note":"a\u0000b ☀"},"mocked":true,"latency_ms":null},` +
			`{"name":"convert","args":{},"output":64.4,"mocked":true,"latency_ms":2.5}]}`,
		"none":  `{"steps":1,"calls":[]}`,
		"fails": `{"steps":2,"calls":[{"name":"search","args":{},"output":null,"mocked":true,"latency_ms":null}]}`,
	}
	for id, w := range want {
		r := stored[id]
		if r == nil {
			t.Fatalf("no stored result for %s", id)
		}
		got, _ := json.Marshal(r.Trajectory)
		if string(got) != w {
			t.Errorf("stored trajectory of %s:\n got  %s\n want %s", id, got, w)
		}
	}
	// The scorer saw the expected trajectories the worker read from the store.
	for _, id := range []string{"two", "none"} {
		if sc := stored[id].Scores; len(sc) != 1 || sc[0].Score == nil || *sc[0].Score != 1 {
			t.Errorf("%s scored %+v, want 1 (the calls match the stored expected trajectory)", id, sc)
		}
	}
	if r := stored["fails"]; !r.Failed() || r.Error == "" {
		t.Errorf("fails = %+v, want a failed result", r)
	}
	if r := stored["none"]; r.Trajectory == nil || r.Trajectory.Calls == nil {
		t.Errorf("an agent that called nothing stored %+v, want calls []", r.Trajectory)
	}
}
