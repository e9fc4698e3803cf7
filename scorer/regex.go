package scorer

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/evalrun/evalrun"
)

// RegexOptions configure [NewRegex].
type RegexOptions struct {
	// Name defaults to "regex".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
	// Pattern is a Go (RE2) regular expression; required. Use (?i) for
	// case-insensitive matching and ^…$ for a whole-text match.
	Pattern string
}

// Regex scores 1 when the pattern matches somewhere in the output's text
// (see [evalrun.Text]) and 0 otherwise. Safe for concurrent use.
type Regex struct {
	base
	re *regexp.Regexp
}

var (
	_ evalrun.Scorer      = (*Regex)(nil)
	_ evalrun.Thresholder = (*Regex)(nil)
)

// NewRegex compiles opts.Pattern and returns a regex scorer. A missing or
// invalid pattern is a *[ConfigError] on key "pattern" (wrapping the
// *regexp/syntax.Error).
func NewRegex(opts RegexOptions) (*Regex, error) {
	b, err := newBase(KindRegex, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	if opts.Pattern == "" {
		return nil, b.configError("pattern", errors.New("required"))
	}
	re, err := regexp.Compile(opts.Pattern)
	if err != nil {
		return nil, b.configError("pattern", fmt.Errorf("invalid regular expression: %w", err))
	}
	return &Regex{base: b, re: re}, nil
}

func buildRegex(c Config, b base, _ Deps) (evalrun.Scorer, error) {
	return NewRegex(RegexOptions{Name: b.name, Threshold: &b.threshold, Pattern: c.Pattern})
}

// Score matches the pattern against the output's text.
func (s *Regex) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	out := text(in.Output)
	if loc := s.re.FindStringIndex(out); loc != nil {
		return passFail(true, "matched "+quote(out[loc[0]:loc[1]])), nil
	}
	return passFail(false, "no match for /"+s.re.String()+"/ in "+quote(out)), nil
}
