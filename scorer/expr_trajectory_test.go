package scorer_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/scorer"
)

func TestExprTrajectory(t *testing.T) {
	t.Parallel()
	lat := 12.5
	tr := &evalrun.Trajectory{Steps: 3, Calls: []evalrun.ToolCall{
		{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`), Output: json.RawMessage(`{"temp_c":18}`), Mocked: true},
		{Name: "search", Args: json.RawMessage(`{"q":"hotels"}`), Error: "HTTP 503", LatencyMS: &lat},
	}}
	cases := []struct {
		expression string
		tr         *evalrun.Trajectory
		want       float64
	}{
		{`len(trajectory) <= 3`, tr, 1},
		{`len(trajectory) == 2 && steps == 3`, tr, 1},
		{`all(trajectory, .name != "delete")`, tr, 1},
		{`any(trajectory, .name == "delete")`, tr, 0},
		{`trajectory[0].args.city == "Paris"`, tr, 1},
		{`trajectory[0].output.temp_c == 18`, tr, 1},
		{`trajectory[0].mocked && !trajectory[1].mocked`, tr, 1},
		{`trajectory[1].error == "HTTP 503" && trajectory[0].error == ""`, tr, 1},
		{`trajectory[1].latency_ms == 12.5 && trajectory[0].latency_ms == nil`, tr, 1},
		{`trajectory[1].output == nil`, tr, 1},
		{`count(trajectory, .name == "search") == 1`, tr, 1},
		{`map(trajectory, .name) == ["get_weather", "search"]`, tr, 1},
		{`1 / steps`, tr, 1.0 / 3},
		{`steps <= 2 ? 1 : 0.5`, tr, 0.5},
		// A target that recorded no trajectory: an empty list, 0 steps.
		{`len(trajectory) == 0 && steps == 0`, nil, 1},
		{`all(trajectory, .name != "delete")`, nil, 1},
		// steps alone does not decode the calls, and still sees them.
		{`steps == 3`, tr, 1},
	}
	for _, tc := range cases {
		t.Run(tc.expression, func(t *testing.T) {
			s := mustNew(t, scorer.Config{Kind: "expr", Expression: tc.expression}, scorer.Deps{})
			in := input("q1", `"question"`, `"answer"`, "")
			in.Trajectory = tc.tr
			got, err := s.Score(t.Context(), in)
			checkScore(t, got, err, scoreCase{name: tc.expression, want: tc.want})
		})
	}
}

func TestExprTrajectoryTypesAreChecked(t *testing.T) {
	t.Parallel()
	// The checker knows steps is an int and trajectory a list: misuse is
	// a config error before anything runs.
	for _, expression := range []string{`steps.name == "x"`, `trajectory.name == "x"`, `steps contains "x"`} {
		_, err := scorer.New(scorer.Config{Kind: "expr", Expression: expression}, scorer.Deps{})
		ce := wantConfigError(t, err, "expression")
		if !strings.Contains(ce.Error(), "does not compile") {
			t.Errorf("%s: error %q", expression, ce)
		}
	}
	// Expressions written before trajectories existed still compile.
	for _, expression := range []string{`len(output) < 10`, `output == expected`, `metadata.lang == "fr"`,
		`fromJSON(output).ok`, `output.n / 10`, `input == "q" ? 1 : 0`, `metadata.trajectory == nil`} {
		if _, err := scorer.New(scorer.Config{Kind: "expr", Expression: expression}, scorer.Deps{}); err != nil {
			t.Errorf("%s: %v", expression, err)
		}
	}
}
