package target

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// upper is a step target upper-casing a string input and reporting usage.
var upper = evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
	return evalrun.Output{Value: evalrun.String(strings.ToUpper(evalrun.Text(it.Input))), Usage: evalrun.Usage{InputTokens: evalrun.Int64(1)}}, nil
})

// suffix appends s to a string input.
func suffix(s string) evalrun.Target {
	return evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		return evalrun.Output{Value: evalrun.String(evalrun.Text(it.Input) + s), Usage: evalrun.Usage{InputTokens: evalrun.Int64(2)}}, nil
	})
}

// fixedScore is a scorer returning v with a reason.
func fixedScore(name string, v float64, reason string) evalrun.Scorer {
	return evalrun.ScorerFunc(name, func(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
		return evalrun.Score{Value: v, Reason: reason + " on " + evalrun.Text(in.Output)}, nil
	})
}

func mustSteps(t *testing.T, steps ...Step) *WorkflowTarget {
	t.Helper()
	w, err := NewSteps(steps...)
	if err != nil {
		t.Fatalf("NewSteps: %v", err)
	}
	return NewWorkflow(w)
}

func workflowError(t *testing.T, err error, kind evalrun.ErrorKind, status WorkflowStatus) *WorkflowError {
	t.Helper()
	wantKind(t, err, kind)
	var we *WorkflowError
	if !errors.As(err, &we) {
		t.Fatalf("error %v is not a *WorkflowError", err)
	}
	if we.Status != status {
		t.Fatalf("status = %q, want %q", we.Status, status)
	}
	return we
}

func TestWorkflowSuccessChainsSteps(t *testing.T) {
	wf := mustSteps(t,
		Step{Name: "upper", Target: upper},
		Step{Name: "check", Guard: &Guard{Scorer: fixedScore("ok", 0.9, "fine"), Min: 0.5}},
		Step{Name: "suffix", Target: suffix("!")},
	)
	out, err := wf.Execute(context.Background(), &evalrun.Item{ID: "a", Input: evalrun.String("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Value) != `"HI!"` {
		t.Errorf("output = %s, want \"HI!\"", out.Value)
	}
	if out.Usage.InputTokens == nil || *out.Usage.InputTokens != 3 {
		t.Errorf("usage = %v, want 3 input tokens summed over steps", out.Usage.InputTokens)
	}
}

func TestWorkflowGuardTripwire(t *testing.T) {
	wf := mustSteps(t,
		Step{Name: "upper", Target: upper},
		Step{Name: "safety", Guard: &Guard{Scorer: fixedScore("toxicity", 0.2, "rude words"), Min: 0.5}},
		Step{Name: "never", Target: evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) {
			t.Error("a step after a tripped guard ran")
			return evalrun.Output{}, nil
		})},
	)
	_, err := wf.Execute(context.Background(), &evalrun.Item{ID: "a", Input: evalrun.String("hi")})
	we := workflowError(t, err, evalrun.ErrorTripwire, WorkflowTripwire)
	if we.Step != "safety" || !strings.Contains(we.Reason, "rude words on HI") || !strings.Contains(we.Reason, "0.2") {
		t.Errorf("step %q, reason %q; want the guard's step, score and reason", we.Step, we.Reason)
	}
	if u := evalrun.UsageOf(err); u.InputTokens == nil || *u.InputTokens != 1 {
		t.Errorf("usage of the stopped workflow = %v, want the first step's", u.InputTokens)
	}
}

func TestWorkflowFailedKeepsStepKind(t *testing.T) {
	stepErr := &evalrun.Error{Kind: evalrun.ErrorTransient, StatusCode: 503, RetryAfter: 3 * time.Second, Err: errors.New("upstream down")}
	wf := mustSteps(t,
		Step{Name: "upper", Target: upper},
		Step{Name: "call", Target: evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) {
			return evalrun.Output{}, stepErr
		})},
	)
	_, err := wf.Execute(context.Background(), &evalrun.Item{ID: "a", Input: evalrun.String("hi")})
	we := workflowError(t, err, evalrun.ErrorTransient, WorkflowFailed)
	if we.Step != "call" || !errors.Is(err, stepErr) {
		t.Errorf("step %q, error %v; want step call wrapping the step's error", we.Step, err)
	}
	if evalrun.RetryAfterOf(err) != 3*time.Second {
		t.Errorf("RetryAfter = %v, want 3s", evalrun.RetryAfterOf(err))
	}

	// An unclassified step error is permanent; a guard's scorer error fails.
	plain := errors.New("boom")
	wf = mustSteps(t, Step{Name: "x", Target: evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) {
		return evalrun.Output{}, plain
	})})
	_, err = wf.Execute(context.Background(), testItem)
	workflowError(t, err, evalrun.ErrorPermanent, WorkflowFailed)

	nan := mustSteps(t, Step{Name: "g", Guard: &Guard{Scorer: fixedScore("nan", math.NaN(), ""), Min: 0.5}})
	_, err = nan.Execute(context.Background(), testItem)
	workflowError(t, err, evalrun.ErrorInvalidOutput, WorkflowFailed)
	if !errors.Is(err, ErrInvalidScore) {
		t.Errorf("NaN guard error %v does not wrap ErrInvalidScore", err)
	}
}

