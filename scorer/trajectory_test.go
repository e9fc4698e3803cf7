package scorer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/scorer"
)

// calls builds a trajectory from "name args" pairs: calls("a", `{"x":1}`, "b", `{}`).
func calls(nameArgs ...string) *evalrun.Trajectory {
	tr := &evalrun.Trajectory{Calls: []evalrun.ToolCall{}}
	for i := 0; i+1 < len(nameArgs); i += 2 {
		tr.Calls = append(tr.Calls, evalrun.ToolCall{Name: nameArgs[i], Args: json.RawMessage(nameArgs[i+1])})
	}
	return tr
}

// expect builds an expected trajectory from "name args" pairs; args "" is
// absent (any arguments). expect() is the empty, non-nil list.
func expect(nameArgs ...string) []evalrun.ExpectedCall {
	want := []evalrun.ExpectedCall{}
	for i := 0; i+1 < len(nameArgs); i += 2 {
		w := evalrun.ExpectedCall{Name: nameArgs[i]}
		if nameArgs[i+1] != "" {
			w.Args = json.RawMessage(nameArgs[i+1])
		}
		want = append(want, w)
	}
	return want
}

func agentInput(tr *evalrun.Trajectory, want []evalrun.ExpectedCall) evalrun.ScoreInput {
	return evalrun.ScoreInput{
		Item:       &evalrun.Item{ID: "q1", Input: evalrun.String("q"), ExpectedTrajectory: want},
		Output:     evalrun.String("answer"),
		Trajectory: tr,
	}
}

