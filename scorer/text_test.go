package scorer_test

import (
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/scorer"
)

func TestExactMatch(t *testing.T) {
	t.Parallel()
	exact := mustNew(t, scorer.Config{Kind: "exact_match"}, scorer.Deps{})
	runCases(t, exact, []scoreCase{
		{name: "equal strings", output: `"Paris"`, expected: `"Paris"`, want: 1},
		{name: "different strings", output: `"Paris."`, expected: `"Paris"`, want: 0},
		{name: "case matters by default", output: `"paris"`, expected: `"Paris"`, want: 0},
		{name: "space matters by default", output: `" Paris\n"`, expected: `"Paris"`, want: 0},
		{name: "escapes decoded", output: `"caf\u00e9"`, expected: `"café"`, want: 1},
		{name: "unicode", output: `"日本語 ✓"`, expected: `"日本語 ✓"`, want: 1},
		{name: "string vs number as text", output: `"42"`, expected: `42`, want: 1},
		{name: "objects canonical", output: `{"b":1, "a":[1,2]}`, expected: `{"a":[1,2],"b":1.0}`, want: 1},
		{name: "objects differ", output: `{"a":1}`, expected: `{"a":2}`, want: 0},
		{name: "non-string output vs string", output: `true`, expected: `"true"`, want: 1},
		{name: "empty output vs text", output: ``, expected: `"x"`, want: 0},
		{name: "empty output vs empty string", output: ``, expected: `""`, want: 1},
		{name: "no expected", output: `"x"`, wantKind: evalrun.ErrorPermanent, wantIs: scorer.ErrNoExpected},
		{name: "null expected", output: `"x"`, expected: `null`, wantKind: evalrun.ErrorPermanent, wantIs: scorer.ErrNoExpected},
	})
	loose := mustNew(t, scorer.Config{Kind: "exact_match", CaseSensitive: bptr(false), Trim: true}, scorer.Deps{})
	runCases(t, loose, []scoreCase{
		{name: "case and space ignored", output: `" PARIS\n"`, expected: `"paris"`, want: 1},
		{name: "unicode folding", output: `"ÉTÉ"`, expected: `"été"`, want: 1},
		{name: "still different", output: `"Lyon"`, expected: `"paris"`, want: 0},
	})
}

func TestExactMatchMissingExpectedMessage(t *testing.T) {
	t.Parallel()
	s, err := scorer.NewExactMatch(scorer.ExactMatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Score(t.Context(), input("q3", `"hi"`, `"x"`, ""))
	if want := "exact_match needs expected_output; item q3 has none"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestContains(t *testing.T) {
	t.Parallel()
	anyOf := mustNew(t, scorer.Config{Kind: "contains", Values: scorer.StringList{"refund", "credit"}}, scorer.Deps{})
	runCases(t, anyOf, []scoreCase{
		{name: "one present", output: `"We will refund you."`, want: 1},
		{name: "none present", output: `"Sorry."`, want: 0},
		{name: "case matters", output: `"REFUND"`, want: 0},
		{name: "empty output", output: ``, want: 0},
		{name: "non-string output as JSON", output: `{"action":"refund"}`, want: 1},
	})
	allOf := mustNew(t, scorer.Config{Kind: "contains", Values: scorer.StringList{"Refund", "Crédit"}, Mode: "all", CaseSensitive: bptr(false)}, scorer.Deps{})
	runCases(t, allOf, []scoreCase{
		{name: "all present any case", output: `"refund as CRÉDIT"`, want: 1},
		{name: "one missing", output: `"refund only"`, want: 0},
	})
	fromExpected := mustNew(t, scorer.Config{Kind: "contains"}, scorer.Deps{})
	runCases(t, fromExpected, []scoreCase{
		{name: "expected text present", output: `"the answer is Paris."`, expected: `"Paris"`, want: 1},
		{name: "expected text absent", output: `"Lyon"`, expected: `"Paris"`, want: 0},
		{name: "no expected", output: `"Lyon"`, wantKind: evalrun.ErrorPermanent, wantIs: scorer.ErrNoExpected},
	})
}

func TestRegex(t *testing.T) {
	t.Parallel()
	s := mustNew(t, scorer.Config{Kind: "regex", Pattern: `^\d{3}-\d{4}$`}, scorer.Deps{})
	runCases(t, s, []scoreCase{
		{name: "match", output: `"555-1234"`, want: 1},
		{name: "no match", output: `"555-12345"`, want: 0},
		{name: "empty output", output: ``, want: 0},
		{name: "number output as text", output: `5551234`, want: 0},
	})
	u := mustNew(t, scorer.Config{Kind: "regex", Pattern: `(?i)^ÉTÉ\s`}, scorer.Deps{})
	runCases(t, u, []scoreCase{
		{name: "unicode case-insensitive", output: `"été chaud"`, want: 1},
		{name: "object output", output: `{"a":1}`, want: 0},
	})
}

func TestLevenshtein(t *testing.T) {
	t.Parallel()
	s := mustNew(t, scorer.Config{Kind: "levenshtein"}, scorer.Deps{})
	runCases(t, s, []scoreCase{
		{name: "equal", output: `"kitten"`, expected: `"kitten"`, want: 1},
		{name: "three edits", output: `"kitten"`, expected: `"sitting"`, want: 1 - 3.0/7},
		{name: "runes not bytes", output: `"héllo"`, expected: `"hello"`, want: 1 - 1.0/5},
		{name: "completely different", output: `"abc"`, expected: `"xyz"`, want: 0},
		{name: "both empty", output: `""`, expected: `""`, want: 1},
		{name: "empty output", output: ``, expected: `"abcd"`, want: 0},
		{name: "case matters", output: `"ABC"`, expected: `"abc"`, want: 0},
		{name: "no expected", output: `"x"`, wantKind: evalrun.ErrorPermanent, wantIs: scorer.ErrNoExpected},
	})
	loose := mustNew(t, scorer.Config{Kind: "levenshtein", CaseSensitive: bptr(false), Trim: true}, scorer.Deps{})
	runCases(t, loose, []scoreCase{
		{name: "case and space ignored", output: `"  ABC \n"`, expected: `"abc"`, want: 1},
	})
}

func TestExactMatchPlainStringsDoNotAllocate(t *testing.T) {
	s, err := scorer.NewExactMatch(scorer.ExactMatchOptions{IgnoreCase: true, Trim: true})
	if err != nil {
		t.Fatal(err)
	}
	in := input("q1", `"q"`, `" The capital is Paris "`, `"the capital is paris"`)
	var got evalrun.Score
	allocs := testing.AllocsPerRun(100, func() {
		got, err = s.Score(t.Context(), in)
	})
	if err != nil || got.Value != 1 {
		t.Fatalf("Score = %v, %v; want 1", got.Value, err)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per Score of two plain strings, want 0", allocs)
	}
}

func BenchmarkExactMatch(b *testing.B) {
	s, err := scorer.NewExactMatch(scorer.ExactMatchOptions{})
	if err != nil {
		b.Fatal(err)
	}
	in := input("q1", `"q"`, `"The capital of France is Paris."`, `"The capital of France is Paris."`)
	for b.Loop() {
		if _, err := s.Score(b.Context(), in); err != nil {
			b.Fatal(err)
		}
	}
}
