package scorer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/evalrun/evalrun"
)

// ContainsOptions configure [NewContains]. The zero value looks for the
// item's expected output, case-sensitive.
type ContainsOptions struct {
	// Name defaults to "contains".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
	// Values are the substrings to look for; none means the text of the
	// item's expected output. An empty value is a config error.
	Values []string
	// Mode is ModeAny (the default, also for "") or ModeAll.
	Mode Mode
	// IgnoreCase compares lower-cased texts.
	IgnoreCase bool
}

// Contains scores 1 when the output's text (see [evalrun.Text]: a
// non-string output is its compact JSON) contains any (ModeAny) or all
// (ModeAll) of the values, and 0 otherwise. Safe for concurrent use.
type Contains struct {
	base
	values     []string // lower-cased when ignoreCase
	all        bool
	ignoreCase bool
}

var (
	_ evalrun.Scorer      = (*Contains)(nil)
	_ evalrun.Thresholder = (*Contains)(nil)
)

// NewContains returns a contains scorer. It fails (with a *[ConfigError])
// on an unknown mode, an empty value or an invalid threshold.
func NewContains(opts ContainsOptions) (*Contains, error) {
	b, err := newBase(KindContains, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	s := &Contains{base: b, ignoreCase: opts.IgnoreCase}
	switch opts.Mode {
	case "", ModeAny:
	case ModeAll:
		s.all = true
	default:
		return nil, b.configError("mode", fmt.Errorf("unknown mode %q; want any or all", opts.Mode))
	}
	for i, v := range opts.Values {
		if v == "" {
			return nil, b.configError(fmt.Sprintf("values[%d]", i), errors.New("an empty value matches everything"))
		}
		if s.ignoreCase {
			v = strings.ToLower(v)
		}
		s.values = append(s.values, v)
	}
	return s, nil
}

func buildContains(c Config, b base, _ Deps) (evalrun.Scorer, error) {
	return NewContains(ContainsOptions{Name: b.name, Threshold: &b.threshold, Values: c.Values,
		Mode: c.Mode, IgnoreCase: c.CaseSensitive != nil && !*c.CaseSensitive})
}

// Score looks for the values in the output's text.
func (s *Contains) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	values := s.values
	if len(values) == 0 {
		exp, err := expected(KindContains, in)
		if err != nil {
			return evalrun.Score{}, err
		}
		v := text(exp)
		if s.ignoreCase {
			v = strings.ToLower(v)
		}
		values = []string{v}
	}
	out := text(in.Output)
	if s.ignoreCase {
		out = strings.ToLower(out)
	}
	var found, missing []string
	for _, v := range values {
		if strings.Contains(out, v) {
			found = append(found, quote(v))
		} else {
			missing = append(missing, quote(v))
		}
	}
	switch {
	case s.all && len(missing) == 0:
		return passFail(true, "found all of "+strings.Join(found, ", ")), nil
	case s.all:
		return passFail(false, "missing "+strings.Join(missing, ", ")), nil
	case len(found) > 0:
		return passFail(true, "found "+strings.Join(found, ", ")), nil
	default:
		return passFail(false, "found none of "+strings.Join(missing, ", ")), nil
	}
}