func TestTrajectoryModes(t *testing.T) {
	paris, rome := `{"city":"Paris"}`, `{"city":"Rome"}`
	type want struct{ exact, inOrder, anyOrder, subset, f1 float64 }
	cases := []struct {
		name  string
		calls *evalrun.Trajectory
		want  []evalrun.ExpectedCall
		score want
	}{
		{"same calls same order", calls("weather", paris, "book", `{}`), expect("weather", paris, "book", ""),
			want{1, 1, 1, 1, 1}},
		{"extra call between", calls("weather", paris, "search", `{"q":"x"}`, "book", `{}`), expect("weather", paris, "book", ""),
			want{0, 1, 1, 0, 0.8}},
		{"extra call at the end", calls("weather", paris, "book", `{}`, "log", `{}`), expect("weather", paris, "book", ""),
			want{0, 1, 1, 0, 0.8}},
		{"swapped order", calls("book", `{}`, "weather", paris), expect("weather", paris, "book", ""),
			want{0, 0, 1, 1, 1}},
		{"missing call", calls("weather", paris), expect("weather", paris, "book", ""),
			want{0, 0, 0, 1, 2.0 / 3}},
		{"args subset matches", calls("weather", `{"city":"Paris","units":"C"}`), expect("weather", paris),
			want{1, 1, 1, 1, 1}},
		{"args subset mismatch", calls("weather", rome), expect("weather", paris),
			want{0, 0, 0, 0, 0}},
		{"expected key absent from the call", calls("weather", `{}`), expect("weather", paris),
			want{0, 0, 0, 0, 0}},
		{"numbers compare as values", calls("add", `{"a":1.0,"b":2}`), expect("add", `{"a":1}`),
			want{1, 1, 1, 1, 1}},
		{"repeated tool expected twice, called twice", calls("weather", paris, "weather", rome), expect("weather", "", "weather", ""),
			want{1, 1, 1, 1, 1}},
		{"repeated tool expected twice, called once", calls("weather", paris), expect("weather", "", "weather", ""),
			want{0, 0, 0, 1, 2.0 / 3}},
		{"repeated tool expected once, called twice", calls("weather", paris, "weather", paris), expect("weather", paris),
			want{0, 1, 1, 0, 2.0 / 3}},
		{"repeated calls in reverse order", calls("weather", rome, "weather", paris), expect("weather", paris, "weather", rome),
			want{0, 0, 1, 1, 1}},
		// A greedy matching would give the first expected call (any args)
		// the only call with x=1 and leave the second unmatched.
		{"greedy matching is wrong", calls("a", `{"x":1}`, "a", `{"x":2}`), expect("a", "", "a", `{"x":1}`),
			want{0, 0, 1, 1, 1}},
		{"greedy matching is wrong, in order", calls("a", `{"x":2}`, "a", `{"x":1}`), expect("a", "", "a", `{"x":1}`),
			want{1, 1, 1, 1, 1}},
		{"empty expected, no call", calls(), expect(),
			want{1, 1, 1, 1, 1}},
		{"empty expected, a call", calls("delete", `{}`), expect(),
			want{0, 1, 1, 0, 0}},
		{"no call, calls expected", calls(), expect("weather", paris),
			want{0, 0, 0, 1, 0}},
		{"other tool", calls("search", paris), expect("weather", paris),
			want{0, 0, 0, 0, 0}},
	}
	modes := []scorer.Mode{scorer.ModeExact, scorer.ModeInOrder, scorer.ModeAnyOrder, scorer.ModeSubset, scorer.ModeF1}
	for _, tc := range cases {
		wants := []float64{tc.score.exact, tc.score.inOrder, tc.score.anyOrder, tc.score.subset, tc.score.f1}
		for k, mode := range modes {
			t.Run(tc.name+"/"+string(mode), func(t *testing.T) {
				s, err := scorer.NewTrajectory(scorer.TrajectoryOptions{Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.Score(context.Background(), agentInput(tc.calls, tc.want))
				if err != nil {
					t.Fatalf("Score: %v", err)
				}
				if math.Abs(got.Value-wants[k]) > 1e-9 {
					t.Errorf("Score = %v, want %v (reason %q)", got.Value, wants[k], got.Reason)
				}
				if !strings.Contains(got.Reason, "precision ") || !strings.Contains(got.Reason, "recall ") {
					t.Errorf("reason %q gives no precision and recall", got.Reason)
				}
			})
		}
	}
}

func TestTrajectoryDefaultModeIsInOrder(t *testing.T) {
	s := mustNew(t, scorer.Config{Kind: scorer.KindTrajectory}, scorer.Deps{})
	in := agentInput(calls("a", `{}`, "x", `{}`, "b", `{}`), expect("a", "", "b", ""))
	if got, err := s.Score(context.Background(), in); err != nil || got.Value != 1 {
		t.Errorf("in order with a call between: %v %v, want 1", got, err)
	}
	in = agentInput(calls("b", `{}`, "a", `{}`), expect("a", "", "b", ""))
	if got, err := s.Score(context.Background(), in); err != nil || got.Value != 0 {
		t.Errorf("out of order: %v %v, want 0", got, err)
	}
}

func TestTrajectoryReasons(t *testing.T) {
	paris := `{"city":"Paris"}`
	cases := []struct {
		mode  scorer.Mode
		calls *evalrun.Trajectory
		want  []evalrun.ExpectedCall
		parts []string
	}{
		{scorer.ModeSubset, calls("weather", paris, "search", `{"q": "x"}`, "weather", paris), expect("weather", paris, "weather", ""),
			[]string{"precision 0.67 (2/3 calls expected)", "recall 1.00 (2/2 expected calls made)", `extra: search({"q":"x"})`}},
		{scorer.ModeAnyOrder, calls("weather", `{"city":"Rome"}`), expect("weather", paris),
			[]string{"0 of 1 expected calls made", "precision 0.00 (0/1 calls expected)", "recall 0.00 (0/1 expected calls made)",
				`missing: weather({"city":"Paris"})`, `extra: weather({"city":"Rome"})`}},
		{scorer.ModeExact, calls("weather", paris, "book", `{}`), expect("weather", paris),
			[]string{"not exact: 2 calls made, 1 expected; call 2 book({}) is one too many"}},
		{scorer.ModeExact, calls("book", `{}`), expect("weather", paris),
			[]string{`not exact: call 1 is book({}), expected weather({"city":"Paris"})`}},
		{scorer.ModeExact, calls("weather", paris), expect("weather", paris, "book", ""),
			[]string{"expected call 2 book(…) was not made", "missing: book(…)"}},
		{scorer.ModeInOrder, calls("book", `{}`, "weather", paris), expect("weather", paris, "book", ""),
			[]string{"not in order: expected call 2 book(…) not made after call 2 (it matches call 1, too early)",
				"recall 1.00 (2/2 expected calls made)"}},
		{scorer.ModeInOrder, calls(), expect("weather", paris),
			[]string{`expected call 1 weather({"city":"Paris"}) was not made`, "precision 1.00 (no call made)"}},
		{scorer.ModeInOrder, calls("a", `{}`), expect("a", ""),
			[]string{"in order: the expected call was made; precision 1.00 (1/1 calls expected), recall 1.00 (1/1 expected calls made)"}},
		{scorer.ModeInOrder, calls("a", `{}`), expect(),
			[]string{"in order: no call expected; precision 0.00 (0/1 calls expected), recall 1.00 (no call expected); extra: a({})"}},
		{scorer.ModeExact, calls(), expect(),
			[]string{"exact: no call expected, none made"}},
		{scorer.ModeExact, calls("a", `{}`), expect(),
			[]string{"not exact: 1 call made, 0 expected; call 1 a({}) is one too many"}},
		{scorer.ModeExact, calls("a", `{}`), expect("a", "", "b", ""),
			[]string{"not exact: 1 call made, 2 expected; expected call 2 b(…) was not made"}},
		{scorer.ModeF1, calls("a", `{}`), expect(),
			[]string{"F1 0.00", "recall 1.00 (no call expected)", "extra: a({})"}},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			s, err := scorer.NewTrajectory(scorer.TrajectoryOptions{Mode: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Score(context.Background(), agentInput(tc.calls, tc.want))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.parts {
				if !strings.Contains(got.Reason, p) {
					t.Errorf("reason %q lacks %q", got.Reason, p)
				}
			}
		})
	}
}

func TestTrajectoryReasonIsBounded(t *testing.T) {
	tr := calls()
	for i := range 1000 {
		tr.Calls = append(tr.Calls, evalrun.ToolCall{Name: strings.Repeat("n", 500),
			Args: json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", 1000)))})
	}
	s, _ := scorer.NewTrajectory(scorer.TrajectoryOptions{Mode: scorer.ModeSubset})
	got, err := s.Score(context.Background(), agentInput(tr, expect("weather", "")))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Reason) > 2000 {
		t.Errorf("reason is %d bytes, want a bounded one", len(got.Reason))
	}
	if !strings.Contains(got.Reason, "and 995 more") {
		t.Errorf("reason %q does not say how many calls it left out", got.Reason)
	}
}

func TestTrajectoryErrors(t *testing.T) {
	s, _ := scorer.NewTrajectory(scorer.TrajectoryOptions{})
	_, err := s.Score(context.Background(), agentInput(nil, expect("a", "")))
	if !errors.Is(err, scorer.ErrNoTrajectory) || evalrun.KindOf(err) != evalrun.ErrorPermanent {
		t.Errorf("no trajectory: error %v, want a permanent ErrNoTrajectory", err)
	}
	if err != nil && !strings.Contains(err.Error(), "trajectory:") {
		t.Errorf("error %q does not say what to do", err)
	}
	_, err = s.Score(context.Background(), agentInput(calls("a", `{}`), nil))
	if !errors.Is(err, scorer.ErrNoExpectedTrajectory) || evalrun.KindOf(err) != evalrun.ErrorPermanent {
		t.Errorf("no expected: error %v, want a permanent ErrNoExpectedTrajectory", err)
	}
	if err != nil && !strings.Contains(err.Error(), "item q1") {
		t.Errorf("error %q does not name the item", err)
	}
}

func TestTrajectoryMatchingIsBounded(t *testing.T) {
	// 2,000 calls of one tool against 1,000 expected calls of it: 2M
	// pairs, past MaxTrajectoryPairs.
	tr := calls()
	for range 2000 {
		tr.Calls = append(tr.Calls, evalrun.ToolCall{Name: "a", Args: json.RawMessage(`{}`)})
	}
	want := expect()
	for range 1000 {
		want = append(want, evalrun.ExpectedCall{Name: "a"})
	}
	s, _ := scorer.NewTrajectory(scorer.TrajectoryOptions{Mode: scorer.ModeF1})
	_, err := s.Score(context.Background(), agentInput(tr, want))
	if err == nil || !strings.Contains(err.Error(), "too large to match") {
		t.Fatalf("error %v, want too large to match", err)
	}
	// At the bound (1,024 × 1,024 pairs) it still matches.
	tr.Calls, want = tr.Calls[:1024], want[:1000]
	want = append(want, want[:24]...)
	got, err := s.Score(context.Background(), agentInput(tr, want))
	if err != nil || got.Value != 1 {
		t.Fatalf("at the bound: %v %v, want 1", got, err)
	}
}

func TestTrajectoryConfig(t *testing.T) {
	var cfg scorer.Config
	if err := yaml.Unmarshal([]byte("{kind: trajectory, mode: any_order, threshold: 1}"), &cfg); err != nil {
		t.Fatal(err)
	}
	s := mustNew(t, cfg, scorer.Deps{})
	got, err := s.Score(context.Background(), agentInput(calls("b", `{}`, "a", `{}`), expect("a", "", "b", "")))
	if err != nil || got.Value != 1 {
		t.Errorf("any_order from config: %v %v", got, err)
	}
	_, err = scorer.New(scorer.Config{Kind: scorer.KindTrajectory, Mode: "all"}, scorer.Deps{})
	ce := wantConfigError(t, err, "mode")
	if !strings.Contains(ce.Error(), "exact, in_order, any_order, subset or f1") {
		t.Errorf("error %q does not list the modes", ce)
	}
	_, err = scorer.New(scorer.Config{Kind: scorer.KindTrajectory, Tool: "x"}, scorer.Deps{})
	wantConfigError(t, err, "tool")
}

// The largest matching agrees with brute force on small random cases.
func TestTrajectoryMatchingIsMaximum(t *testing.T) {
	argsOf := []string{`{}`, `{"x":1}`, `{"x":2}`, `{"x":1,"y":1}`}
	wantOf := []string{"", `{"x":1}`, `{"y":1}`, `{"x":2}`}
	s, _ := scorer.NewTrajectory(scorer.TrajectoryOptions{Mode: scorer.ModeF1})
	seed := uint32(1)
	rnd := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>16) % n }
	for iter := range 3000 {
		tr, want := calls(), expect()
		for range rnd(6) {
			tr.Calls = append(tr.Calls, evalrun.ToolCall{Name: "ab"[rnd(2):][:1], Args: json.RawMessage(argsOf[rnd(4)])})
		}
		for range rnd(6) {
			w := evalrun.ExpectedCall{Name: "ab"[rnd(2):][:1]}
			if a := wantOf[rnd(4)]; a != "" {
				w.Args = json.RawMessage(a)
			}
			want = append(want, w)
		}
		best := bruteMatch(tr.Calls, want, 0, make([]bool, len(tr.Calls)))
		got, err := s.Score(context.Background(), agentInput(tr, want))
		if err != nil {
			t.Fatal(err)
		}
		wantF1 := 1.0
		if n := len(tr.Calls) + len(want); n > 0 {
			wantF1 = 2 * float64(best) / float64(n)
		}
		if math.Abs(got.Value-wantF1) > 1e-9 {
			t.Fatalf("case %d: calls %v want %v: F1 %v, brute force %v (%s)", iter, tr.Calls, want, got.Value, wantF1, got.Reason)
		}
	}
}

// bruteMatch returns the largest matching of want[i:] to the unused calls.
func bruteMatch(calls []evalrun.ToolCall, want []evalrun.ExpectedCall, i int, used []bool) int {
	if i == len(want) {
		return 0
	}
	best := bruteMatch(calls, want, i+1, used) // want[i] unmatched
	for j, c := range calls {
		if used[j] || c.Name != want[i].Name || !evalrun.ArgsContain(c.Args, want[i].Args) {
			continue
		}
		used[j] = true
		best = max(best, 1+bruteMatch(calls, want, i+1, used))
		used[j] = false
	}
	return best
}

func BenchmarkTrajectoryMatchAtBound(b *testing.B) {
	tr := calls()
	want := expect()
	for i := range 1024 {
		tr.Calls = append(tr.Calls, evalrun.ToolCall{Name: "a", Args: json.RawMessage(fmt.Sprintf(`{"i":%d,"city":"Paris"}`, i))})
		want = append(want, evalrun.ExpectedCall{Name: "a", Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, 1023-i))})
	}
	s, _ := scorer.NewTrajectory(scorer.TrajectoryOptions{Mode: scorer.ModeF1})
	in := agentInput(tr, want)
	b.ReportAllocs()
	for b.Loop() {
		if got, err := s.Score(context.Background(), in); err != nil || got.Value != 1 {
			b.Fatal(got, err)
		}
	}
}

