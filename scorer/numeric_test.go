package scorer_test

import (
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/scorer"
)

func TestNumeric(t *testing.T) {
	t.Parallel()
	exact := mustNew(t, scorer.Config{Kind: "numeric"}, scorer.Deps{})
	runCases(t, exact, []scoreCase{
		{name: "equal numbers", output: `42`, expected: `42.0`, want: 1},
		{name: "numeric strings", output: `" 42 "`, expected: `"4.2e1"`, want: 1},
		{name: "float rounding passes", output: `0.30000000000000004`, expected: `0.3`, want: 1},
		{name: "different", output: `41`, expected: `42`, want: 0},
		{name: "negative", output: `-1.5`, expected: `"-1.5"`, want: 1},
		{name: "text output", output: `"forty-two"`, expected: `42`, wantKind: evalrun.ErrorInvalidOutput},
		{name: "NaN output", output: `"NaN"`, expected: `42`, wantKind: evalrun.ErrorInvalidOutput},
		{name: "Inf output", output: `"+Inf"`, expected: `42`, wantKind: evalrun.ErrorInvalidOutput},
		{name: "empty output", output: ``, expected: `42`, wantKind: evalrun.ErrorInvalidOutput},
		{name: "object output", output: `{"n":42}`, expected: `42`, wantKind: evalrun.ErrorInvalidOutput},
		{name: "bool output", output: `true`, expected: `1`, wantKind: evalrun.ErrorInvalidOutput},
		{name: "expected not a number", output: `1`, expected: `"one"`, wantKind: evalrun.ErrorPermanent},
		{name: "no expected", output: `1`, wantKind: evalrun.ErrorPermanent, wantIs: scorer.ErrNoExpected},
	})
	abs := mustNew(t, scorer.Config{Kind: "numeric", Tolerance: new(0.5)}, scorer.Deps{})
	runCases(t, abs, []scoreCase{
		{name: "within", output: `10.4`, expected: `10`, want: 1},
		{name: "on the edge", output: `9.5`, expected: `10`, want: 1},
		{name: "outside", output: `10.6`, expected: `10`, want: 0},
	})
	rel := mustNew(t, scorer.Config{Kind: "numeric", Tolerance: new(0.01), Relative: true}, scorer.Deps{})
	runCases(t, rel, []scoreCase{
		{name: "within 1%", output: `1005`, expected: `1000`, want: 1},
		{name: "outside 1%", output: `1011`, expected: `1000`, want: 0},
		{name: "zero expected is exact", output: `0.001`, expected: `0`, want: 0},
	})
}

func TestExpr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expression string
		scoreCase
	}{
		{`len(output) < 10`, scoreCase{name: "bool true", output: `"short"`, want: 1}},
		{`len(output) < 3`, scoreCase{name: "bool false", output: `"short"`, want: 0}},
		{`output == expected`, scoreCase{name: "strings are Go strings", output: `"a"`, expected: `"a"`, want: 1}},
		{`output.n / 10`, scoreCase{name: "number result", output: `{"n": 7}`, want: 0.7}},
		{`input == "question" ? 1 : 0`, scoreCase{name: "input variable", output: `"x"`, want: 1}},
		{`expected == nil`, scoreCase{name: "absent expected is nil", output: `"x"`, want: 1}},
		{`metadata.lang == "fr"`, scoreCase{name: "metadata", output: `"x"`, want: 1}},
		{`fromJSON(output).ok`, scoreCase{name: "JSON text via fromJSON", output: `"{\"ok\":true}"`, want: 1}},
		{`output contains "é"`, scoreCase{name: "unicode", output: `"café"`, want: 1}},
		{`output`, scoreCase{name: "string result", output: `"yes"`, wantKind: evalrun.ErrorInvalidOutput}},
		{`2`, scoreCase{name: "above 1", output: `"x"`, wantKind: evalrun.ErrorInvalidOutput}},
		{`-0.5`, scoreCase{name: "below 0", output: `"x"`, wantKind: evalrun.ErrorInvalidOutput}},
		{`output / 1`, scoreCase{name: "NaN", output: `"NaN"`, wantKind: evalrun.ErrorPermanent}},
		{`output.n * 0`, scoreCase{name: "non-string output decoded", output: `{"n": 3}`, want: 0}},
		{`output.a.b`, scoreCase{name: "runtime error", output: `"x"`, wantKind: evalrun.ErrorPermanent}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, scorer.Config{Kind: "expr", Expression: tc.expression}, scorer.Deps{})
			in := input("q1", `"question"`, tc.output, tc.expected)
			in.Item.Metadata = map[string]any{"lang": "fr"}
			got, err := s.Score(t.Context(), in)
			checkScore(t, got, err, tc.scoreCase)
		})
	}
}

func TestExprNaNResult(t *testing.T) {
	t.Parallel()
	s, err := scorer.NewExpr(scorer.ExprOptions{Expression: `output.n / output.d`})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Score(t.Context(), input("q1", `1`, `{"n": 0, "d": 0}`, ""))
	if k := evalrun.KindOf(err); k != evalrun.ErrorInvalidOutput {
		t.Fatalf("0/0: error %v of kind %q, want invalid_output", err, k)
	}
}
