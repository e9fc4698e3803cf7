package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/evalrun/evalrun"
)

// WorkflowStatus is how one run of a workflow ended. Only
// [WorkflowSuccess] is a success; every other status is an error of the
// item that says which status and why.
type WorkflowStatus string

// The workflow statuses.
const (
	// WorkflowSuccess: the workflow produced its output.
	WorkflowSuccess WorkflowStatus = "success"
	// WorkflowFailed: a step failed. The error keeps the step error's kind,
	// so a transient failure (an HTTP 503 in step 2) is retried.
	WorkflowFailed WorkflowStatus = "failed"
	// WorkflowTripwire: a guard stopped the workflow (kind tripwire).
	WorkflowTripwire WorkflowStatus = "tripwire"
	// WorkflowSuspended: the workflow waits for something external (a
	// human approval, an event). An evaluation cannot resume it: permanent.
	WorkflowSuspended WorkflowStatus = "suspended"
	// WorkflowPaused: the workflow was paused. An evaluation cannot resume
	// it: permanent.
	WorkflowPaused WorkflowStatus = "paused"
)

// WorkflowResult is the end of one run of a [Workflow].
type WorkflowResult struct {
	Status WorkflowStatus
	// Output is the workflow's output; used only on success.
	Output json.RawMessage
	// Step names the step the workflow ended at, when known.
	Step string
	// Reason says why a workflow stopped (tripwire, suspended, paused).
	Reason string
	// Err is the cause of a failure.
	Err error
	// Usage is what the steps consumed, whatever the status.
	Usage evalrun.Usage
	// TraceID links the run to a trace, when the workflow has one.
	TraceID string
	// Trajectory is what the workflow's agents did, whatever the status
	// (a failed run's up to its failure); nil when no step is an agent.
	Trajectory *evalrun.Trajectory
}

// Workflow is a multi-step process defined in Go. Run must be safe for
// concurrent use; it returns how the run ended instead of an error, so a
// workflow can say it was suspended or paused. [Steps] is the built-in one.
type Workflow interface {
	Run(ctx context.Context, item *evalrun.Item) WorkflowResult
}

// WorkflowFunc adapts a function to a [Workflow].
type WorkflowFunc func(ctx context.Context, item *evalrun.Item) WorkflowResult

// Run calls f.
func (f WorkflowFunc) Run(ctx context.Context, item *evalrun.Item) WorkflowResult {
	return f(ctx, item)
}

// WorkflowError is the error of a workflow that did not succeed. Find it
// with errors.As to learn the status.
type WorkflowError struct {
	Status WorkflowStatus
	Step   string
	Reason string
	// Err is the cause of a failed workflow.
	Err error
}