func TestTrajectoryArgumentsThatAreNotAnObjectAreDecodedOnce(t *testing.T) {
	// A call whose arguments were not JSON is recorded with their text as
	// a JSON string. Decoding such arguments once per (call, expected
	// call) pair took 50 s for nine calls of 1 MiB against 1,000 expected
	// calls, and hours at MaxTrajectoryPairs. The work shows in the
	// allocations: nine calls must cost less than twice what one does
	// (the matching's edges grow with the pairs; decoding per pair made
	// it five times).
	big, _ := json.Marshal(strings.Repeat("x", 64<<10))
	want := expect()
	for range 500 {
		want = append(want, evalrun.ExpectedCall{Name: "a", Args: json.RawMessage(`{}`)},
			evalrun.ExpectedCall{Name: "a", Args: json.RawMessage(`{"x":1}`)})
	}
	s, _ := scorer.NewTrajectory(scorer.TrajectoryOptions{Mode: scorer.ModeF1})
	score := func(n int) (evalrun.Score, float64) {
		tr := calls()
		for range n {
			tr.Calls = append(tr.Calls, evalrun.ToolCall{Name: "a", Args: big})
		}
		in := agentInput(tr, want)
		var got evalrun.Score
		allocs := testing.AllocsPerRun(1, func() {
			var err error
			if got, err = s.Score(context.Background(), in); err != nil {
				t.Fatal(err)
			}
		})
		return got, allocs
	}
	_, one := score(1)
	got, nine := score(9)
	// {} is contained in anything (as ArgsContain says), {"x":1} in no
	// string: the nine calls are matched by expected calls with {}.
	if want := 2 * 9.0 / float64(9+1000); math.Abs(got.Value-want) > 1e-9 {
		t.Errorf("F1 %v, want %v (%s)", got.Value, want, got.Reason)
	}
	if nine > 2*one {
		t.Errorf("%v allocations for 9 calls, %v for 1 (1,000 expected calls): the arguments are decoded per pair", nine, one)
	}
}

