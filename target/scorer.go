package target

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/evalrun/evalrun"
)

// ScorerTarget is a target that runs a scorer, to evaluate the scorer
// itself (judge calibration): the dataset's items are the cases to grade
// and their expected outputs the grades people gave.
//
// For each item the scorer grades the item's input: it is called with a
// [evalrun.ScoreInput] whose Item is the item (so Expected and Metadata are
// there) and whose Output is item.Input. The target's output is
// {"score": x, "reason": "..."} and carries the scorer's usage. A NaN, an
// infinity or a score outside [0,1] is an error of kind invalid_output
// ([ErrInvalidScore]); a scorer error is passed on with its kind. It is
// safe for concurrent use when the scorer is.
type ScorerTarget struct {
	s evalrun.Scorer
}

var (
	_ evalrun.Target = (*ScorerTarget)(nil)
	_ evalrun.Closer = (*ScorerTarget)(nil)
)

// NewScorerTarget returns a target running s.
func NewScorerTarget(s evalrun.Scorer) *ScorerTarget { return &ScorerTarget{s: s} }

// scorerOutput is the output of a scorer target.
type scorerOutput struct {
	Score  float64 `json:"score"`
	Reason string  `json:"reason"`
}

// Execute scores item.Input.
func (t *ScorerTarget) Execute(ctx context.Context, item *evalrun.Item) (evalrun.Output, error) {
	sc, err := t.s.Score(ctx, evalrun.ScoreInput{Item: item, Output: item.Input})
	if err != nil {
		return evalrun.Output{}, fmt.Errorf("scorer %s: %w", t.s.Name(), err)
	}
	if err := CheckScore(sc.Value); err != nil {
		e := err.(*evalrun.Error)
		e.Usage = sc.Usage
		e.Err = fmt.Errorf("scorer %s: %w", t.s.Name(), e.Err)
		return evalrun.Output{}, e
	}
	v, err := json.Marshal(scorerOutput{Score: sc.Value, Reason: sc.Reason})
	if err != nil {
		return evalrun.Output{}, evalrun.Permanent(fmt.Errorf("encode score: %w", err))
	}
	return evalrun.Output{Value: v, Usage: sc.Usage}, nil
}

// Close closes the scorer when it is an [evalrun.Closer].
func (t *ScorerTarget) Close() error {
	if c, ok := t.s.(evalrun.Closer); ok {
		return c.Close()
	}
	return nil
}
