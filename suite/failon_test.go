package suite_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/suite"
)

// FailOnOf reads back the suite's fail_on from a stored run config, one
// condition or a list, without building the suite.
func TestFailOnOf(t *testing.T) {
	const base = "name: s\ndataset: {file: data.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n"
	for _, tc := range []struct {
		failOn string
		want   []string
	}{
		{"", nil},
		{`fail_on: "pass_rate(exact_match) < 0.9"` + "\n", []string{"pass_rate(exact_match) < 0.9"}},
		{"fail_on:\n  - failed > 0\n  - \"mean(exact_match) <= 50%\"\n", []string{"failed > 0", "mean(exact_match) <= 50%"}},
	} {
		s, err := parse(t, base+tc.failOn)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := s.RunConfig()
		if err != nil {
			t.Fatal(err)
		}
		conds, err := suite.FailOnOf(raw)
		if err != nil {
			t.Fatalf("%q: %v", tc.failOn, err)
		}
		var got []string
		for _, c := range conds {
			got = append(got, c.Source)
		}
		if len(got) != len(tc.want) || len(got) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1]) {
			t.Errorf("%q: conditions %q, want %q", tc.failOn, got, tc.want)
		}
	}
	for _, raw := range []string{`{}`, `not json`, `{"evalrun_suite":1,"suite":{"fail_on":3}}`, `{"evalrun_suite":1,"suite":{"fail_on":"pass_rate( < 1"}}`} {
		if _, err := suite.FailOnOf(json.RawMessage(raw)); !errors.Is(err, evalrun.ErrInvalid) {
			t.Errorf("FailOnOf(%s): %v, want ErrInvalid", raw, err)
		}
	}
}