func TestTrajectoryMatchingBoundCountsExpectedArguments(t *testing.T) {
	// 1,000 expected calls of 1,000 arguments each against 1,000 calls
	// with the same arguments: 1M pairs, but 1G argument comparisons
	// (minutes). The bound counts a pair once per expected argument.
	var b strings.Builder
	b.WriteString("{")
	for k := range 1000 {
		if k > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":%d`, k, k)
	}
	b.WriteString("}")
	args := json.RawMessage(b.String())
	tr := calls()
	want := expect()
	for range 1000 {
		tr.Calls = append(tr.Calls, evalrun.ToolCall{Name: "a", Args: args})
		want = append(want, evalrun.ExpectedCall{Name: "a", Args: args})
	}
	s, _ := scorer.NewTrajectory(scorer.TrajectoryOptions{Mode: scorer.ModeF1})
	_, err := s.Score(context.Background(), agentInput(tr, want))
	if err == nil || !strings.Contains(err.Error(), "too large to match") {
		t.Fatalf("error %v, want too large to match", err)
	}
	// A thousand times fewer pairs of the same arguments still match.
	got, err := s.Score(context.Background(), agentInput(&evalrun.Trajectory{Calls: tr.Calls[:30]}, want[:30]))
	if err != nil || got.Value != 1 {
		t.Fatalf("at 900 pairs of 1,000 arguments: %v %v, want 1", got, err)
	}
}

// BenchmarkTrajectoryTypical scores the trajectory of a typical agent item
// (docs/benchmarks.md, "Agents at scale"): three weather lookups made in
// one turn and a conversion, against the same four expected calls with
// fewer arguments, in in_order mode. In a 10,000-item run this scorer was
// the costliest part of scoring.
func BenchmarkTrajectoryTypical(b *testing.B) {
	tr := calls("get_weather", `{"city":"Paris"}`, "get_weather", `{"city":"Oslo"}`, "get_weather", `{"city":"New York"}`,
		"convert_currency", `{"amount":50,"from":"USD","to":"NOK"}`)
	want := expect("get_weather", `{"city":"Paris"}`, "get_weather", `{"city":"Oslo"}`, "get_weather", `{"city":"New York"}`,
		"convert_currency", `{"from":"USD","to":"NOK"}`)
	s, _ := scorer.NewTrajectory(scorer.TrajectoryOptions{Mode: scorer.ModeInOrder})
	in := agentInput(tr, want)
	b.ReportAllocs()
	for b.Loop() {
		if got, err := s.Score(context.Background(), in); err != nil || got.Value != 1 {
			b.Fatal(got, err)
		}
	}
}
