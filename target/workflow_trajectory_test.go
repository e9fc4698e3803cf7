package target

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/evalrun/evalrun"
)

// agentStep is a step target that records a trajectory of the named calls
// in steps turns, passing its input on; with fail set it fails permanently
// after them, carrying them.
func agentStep(steps int, fail bool, names ...string) evalrun.Target {
	return evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		tr := &evalrun.Trajectory{Steps: steps, Calls: []evalrun.ToolCall{}}
		for _, n := range names {
			tr.Calls = append(tr.Calls, evalrun.ToolCall{Name: n, Args: json.RawMessage(`{}`)})
		}
		if fail {
			return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorPermanent, Err: errors.New("unmatched mock"), Trajectory: tr}
		}
		return evalrun.Output{Value: it.Input, Trajectory: tr}, nil
	})
}

func callNames(tr *evalrun.Trajectory) []string {
	var names []string
	for _, c := range tr.Calls {
		names = append(names, c.Name)
	}
	return names
}

func TestWorkflowConcatenatesTrajectories(t *testing.T) {
	var guardSaw []string
	guard := evalrun.ScorerFunc("saw", func(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
		guardSaw = callNames(in.Trajectory)
		return evalrun.Score{Value: 1}, nil
	})
	wf := mustSteps(t,
		Step{Name: "plan", Target: agentStep(2, false, "search", "fetch")},
		Step{Name: "upper", Target: upper}, // not an agent: adds nothing
		Step{Name: "check", Guard: &Guard{Scorer: guard, Min: 0.5}},
		Step{Name: "act", Target: agentStep(3, false, "book")},
		Step{Name: "quiet", Target: agentStep(1, false)}, // an agent that called nothing: a turn, no call
	)
	out, err := wf.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("go")})
	if err != nil {
		t.Fatal(err)
	}
	tr := out.Trajectory
	if tr == nil || tr.Steps != 6 || !slices.Equal(callNames(tr), []string{"search", "fetch", "book"}) {
		t.Fatalf("trajectory = %+v, want search, fetch, book in 6 steps", tr)
	}
	if !slices.Equal(guardSaw, []string{"search", "fetch"}) {
		t.Errorf("the guard saw %v, want the calls so far", guardSaw)
	}
}

func TestWorkflowWithoutAgentsRecordsNoTrajectory(t *testing.T) {
	wf := mustSteps(t, Step{Name: "upper", Target: upper}, Step{Name: "suffix", Target: suffix("!")})
	out, err := wf.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("go")})
	if err != nil || out.Trajectory != nil {
		t.Fatalf("trajectory %+v, err %v; want nil", out.Trajectory, err)
	}
}

func TestWorkflowFailureKeepsTrajectorySoFar(t *testing.T) {
	wf := mustSteps(t,
		Step{Name: "plan", Target: agentStep(1, false, "search")},
		Step{Name: "act", Target: agentStep(2, true, "book", "pay")},
		Step{Name: "never", Target: agentStep(1, false, "unreached")},
	)
	_, err := wf.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("go")})
	workflowError(t, err, evalrun.ErrorPermanent, WorkflowFailed)
	tr := evalrun.TrajectoryOf(err)
	if tr == nil || tr.Steps != 3 || !slices.Equal(callNames(tr), []string{"search", "book", "pay"}) {
		t.Fatalf("failed workflow's trajectory = %+v, want search, book, pay in 3 steps", tr)
	}
	// A tripwire keeps what ran before it too.
	wf = mustSteps(t,
		Step{Name: "plan", Target: agentStep(1, false, "search")},
		Step{Name: "stop", Guard: &Guard{Scorer: fixedScore("no", 0, "bad"), Min: 0.5}},
	)
	_, err = wf.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("go")})
	workflowError(t, err, evalrun.ErrorTripwire, WorkflowTripwire)
	if tr := evalrun.TrajectoryOf(err); tr == nil || !slices.Equal(callNames(tr), []string{"search"}) {
		t.Fatalf("tripwire's trajectory = %+v", tr)
	}
}

// The workflow's trajectory is its own: a step that returns the same
// trajectory each time (a cached one) is not appended to.
func TestWorkflowTrajectoryDoesNotAliasAStep(t *testing.T) {
	shared := &evalrun.Trajectory{Steps: 1, Calls: make([]evalrun.ToolCall, 1, 4)}
	shared.Calls[0] = evalrun.ToolCall{Name: "a", Args: json.RawMessage(`{}`)}
	step := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		return evalrun.Output{Value: it.Input, Trajectory: shared}, nil
	})
	wf := mustSteps(t, Step{Name: "one", Target: step}, Step{Name: "two", Target: step})
	out, err := wf.Execute(context.Background(), &evalrun.Item{ID: "q1", Input: evalrun.String("go")})
	if err != nil || len(out.Trajectory.Calls) != 2 || out.Trajectory.Steps != 2 {
		t.Fatalf("trajectory %+v, err %v", out.Trajectory, err)
	}
	if len(shared.Calls) != 1 || shared.Steps != 1 || cap(shared.Calls) != 4 || shared.Calls[:2][1].Name != "" {
		t.Errorf("the step's own trajectory changed: %+v", shared)
	}
}