func TestWorkflowSuspendedAndPaused(t *testing.T) {
	for _, status := range []WorkflowStatus{WorkflowSuspended, WorkflowPaused} {
		wf := NewWorkflow(WorkflowFunc(func(context.Context, *evalrun.Item) WorkflowResult {
			return WorkflowResult{Status: status, Step: "approval", Reason: "waiting for a human", Usage: evalrun.Usage{OutputTokens: evalrun.Int64(5)}}
		}))
		_, err := wf.Execute(context.Background(), testItem)
		we := workflowError(t, err, evalrun.ErrorPermanent, status)
		if we.Step != "approval" || we.Reason != "waiting for a human" {
			t.Errorf("%s: step %q reason %q", status, we.Step, we.Reason)
		}
		if u := evalrun.UsageOf(err); u.OutputTokens == nil || *u.OutputTokens != 5 {
			t.Errorf("%s: usage not carried", status)
		}
	}
}

func TestWorkflowGoDefinedSuccessAndUnknown(t *testing.T) {
	wf := NewWorkflow(WorkflowFunc(func(_ context.Context, it *evalrun.Item) WorkflowResult {
		return WorkflowResult{Status: WorkflowSuccess, Output: json.RawMessage(`{"ok":true}`), TraceID: "tr-1"}
	}))
	out, err := wf.Execute(context.Background(), testItem)
	if err != nil || string(out.Value) != `{"ok":true}` || out.TraceID != "tr-1" {
		t.Errorf("success: %s %q %v", out.Value, out.TraceID, err)
	}
	odd := NewWorkflow(WorkflowFunc(func(context.Context, *evalrun.Item) WorkflowResult {
		return WorkflowResult{Status: "exploded"}
	}))
	_, err = odd.Execute(context.Background(), testItem)
	workflowError(t, err, evalrun.ErrorPermanent, "exploded")
}

func TestNewStepsValidates(t *testing.T) {
	g := &Guard{Scorer: fixedScore("s", 1, ""), Min: 0.5}
	for _, tc := range []struct {
		name  string
		steps []Step
		key   string
	}{
		{"none", nil, "steps"},
		{"no name", []Step{{Target: upper}}, "steps[0].name"},
		{"duplicate", []Step{{Name: "a", Target: upper}, {Name: "a", Target: upper}}, "steps[1].name"},
		{"neither", []Step{{Name: "a"}}, "steps[0]"},
		{"both", []Step{{Name: "a", Target: upper, Guard: g}}, "steps[0]"},
		{"no scorer", []Step{{Name: "a", Guard: &Guard{Min: 0.5}}}, "steps[0].guard.scorer"},
		{"min too big", []Step{{Name: "a", Target: upper}, {Name: "b", Guard: &Guard{Scorer: g.Scorer, Min: 1.5}}}, "steps[1].guard.min"},
		{"min NaN", []Step{{Name: "b", Guard: &Guard{Scorer: g.Scorer, Min: math.NaN()}}}, "steps[0].guard.min"},
	} {
		_, err := NewSteps(tc.steps...)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%s: NewSteps = %v, want a ConfigError for %q", tc.name, err, tc.key)
		}
	}
}

func TestScorerTarget(t *testing.T) {
	var got evalrun.ScoreInput
	s := evalrun.ScorerFunc("judge", func(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
		got = in
		return evalrun.Score{Value: 0.75, Reason: "mostly right", Usage: evalrun.Usage{InputTokens: evalrun.Int64(9)}}, nil
	})
	out, err := NewScorerTarget(s).Execute(context.Background(), testItem)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Value) != `{"score":0.75,"reason":"mostly right"}` {
		t.Errorf("output = %s", out.Value)
	}
	if string(got.Output) != string(testItem.Input) || got.Item.ID != testItem.ID || got.Item.Expected != nil {
		t.Errorf("scorer saw output %s item %+v; want the item's input as output and no expected output", got.Output, got.Item)
	}
	if out.Usage.InputTokens == nil || *out.Usage.InputTokens != 9 {
		t.Errorf("usage not carried")
	}
}

func TestScorerTargetInvalidScores(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -0.1, 1.0001} {
		_, err := NewScorerTarget(fixedScore("s", v, "")).Execute(context.Background(), testItem)
		wantKind(t, err, evalrun.ErrorInvalidOutput)
		if !errors.Is(err, ErrInvalidScore) {
			t.Errorf("score %v: error %v does not wrap ErrInvalidScore", v, err)
		}
	}
	boom := evalrun.Transient(errors.New("judge down"))
	failing := evalrun.ScorerFunc("s", func(context.Context, evalrun.ScoreInput) (evalrun.Score, error) { return evalrun.Score{}, boom })
	_, err := NewScorerTarget(failing).Execute(context.Background(), testItem)
	wantKind(t, err, evalrun.ErrorTransient)
	if !errors.Is(err, boom) {
		t.Errorf("scorer error not wrapped")
	}
}
