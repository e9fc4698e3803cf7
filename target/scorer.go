package target

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/evalrun/evalrun"
)

// ScorerTarget is a target that runs a scorer, to evaluate the scorer
// itself (judge calibration): the dataset's items are the cases to grade
// and their expected outputs the grades people gave.
//
// The scorer never sees the grade: it is called with a
// [evalrun.ScoreInput] built from the item's input alone (see
// [CalibrationInput]), with the item's ID and Metadata but not its
// Expected. The target's output is {"score": x, "reason": "..."} and
// carries the scorer's usage. A NaN, an infinity or a score outside [0,1]
// is an error of kind invalid_output ([ErrInvalidScore]); a scorer error is
// passed on with its kind. It is safe for concurrent use when the scorer
// is.
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

// Execute scores the case that item.Input describes.
func (t *ScorerTarget) Execute(ctx context.Context, item *evalrun.Item) (evalrun.Output, error) {
	sc, err := t.s.Score(ctx, CalibrationInput(item))
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

// calibrationKeys are the keys of an item input that spells out the case
// to grade; "output" is required among them.
var calibrationKeys = []string{"input", "output", "expected_output"}

// CalibrationInput returns what a scorer under calibration grades for item:
//
//   - when item.Input is a JSON object with an "output" key and no key but
//     "input", "output" and "expected_output", the case is spelled out: the
//     scorer grades that output, for that input (absent: none), against
//     that expected output (absent: none), e.g.
//     {"input": "2+2?", "output": "5"};
//   - otherwise the whole input is the output to grade, with no input and
//     no expected output.
//
// item.Expected, the grade people gave, is never part of it: the scorer
// would see the answer it is asked to predict.
func CalibrationInput(item *evalrun.Item) evalrun.ScoreInput {
	c := &evalrun.Item{ID: item.ID, Metadata: item.Metadata}
	var fields map[string]json.RawMessage
	if json.Unmarshal(item.Input, &fields) == nil && fields != nil && fields["output"] != nil &&
		!slices.ContainsFunc(slices.Collect(maps.Keys(fields)), func(k string) bool { return !slices.Contains(calibrationKeys, k) }) {
		c.Input, c.Expected = fields["input"], fields["expected_output"]
		return evalrun.ScoreInput{Item: c, Output: fields["output"]}
	}
	return evalrun.ScoreInput{Item: c, Output: item.Input}
}

// Close closes the scorer when it is an [evalrun.Closer].
func (t *ScorerTarget) Close() error {
	if c, ok := t.s.(evalrun.Closer); ok {
		return c.Close()
	}
	return nil
}
