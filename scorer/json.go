package scorer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/evalrun/evalrun"
)

// JSONValidOptions configure [NewJSONValid].
type JSONValidOptions struct {
	// Name defaults to "json_valid".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
}

// JSONValid scores 1 when the output is JSON and 0 otherwise. A JSON
// string output is judged by its text (a model answering `{"a":1}` as text
// passes, the text `hello` does not); any other output is judged as it is.
// An empty output scores 0. Safe for concurrent use.
type JSONValid struct {
	base
}

var (
	_ evalrun.Scorer      = (*JSONValid)(nil)
	_ evalrun.Thresholder = (*JSONValid)(nil)
)

// NewJSONValid returns a json_valid scorer; it fails only on an invalid
// threshold.
func NewJSONValid(opts JSONValidOptions) (*JSONValid, error) {
	b, err := newBase(KindJSONValid, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	return &JSONValid{base: b}, nil
}

func buildJSONValid(_ Config, b base, _ Deps) (evalrun.Scorer, error) {
	return &JSONValid{base: b}, nil
}

// Score checks that the output is JSON.
func (s *JSONValid) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	out := bytes.TrimSpace(in.Output)
	what := "output"
	if isString(out) {
		out = bytes.TrimSpace([]byte(text(out)))
		what = "output text"
	}
	if len(out) == 0 {
		return passFail(false, what+" is empty"), nil
	}
	if json.Valid(out) {
		return passFail(true, what+" is valid JSON"), nil
	}
	var v json.RawMessage
	err := json.Unmarshal(out, &v)
	return passFail(false, fmt.Sprintf("%s is not JSON: %v", what, err)), nil
}

// JSONEqualOptions configure [NewJSONEqual].
type JSONEqualOptions struct {
	// Name defaults to "json_equal".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
}

// JSONEqual scores 1 when the output and the expected output are the same
// JSON value and 0 otherwise: key order, spacing and number spelling (1,
// 1.0, 1e0) do not matter (see [evalrun.Canonical]). A JSON string whose text
// is JSON, on either side, is compared as that JSON; any other string is
// compared as a string. An output that is not JSON scores 0; an item with no
// expected output is a scorer error matching [ErrNoExpected]. Safe for
// concurrent use.
type JSONEqual struct {
	base
}

var (
	_ evalrun.Scorer      = (*JSONEqual)(nil)
	_ evalrun.Thresholder = (*JSONEqual)(nil)
)

// NewJSONEqual returns a json_equal scorer; it fails only on an invalid
// threshold.
func NewJSONEqual(opts JSONEqualOptions) (*JSONEqual, error) {
	b, err := newBase(KindJSONEqual, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	return &JSONEqual{base: b}, nil
}

func buildJSONEqual(_ Config, b base, _ Deps) (evalrun.Scorer, error) {
	return &JSONEqual{base: b}, nil
}

// Score compares output and expected as JSON values.
func (s *JSONEqual) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	exp, err := expected(KindJSONEqual, in)
	if err != nil {
		return evalrun.Score{}, err
	}
	out := bytes.TrimSpace(in.Output)
	if len(out) == 0 {
		return passFail(false, "output is empty"), nil
	}
	ce, err := evalrun.Canonical(jsonOf(exp))
	if err != nil {
		return evalrun.Score{}, evalrun.Permanent(fmt.Errorf("json_equal: expected_output is not JSON: %w", err))
	}
	co, err := evalrun.Canonical(jsonOf(out))
	if err != nil {
		return passFail(false, fmt.Sprintf("output is not JSON: %v", err)), nil
	}
	if bytes.Equal(co, ce) {
		return passFail(true, "output equals expected as JSON"), nil
	}
	return passFail(false, "output "+quote(string(co))+" differs from expected "+quote(string(ce))), nil
}
