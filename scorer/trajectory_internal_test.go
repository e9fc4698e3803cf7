package scorer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// The prepared comparison the trajectory scorer uses for speed agrees with
// evalrun.ArgsContain, the one rule, on random arguments of every shape.
func TestPreparedArgsAgreeWithArgsContain(t *testing.T) {
	values := []string{`1`, `1.0`, `1e0`, `2`, `"1"`, `"a"`, `"A"`, `"\u0061"`, `null`, `true`, `"true"`,
		`[1,2]`, `[1.0, 2]`, `{"b":1,"a":2}`, `{"a":2,"b":1.0}`, `""`, `{}`, `[]`}
	wholes := []string{``, `null`, `{}`, `[]`, `"x"`, `1`, `{"a":`, `"{\"a\":1}"`}
	seed := uint32(7)
	rnd := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>16) % n }
	object := func() string {
		if rnd(6) == 0 {
			return wholes[rnd(len(wholes))]
		}
		var parts []string
		for _, k := range []string{"a", "b", "c"} {
			if rnd(2) == 0 {
				parts = append(parts, `"`+k+`": `+values[rnd(len(values))])
			}
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	for range 20000 {
		args, want := json.RawMessage(object()), json.RawMessage(object())
		if rnd(3) == 0 { // often the same keys on both sides, to reach the value comparison
			want = args
			if rnd(2) == 0 {
				want = json.RawMessage(strings.Replace(string(args), "1", "1.0", 1))
			}
		}
		got := prepareArgs(want).containedIn(prepareArgs(args))
		if exp := evalrun.ArgsContain(args, want); got != exp {
			t.Fatalf("args %s want %s: prepared %v, ArgsContain %v", args, want, got, exp)
		}
	}
}

func TestArgTextIsText(t *testing.T) {
	// argText skips decoding strings without escapes; every value must
	// still read as evalrun.Text reads it.
	for _, v := range []string{`"Paris"`, `""`, `"New York"`, `"a\"b"`, `"\u00e9t\u00e9"`, `"été"`, "\"\xff\"",
		`"tab\there"`, `12`, `1.0`, `{"a": 1}`, `[1, "x"]`, `null`, `true`} {
		if got, want := argText(json.RawMessage(v)), evalrun.Text(json.RawMessage(v)); got != want {
			t.Errorf("argText(%s) = %q, want %q (evalrun.Text)", v, got, want)
		}
	}
}
