package scorer

import (
	"bytes"
	"context"
	"strings"

	"github.com/evalrun/evalrun"
)

// ExactMatchOptions configure [NewExactMatch]. The zero value compares
// exactly, case-sensitive and untrimmed, with the default threshold.
type ExactMatchOptions struct {
	// Name defaults to "exact_match".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold]; it must be in
	// [0,1].
	Threshold *float64
	// IgnoreCase compares texts with Unicode case folding.
	IgnoreCase bool
	// Trim removes leading and trailing white space from both texts.
	Trim bool
}

// ExactMatch scores 1 when the output equals the item's expected output and
// 0 otherwise, with [evalrun.EqualValues] semantics: when either side is a
// JSON string, their texts are compared (with the IgnoreCase and Trim
// options); otherwise their canonical JSON is, so key order and spacing do
// not matter (the options do not apply). Two JSON strings without escapes
// are compared without decoding. An item with no expected output is a
// scorer error matching [ErrNoExpected]. Safe for concurrent use.
type ExactMatch struct {
	base
	ignoreCase, trim bool
}

var (
	_ evalrun.Scorer      = (*ExactMatch)(nil)
	_ evalrun.Thresholder = (*ExactMatch)(nil)
)

// NewExactMatch returns an exact_match scorer; it fails only on an invalid
// threshold.
func NewExactMatch(opts ExactMatchOptions) (*ExactMatch, error) {
	b, err := newBase(KindExactMatch, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	return &ExactMatch{base: b, ignoreCase: opts.IgnoreCase, trim: opts.Trim}, nil
}

func buildExactMatch(c Config, b base, _ Deps) (evalrun.Scorer, error) {
	return &ExactMatch{base: b, ignoreCase: c.CaseSensitive != nil && !*c.CaseSensitive, trim: c.Trim}, nil
}

// Score compares in.Output with in.Item.Expected.
func (s *ExactMatch) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	exp, err := expected(KindExactMatch, in)
	if err != nil {
		return evalrun.Score{}, err
	}
	out := bytes.TrimSpace(in.Output)
	// The common case, two JSON strings without escapes, compares the
	// bytes between the quotes: no decoding, no allocation on a match.
	if ob, ok := plainBody(out); ok {
		if eb, ok := plainBody(exp); ok {
			if s.trim {
				ob, eb = bytes.TrimSpace(ob), bytes.TrimSpace(eb)
			}
			if bytes.Equal(ob, eb) || (s.ignoreCase && bytes.EqualFold(ob, eb)) {
				return passFail(true, "output equals expected"), nil
			}
			return passFail(false, "output "+quote(string(ob))+" differs from expected "+quote(string(eb))), nil
		}
	}
	if len(out) == 0 || isString(out) || isString(exp) {
		a, b := text(out), text(exp)
		if s.trim {
			a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		}
		eq := a == b || (s.ignoreCase && strings.EqualFold(a, b))
		if eq {
			return passFail(true, "output equals expected"), nil
		}
		return passFail(false, "output "+quote(a)+" differs from expected "+quote(b)), nil
	}
	if evalrun.EqualValues(out, exp) {
		return passFail(true, "output equals expected"), nil
	}
	return passFail(false, "output "+quote(evalrun.Text(out))+" differs from expected "+quote(evalrun.Text(exp))), nil
}
