package scorer

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"

	"github.com/evalrun/evalrun"
)

// LevenshteinOptions configure [NewLevenshtein]. The zero value compares
// case-sensitive, untrimmed texts.
type LevenshteinOptions struct {
	// Name defaults to "levenshtein".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
	// IgnoreCase compares lower-cased texts.
	IgnoreCase bool
	// Trim removes leading and trailing white space from both texts.
	Trim bool
}

// Levenshtein scores the similarity of the output's text and the expected
// output's text (see [evalrun.Text]) as 1 − distance / max(length), with the
// Levenshtein edit distance and lengths counted in runes (Unicode code
// points, not normalized). Two empty texts score 1. The cost is
// O(len(output) × len(expected)). An item with no expected output is a
// scorer error matching [ErrNoExpected]. Safe for concurrent use.
type Levenshtein struct {
	base
	ignoreCase, trim bool
}

var (
	_ evalrun.Scorer      = (*Levenshtein)(nil)
	_ evalrun.Thresholder = (*Levenshtein)(nil)
)

// NewLevenshtein returns a levenshtein scorer; it fails only on an invalid
// threshold.
func NewLevenshtein(opts LevenshteinOptions) (*Levenshtein, error) {
	b, err := newBase(KindLevenshtein, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	return &Levenshtein{base: b, ignoreCase: opts.IgnoreCase, trim: opts.Trim}, nil
}

func buildLevenshtein(c Config, b base, _ Deps) (evalrun.Scorer, error) {
	return &Levenshtein{base: b, ignoreCase: c.CaseSensitive != nil && !*c.CaseSensitive, trim: c.Trim}, nil
}

// Score returns the similarity of output and expected.
func (s *Levenshtein) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	exp, err := expected(KindLevenshtein, in)
	if err != nil {
		return evalrun.Score{}, err
	}
	a, b := text(in.Output), text(exp)
	if s.trim {
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	}
	if s.ignoreCase {
		a, b = strings.ToLower(a), strings.ToLower(b)
	}
	n := max(utf8.RuneCountInString(a), utf8.RuneCountInString(b))
	if n == 0 {
		return evalrun.Score{Value: 1, Reason: "both texts are empty"}, nil
	}
	d := levenshtein.ComputeDistance(a, b)
	return evalrun.Score{
		Value:  1 - float64(d)/float64(n),
		Reason: fmt.Sprintf("edit distance %d over %d characters", d, n),
	}, nil
}
