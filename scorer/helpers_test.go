package scorer_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/scorer"
)

// scoreCase is one row of a scorer's table: raw JSON output and expected
// ("" means empty / absent) and the verdict.
type scoreCase struct {
	name     string
	output   string
	expected string
	want     float64           // checked when wantKind is ""
	wantKind evalrun.ErrorKind // the error's kind, when an error is expected
	wantIs   error             // errors.Is target, when set
}

// runCases scores every case with s and checks the verdict.
func runCases(t *testing.T, s evalrun.Scorer, cases []scoreCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Score(context.Background(), input("q1", `"question"`, tc.output, tc.expected))
			checkScore(t, got, err, tc)
		})
	}
}

func checkScore(t *testing.T, got evalrun.Score, err error, tc scoreCase) {
	t.Helper()
	if tc.wantKind != "" {
		if err == nil {
			t.Fatalf("Score = %v (%q), want an error of kind %s", got.Value, got.Reason, tc.wantKind)
		}
		if k := evalrun.KindOf(err); k != tc.wantKind {
			t.Errorf("error kind = %s, want %s (error: %v)", k, tc.wantKind, err)
		}
		if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
			t.Errorf("error %v does not match %v", err, tc.wantIs)
		}
		return
	}
	if err != nil {
		t.Fatalf("Score: unexpected error %v", err)
	}
	if math.IsNaN(got.Value) || got.Value < 0 || got.Value > 1 {
		t.Fatalf("Score = %v, outside [0,1]", got.Value)
	}
	if math.Abs(got.Value-tc.want) > 1e-9 {
		t.Errorf("Score = %v (%q), want %v", got.Value, got.Reason, tc.want)
	}
	if got.Reason == "" {
		t.Errorf("Score has no reason")
	}
}

// input builds a ScoreInput from raw JSON texts; "" is empty / absent.
func input(id, in, output, expected string) evalrun.ScoreInput {
	it := &evalrun.Item{ID: id, Input: json.RawMessage(in)}
	if expected != "" {
		it.Expected = json.RawMessage(expected)
	}
	var out json.RawMessage
	if output != "" {
		out = json.RawMessage(output)
	}
	return evalrun.ScoreInput{Item: it, Output: out}
}

// mustNew builds a scorer from cfg or fails the test.
func mustNew(t *testing.T, cfg scorer.Config, deps scorer.Deps) evalrun.Scorer {
	t.Helper()
	s, err := scorer.New(cfg, deps)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return s
}

// wantConfigError checks that err is a *ConfigError on key, matching
// evalrun.ErrInvalid.
func wantConfigError(t *testing.T, err error, key string) *scorer.ConfigError {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want a config error on %q", key)
	}
	if !errors.Is(err, evalrun.ErrInvalid) {
		t.Errorf("error %v does not match evalrun.ErrInvalid", err)
	}
	var ce *scorer.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *scorer.ConfigError", err, err)
	}
	if ce.Key != key {
		t.Errorf("ConfigError.Key = %q, want %q (error: %v)", ce.Key, key, err)
	}
	return ce
}

func bptr(b bool) *bool { return &b }
