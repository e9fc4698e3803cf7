package scorer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/evalrun/evalrun"
)

// NumericOptions configure [NewNumeric]. The zero value demands equal
// numbers.
type NumericOptions struct {
	// Name defaults to "numeric".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
	// Tolerance is the largest difference that passes: absolute, or with
	// Relative a fraction of |expected| (0.01 is 1%). It must be finite
	// and ≥ 0.
	Tolerance float64
	// Relative makes Tolerance relative to |expected|.
	Relative bool
}

// Numeric scores 1 when the output is a number within the tolerance of the
// expected output and 0 otherwise. Each side is a JSON number or a string
// holding one (surrounding white space allowed, as strconv.ParseFloat reads
// it). Differences below 1e-9 × max(1, |expected|) are float rounding and
// always pass. An output that is not a finite number is a scorer error of
// kind invalid_output; an expected output that is not one is a permanent
// scorer error, as is a missing one (matching [ErrNoExpected]). Safe for
// concurrent use.
type Numeric struct {
	base
	tolerance float64
	relative  bool
}

var (
	_ evalrun.Scorer      = (*Numeric)(nil)
	_ evalrun.Thresholder = (*Numeric)(nil)
)

// NewNumeric returns a numeric scorer. A negative, NaN or infinite
// tolerance is a *[ConfigError] on key "tolerance".
func NewNumeric(opts NumericOptions) (*Numeric, error) {
	b, err := newBase(KindNumeric, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	if t := opts.Tolerance; math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
		return nil, b.configError("tolerance", fmt.Errorf("%v is not a finite number ≥ 0", t))
	}
	return &Numeric{base: b, tolerance: opts.Tolerance, relative: opts.Relative}, nil
}

func buildNumeric(c Config, b base, _ Deps) (evalrun.Scorer, error) {
	var tol float64
	if c.Tolerance != nil {
		tol = *c.Tolerance
	}
	return NewNumeric(NumericOptions{Name: b.name, Threshold: &b.threshold, Tolerance: tol, Relative: c.Relative})
}

// Score compares output and expected as numbers.
func (s *Numeric) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	exp, err := expected(KindNumeric, in)
	if err != nil {
		return evalrun.Score{}, err
	}
	e, err := parseNumber(exp)
	if err != nil {
		return evalrun.Score{}, evalrun.Permanent(fmt.Errorf("numeric: expected_output: %w", err))
	}
	o, err := parseNumber(in.Output)
	if err != nil {
		return evalrun.Score{}, invalidOutput("numeric: output: %w", err)
	}
	diff := math.Abs(o - e)
	allowed := s.tolerance
	if s.relative {
		allowed *= math.Abs(e)
	}
	ok := diff <= allowed || diff <= 1e-9*max(1, math.Abs(e))
	verdict := "within"
	if !ok {
		verdict = "outside"
	}
	unit := ""
	if s.relative {
		unit = " of |expected|"
	}
	return passFail(ok, fmt.Sprintf("output %v differs from expected %v by %v, %s tolerance %v%s",
		o, e, diff, verdict, s.tolerance, unit)), nil
}

// errNotNumber is the cause of a value that is not a number.
var errNotNumber = errors.New("not a number")

// parseNumber reads a finite number from a JSON number or a JSON string
// holding one.
func parseNumber(raw json.RawMessage) (float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, fmt.Errorf("empty: %w", errNotNumber)
	}
	s := string(raw)
	if isString(raw) {
		s = strings.TrimSpace(text(raw))
	} else if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, fmt.Errorf("%s: %w", quote(s), errNotNumber)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s: %w", quote(s), errNotNumber)
	}
	return f, nil
}
