package evalrun

import (
	"context"
	"encoding/json"
)

// Target is what an evaluation runs each item against: a model, a service, a
// program, a workflow or a scorer under calibration.
//
// Execute must honour ctx where it can; the engine enforces deadlines even
// when it does not (it stops waiting and fails the item). Execute is called
// from many goroutines at once and must be safe for concurrent use.
//
// An error should be a *[Error] saying whether it is transient (worth a
// retry) or permanent; any other error is treated as permanent. Returning
// neither a non-empty Output.Value nor an error is itself an error of the
// item, never a success.
type Target interface {
	Execute(ctx context.Context, item *Item) (Output, error)
}

// TargetFunc adapts a function to a [Target].
type TargetFunc func(ctx context.Context, item *Item) (Output, error)

// Execute calls f.
func (f TargetFunc) Execute(ctx context.Context, item *Item) (Output, error) { return f(ctx, item) }

// TargetInfo names a target in run records and reports.
type TargetInfo struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// Output is what a target produced for one item.
type Output struct {
	// Value is the output as raw JSON: a JSON string for text.
	Value json.RawMessage
	// Usage is the resources the call consumed, when the target reports them.
	Usage Usage
	// TraceID links the result to a trace in the target's own system.
	TraceID string
	// Trajectory is what an agent did (its tool calls and model turns);
	// nil for a target that is not an agent.
	Trajectory *Trajectory
}

// Usage counts what a call consumed. A nil field means "not reported",
// which reports keep apart from a reported zero.
type Usage struct {
	InputTokens  *int64   `json:"input_tokens,omitempty"`
	OutputTokens *int64   `json:"output_tokens,omitempty"`
	CostUSD      *float64 `json:"cost_usd,omitempty"`
}

// Add accumulates o into u. A field stays nil only when neither reported it.
func (u *Usage) Add(o Usage) {
	u.InputTokens = addInt(u.InputTokens, o.InputTokens)
	u.OutputTokens = addInt(u.OutputTokens, o.OutputTokens)
	if o.CostUSD != nil {
		v := *o.CostUSD
		if u.CostUSD != nil {
			v += *u.CostUSD
		}
		u.CostUSD = &v
	}
}

// IsZero reports whether nothing was reported.
func (u Usage) IsZero() bool {
	return u.InputTokens == nil && u.OutputTokens == nil && u.CostUSD == nil
}

func addInt(a, b *int64) *int64 {
	if b == nil {
		return a
	}
	v := *b
	if a != nil {
		v += *a
	}
	return &v
}

// Int64 returns a pointer to v, for building a [Usage].
func Int64(v int64) *int64 { return &v }

// Float64 returns a pointer to v, for building a [Usage].
func Float64(v float64) *float64 { return &v }

// Replayer is implemented by targets that return outputs recorded earlier
// instead of calling a system (evalrun run --outputs). The engine records
// no latency for their results: the time to look an output up says
// nothing about the system that produced it, so reports count it as not
// reported.
type Replayer interface {
	Target
	// Replays is a marker; it is never called.
	Replays()
}

// Closer is implemented by targets and scorers that hold resources (a
// process pool, an HTTP client) to release after a run.
type Closer interface {
	Close() error
}
