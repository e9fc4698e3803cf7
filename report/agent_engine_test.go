package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/report"
)

// TestAgentRunReport runs a fake agent through the engine into a store and
// checks its report built both ways: from the run's summary (in memory) and
// from the store (streamed, without rows).
func TestAgentRunReport(t *testing.T) {
	ctx := context.Background()
	agent := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		var calls []evalrun.ToolCall
		for _, m := range it.ToolMocks {
			calls = append(calls, evalrun.ToolCall{Name: m.Name, Args: m.Args, Output: m.Output, Mocked: true})
		}
		traj := &evalrun.Trajectory{Steps: len(calls) + 1, Calls: calls}
		if it.ID == "loop" {
			return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorPermanent, Err: errors.New("more than 3 model turns"), Trajectory: traj}
		}
		return evalrun.Output{Value: evalrun.String("done"), Trajectory: traj}, nil
	})
	mock := func(name, args string) evalrun.ToolMock {
		return evalrun.ToolMock{Name: name, Args: json.RawMessage(args), Output: json.RawMessage(`"ok"`)}
	}
	items := []*evalrun.Item{
		{ID: "chat", Input: json.RawMessage(`[{"role":"user","content":"Weather in Paris?"}]`), Expected: evalrun.String("done"),
			ToolMocks: []evalrun.ToolMock{mock("get_weather", `{"city":"Paris"}`), mock("get_time", `{}`)}},
		{ID: "none", Input: evalrun.String("hi"), Expected: evalrun.String("done")},
		{ID: "loop", Input: evalrun.String("loop"), ToolMocks: []evalrun.ToolMock{mock("search", `{"q":"x"}`)}},
	}
	store := inmem.New()
	dv, _, err := store.ImportDataset(ctx, "agent", items)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := engine.Run(ctx, store, engine.Spec{
		Run: &evalrun.Run{Name: "agent", Dataset: dv.Dataset, DatasetVersion: dv.Version,
			Target: evalrun.TargetInfo{Kind: "openai", Name: "agent"}},
		Items: items, Target: agent,
		Scorers: []evalrun.Scorer{evalrun.ScorerFunc("done", func(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
			return evalrun.Score{Value: 1}, nil
		})},
	})
	if err != nil || sum.Err != nil {
		t.Fatal(err, sum.Err)
	}
	run, err := store.GetRun(ctx, sum.RunID)
	if err != nil {
		t.Fatal(err)
	}
	mem := report.Build(run, sum.Results)
	want := &report.AgentSummary{Items: 3, MeanSteps: ptr(2.0), StepsReported: 3, MeanToolCalls: 1, ToolCalls: 3, MockedCalls: 3}
	if got := mem.Agent; got == nil || *got.MeanSteps != *want.MeanSteps || got.Items != want.Items || got.ToolCalls != want.ToolCalls ||
		got.MockedCalls != want.MockedCalls || got.MeanToolCalls != want.MeanToolCalls || got.StepsReported != 3 || got.ToolErrors != 0 {
		t.Errorf("agent = %+v, want %+v", got, want)
	}
	if loop := mem.Items[2]; loop.Error == nil || loop.Steps != 2 || len(loop.Trajectory) != 1 || loop.Trajectory[0].Name != "search" {
		t.Errorf("the failed agent item lost its trajectory: %+v", loop)
	}

	lean, err := report.FromStore(ctx, store, sum.RunID, report.WithoutItems())
	if err != nil {
		t.Fatal(err)
	}
	src := report.ItemSource{Store: store, RunID: sum.RunID}
	for _, f := range []report.Format{report.FormatJSON, report.FormatJUnit, report.FormatTable, report.FormatMarkdown} {
		var a, b bytes.Buffer
		if err := report.Write(&a, mem, f); err != nil {
			t.Fatal(err)
		}
		if err := report.WriteStream(ctx, &b, lean, f, src); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			al, bl := strings.Split(a.String(), "\n"), strings.Split(b.String(), "\n")
			for i := range min(len(al), len(bl)) {
				if al[i] != bl[i] {
					t.Errorf("%s: the report from the store differs from the one in memory at line %d:\n%s\n%s", f, i+1, al[i], bl[i])
					break
				}
			}
		}
	}
	var term bytes.Buffer
	report.WriteTerminal(&term, lean)
	if !strings.Contains(term.String(), "agent: 3 items, mean 2.0 steps, 1.0 tool calls per item (0 tool errors, 3 mocked)") {
		t.Errorf("terminal:\n%s", term.String())
	}
}

func ptr(v float64) *float64 { return &v }
