package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
)

// A resumed agent run keeps the trajectories of the results stored before
// the interruption and stores those of the items it runs, on every
// backend. The resume reads its items back from the store, as the CLI
// does, so their tool mocks come from the store.
func TestResumeKeepsTrajectories(t *testing.T) {
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			ctx := context.Background()
			its := items(60)
			for i, it := range its {
				it.ToolMocks = []evalrun.ToolMock{{Name: "lookup", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Output: json.RawMessage(fmt.Sprintf(`"r%d"`, i))}}
			}
			if _, _, err := store.ImportDataset(ctx, "ds", its); err != nil {
				t.Fatal(err)
			}
			// The agent calls its item's mocked tool; phase tells the two
			// executions apart in the stored trajectories (their steps).
			phase := 1
			agent := func(c context.Context, it *evalrun.Item) (evalrun.Output, error) {
				if len(it.ToolMocks) != 1 {
					return evalrun.Output{}, evalrun.Permanent(fmt.Errorf("item %s has %d mocks", it.ID, len(it.ToolMocks)))
				}
				m := it.ToolMocks[0]
				tr := &evalrun.Trajectory{Steps: phase, Calls: []evalrun.ToolCall{{Name: m.Name, Args: m.Args, Output: m.Output, Mocked: true}}}
				return evalrun.Output{Value: it.Input, Trajectory: tr}, c.Err()
			}
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			spec := engine.Spec{
				Run:   &evalrun.Run{Dataset: "ds", DatasetVersion: 1, Name: "resume-agent"},
				Items: its, Target: evalrun.TargetFunc(agent), Scorers: []evalrun.Scorer{exact},
				Options: engine.Options{Concurrency: 1, WriterBatch: 4, Progress: func(p evalrun.Progress) {
					if p.Done == 20 {
						cancel()
					}
				}},
			}
			first := mustRun(t, cctx, store, spec)
			if first.Status != evalrun.RunCanceled || first.Skipped == 0 {
				t.Fatalf("first run %+v", first)
			}
			before := map[int]bool{}
			if err := store.ScanResults(ctx, first.RunID, evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
				if !r.Failed() {
					before[r.Index] = true
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(before) == 0 || len(before) == len(its) {
				t.Fatalf("%d of %d results stored before the interruption", len(before), len(its))
			}

			rec, err := store.GetRun(ctx, first.RunID)
			if err != nil {
				t.Fatal(err)
			}
			var stored []*evalrun.Item
			if err := store.ScanItems(ctx, rec.Dataset, rec.DatasetVersion, func(it *evalrun.Item) error {
				stored = append(stored, it)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			phase = 2
			spec.Run, spec.Items, spec.Options.Resume, spec.Options.Progress = rec, stored, true, nil
			second := mustRun(t, ctx, store, spec)
			if second.Status != evalrun.RunCompleted || second.Succeeded != len(its) {
				t.Fatalf("resumed run %+v", second)
			}
			n := 0
			err = store.ScanResults(ctx, first.RunID, evalrun.ResultQuery{}, func(r *evalrun.ItemResult) error {
				n++
				wantSteps := 2
				if before[r.Index] {
					wantSteps = 1
				}
				tr := r.Trajectory
				if tr == nil || tr.Steps != wantSteps || len(tr.Calls) != 1 {
					return fmt.Errorf("result %d (stored before: %v): trajectory %+v, want steps %d and one call", r.Index, before[r.Index], tr, wantSteps)
				}
				c := tr.Calls[0]
				if c.Name != "lookup" || string(c.Args) != fmt.Sprintf(`{"n":%d}`, r.Index) ||
					string(c.Output) != fmt.Sprintf(`"r%d"`, r.Index) || !c.Mocked {
					return fmt.Errorf("result %d: call %+v, want its item's mock", r.Index, c)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(its) {
				t.Fatalf("%d results stored, want %d", n, len(its))
			}
		})
	}
}