// Error says the status, the step and the reason.
func (e *WorkflowError) Error() string {
	msg := "workflow " + string(e.Status)
	if e.Step != "" {
		msg += fmt.Sprintf(" at step %q", e.Step)
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	switch e.Status {
	case WorkflowSuspended, WorkflowPaused:
		msg += " (a " + string(e.Status) + " workflow cannot be resumed by an evaluation)"
	}
	return msg
}

// Unwrap returns the cause.
func (e *WorkflowError) Unwrap() error { return e.Err }

// WorkflowTarget runs a [Workflow] as a target. It is safe for concurrent
// use when the workflow is.
type WorkflowTarget struct {
	w Workflow
}

var (
	_ evalrun.Target = (*WorkflowTarget)(nil)
	_ evalrun.Closer = (*WorkflowTarget)(nil)
	_ Workflow       = (*Steps)(nil)
)

// NewWorkflow returns a target running w.
func NewWorkflow(w Workflow) *WorkflowTarget { return &WorkflowTarget{w: w} }

// Execute runs the workflow. A success gives its output; any other status
// gives an *[evalrun.Error] wrapping a *[WorkflowError]: kind tripwire for
// a tripwire, the cause's kind for a failure (permanent when unknown), and
// permanent for suspended, paused and unknown statuses. The output, or the
// error, carries the workflow's usage and trajectory.
func (t *WorkflowTarget) Execute(ctx context.Context, item *evalrun.Item) (evalrun.Output, error) {
	res := t.w.Run(ctx, item)
	we := &WorkflowError{Status: res.Status, Step: res.Step, Reason: res.Reason, Err: res.Err}
	e := &evalrun.Error{Kind: evalrun.ErrorPermanent, Usage: res.Usage, Trajectory: res.Trajectory, Err: we}
	switch res.Status {
	case WorkflowSuccess:
		if res.Err != nil {
			return evalrun.Output{}, evalrun.Permanent(fmt.Errorf("workflow success with an error: %w", res.Err))
		}
		return evalrun.Output{Value: res.Output, Usage: res.Usage, TraceID: res.TraceID, Trajectory: res.Trajectory}, nil
	case WorkflowFailed:
		if res.Err == nil {
			we.Err = errors.New("no cause given")
		} else {
			e.Kind = evalrun.KindOf(res.Err)
			var inner *evalrun.Error
			if errors.As(res.Err, &inner) {
				e.StatusCode, e.RetryAfter = inner.StatusCode, inner.RetryAfter
			}
		}
	case WorkflowTripwire:
		e.Kind = evalrun.ErrorTripwire
	case WorkflowSuspended, WorkflowPaused:
	default:
		we.Reason = fmt.Sprintf("unknown workflow status %q", res.Status)
	}
	return evalrun.Output{}, e
}

// Close closes the workflow when it is an [evalrun.Closer].
func (t *WorkflowTarget) Close() error {
	if c, ok := t.w.(evalrun.Closer); ok {
		return c.Close()
	}
	return nil
}

// Step is one step of [Steps]: a target or a guard, exactly one of them.
type Step struct {
	// Name identifies the step in errors; unique within the workflow.
	Name string
	// Target is called with the item whose Input is the previous step's
	// output (the item's own input for the first step).
	Target evalrun.Target
	// Guard checks the current value and stops the workflow when it fails.
	Guard *Guard
}

// Guard is a check between steps: its scorer grades the current value (the
// previous step's output, or the item's input when the guard comes first)
// as the Output of a [evalrun.ScoreInput] whose Item is the original item.
// A score below Min stops the workflow with status tripwire; a scorer
// error, a NaN or a score outside [0,1] fails it. A guard passes the
// value on unchanged.
type Guard struct {
	Scorer evalrun.Scorer
	// Min is the lowest passing score, in [0,1]. The suite file's default
	// is the scorer's threshold ([evalrun.ThresholdOf]).
	Min float64
}

// Steps is a [Workflow] of ordered steps, each a target or a guard; the
// output of a step is the input of the next, and the last value is the
// workflow's output. When steps are agents (their outputs carry a
// trajectory), the workflow's trajectory is theirs concatenated in step
// order, with their steps summed; a guard scores with the trajectory so
// far. It is safe for concurrent use when its targets and scorers are.
type Steps struct {
	steps []Step
}

// NewSteps returns a workflow of steps, or a *[ConfigError] naming the bad
// step ("steps", "steps[i].name", "steps[i].guard.min", ...).
func NewSteps(steps ...Step) (*Steps, error) {
	if len(steps) == 0 {
		return nil, configErrorf("steps", "a workflow needs at least one step")
	}
	seen := make(map[string]bool, len(steps))
	for i, s := range steps {
		key := fmt.Sprintf("steps[%d]", i)
		switch {
		case s.Name == "":
			return nil, configErrorf(key+".name", "required")
		case seen[s.Name]:
			return nil, configErrorf(key+".name", "duplicate step name %q", s.Name)
		case (s.Target == nil) == (s.Guard == nil):
			return nil, configErrorf(key, "step %q needs exactly one of target and guard", s.Name)
		case s.Guard != nil && s.Guard.Scorer == nil:
			return nil, configErrorf(key+".guard.scorer", "required")
		case s.Guard != nil && !(s.Guard.Min >= 0 && s.Guard.Min <= 1):
			return nil, configErrorf(key+".guard.min", "must be in [0,1], got %v", s.Guard.Min)
		}
		seen[s.Name] = true
	}
	return &Steps{steps: append([]Step(nil), steps...)}, nil
}

// Run runs the steps in order for item.
func (w *Steps) Run(ctx context.Context, item *evalrun.Item) WorkflowResult {
	var usage evalrun.Usage
	var traj *evalrun.Trajectory
	cur := item.Input
	trace := ""
	fail := func(step string, err error) WorkflowResult {
		return WorkflowResult{Status: WorkflowFailed, Step: step, Err: err, Usage: usage, TraceID: trace, Trajectory: traj}
	}
	for _, s := range w.steps {
		if err := ctx.Err(); err != nil {
			return fail(s.Name, ClassifyTransport(context.Cause(ctx)))
		}
		if s.Guard != nil {
			sc, err := s.Guard.Scorer.Score(ctx, evalrun.ScoreInput{Item: item, Output: cur, Trajectory: traj})
			usage.Add(sc.Usage)
			if err != nil {
				usage.Add(evalrun.UsageOf(err))
				return fail(s.Name, fmt.Errorf("guard %s: %w", s.Guard.Scorer.Name(), err))
			}
			if err := CheckScore(sc.Value); err != nil {
				return fail(s.Name, fmt.Errorf("guard %s: %w", s.Guard.Scorer.Name(), err))
			}
			if sc.Value < s.Guard.Min {
				reason := fmt.Sprintf("guard %s scored %g, below min %g", s.Guard.Scorer.Name(), sc.Value, s.Guard.Min)
				if sc.Reason != "" {
					reason += ": " + sc.Reason
				}
				return WorkflowResult{Status: WorkflowTripwire, Step: s.Name, Reason: reason, Usage: usage, TraceID: trace, Trajectory: traj}
			}
			continue
		}
		in := *item
		in.Input = cur
		out, err := s.Target.Execute(ctx, &in)
		usage.Add(out.Usage)
		if out.TraceID != "" {
			trace = out.TraceID
		}
		if err != nil {
			usage.Add(evalrun.UsageOf(err))
			traj = appendTrajectory(traj, evalrun.TrajectoryOf(err))
			return fail(s.Name, err)
		}
		traj = appendTrajectory(traj, out.Trajectory)
		if len(out.Value) == 0 {
			return fail(s.Name, evalrun.Errorf(evalrun.ErrorInvalidOutput, "step returned no output"))
		}
		cur = out.Value
	}
	return WorkflowResult{Status: WorkflowSuccess, Output: cur, Step: w.steps[len(w.steps)-1].Name, Usage: usage, TraceID: trace,
		Trajectory: traj}
}

// appendTrajectory returns acc with t's calls and steps added; nil while
// neither is set. acc is the workflow's own (t is never kept): a step's
// trajectory may be shared, a cached one for instance.
func appendTrajectory(acc, t *evalrun.Trajectory) *evalrun.Trajectory {
	if t == nil {
		return acc
	}
	if acc == nil {
		acc = &evalrun.Trajectory{Calls: make([]evalrun.ToolCall, 0, len(t.Calls))}
	}
	acc.Steps += t.Steps
	acc.Calls = append(acc.Calls, t.Calls...)
	return acc
}

// Close closes every step target and guard scorer that is an
// [evalrun.Closer], returning the errors joined.
func (w *Steps) Close() error {
	var errs []error
	for _, s := range w.steps {
		var c any = s.Target
		if s.Guard != nil {
			c = s.Guard.Scorer
		}
		if cl, ok := c.(evalrun.Closer); ok {
			errs = append(errs, cl.Close())
		}
	}
	return errors.Join(errs...)
}

// ErrInvalidScore: a score is NaN, infinite or outside [0,1].
var ErrInvalidScore = errors.New("invalid score")

// CheckScore returns nil for a score in [0,1], and otherwise an
// *[evalrun.Error] of kind invalid_output wrapping [ErrInvalidScore].
func CheckScore(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1 {
		return &evalrun.Error{Kind: evalrun.ErrorInvalidOutput, Err: fmt.Errorf("%w: %v is not in [0,1]", ErrInvalidScore, v)}
	}
	return nil
}
