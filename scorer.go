package evalrun

import (
	"context"
	"encoding/json"
)

// DefaultThreshold is the pass threshold of a scorer that sets none.
const DefaultThreshold = 0.5

// Scorer grades one output into a score in [0,1].
//
// Score is called from many goroutines at once and must be safe for
// concurrent use. An error, a panic, a NaN or a value outside [0,1] is that
// scorer's error for that item and touches nothing else.
type Scorer interface {
	// Name identifies the scorer within a run (unique per suite).
	Name() string
	Score(ctx context.Context, in ScoreInput) (Score, error)
}

// Thresholder is implemented by scorers whose pass threshold is not
// [DefaultThreshold].
type Thresholder interface {
	Threshold() float64
}

// ThresholdOf returns s's pass threshold.
func ThresholdOf(s Scorer) float64 {
	if t, ok := s.(Thresholder); ok {
		return t.Threshold()
	}
	return DefaultThreshold
}

// ScoreInput is what a scorer grades.
type ScoreInput struct {
	// Item is the dataset item: its Input, Expected and Metadata. Under
	// calibration (a scorer target) it is the case to grade, whose Input
	// and Expected may be absent.
	Item *Item
	// Output is the target's output as raw JSON.
	Output json.RawMessage
	// Trajectory is what an agent did to produce Output; nil when the
	// target is not an agent.
	Trajectory *Trajectory
}

// Score is a scorer's verdict on one output.
type Score struct {
	// Value is in [0,1].
	Value float64
	// Reason explains the value, for people.
	Reason string
	// Usage is what scoring consumed (a judge's tokens), when reported.
	Usage Usage
}

// ScorerFunc adapts a function to a [Scorer] with the given name.
func ScorerFunc(name string, f func(ctx context.Context, in ScoreInput) (Score, error)) Scorer {
	return scorerFunc{name: name, f: f}
}

type scorerFunc struct {
	name string
	f    func(ctx context.Context, in ScoreInput) (Score, error)
}

func (s scorerFunc) Name() string { return s.name }
func (s scorerFunc) Score(ctx context.Context, in ScoreInput) (Score, error) {
	return s.f(ctx, in)
}
