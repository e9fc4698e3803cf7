package scorer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/scorer"
)

func toolCalled(t *testing.T, src string) evalrun.Scorer {
	t.Helper()
	var cfg scorer.Config
	if err := yaml.Unmarshal([]byte(src), &cfg); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return mustNew(t, cfg, scorer.Deps{})
}

func TestToolCalled(t *testing.T) {
	paris, rome := `{"city":"Paris","units":"C"}`, `{"city":"Rome"}`
	tr := calls("get_weather", paris, "search", `{"q":"hotels"}`, "get_weather", rome, "get_weather", paris)
	cases := []struct {
		config string
		tr     *evalrun.Trajectory
		want   float64
		reason string
	}{
		{"{kind: tool_called, tool: search}", tr, 1, "search called 1 time; want at least 1"},
		{"{kind: tool_called, tool: book}", tr, 0, "book called 0 times; want at least 1; calls made (4): get_weather("},
		{"{kind: tool_called, tool: get_weather, args: {city: Paris}}", tr, 1,
			`get_weather with args containing {"city":"Paris"} called 2 times; want at least 1 (get_weather called 3 times in all)`},
		{"{kind: tool_called, tool: get_weather, args: {city: Berlin}}", tr, 0,
			`get_weather with args containing {"city":"Berlin"} called 0 times`},
		{"{kind: tool_called, tool: get_weather, args: {city: Paris, units: F}}", tr, 0, "called 0 times"},
		{"{kind: tool_called, tool: get_weather, args: {city: Paris}, count: 2}", tr, 1, "called 2 times; want exactly 2"},
		{"{kind: tool_called, tool: get_weather, args: {city: Paris}, count: 1}", tr, 0, "called 2 times; want exactly 1"},
		{"{kind: tool_called, tool: get_weather, count: 3}", tr, 1, "get_weather called 3 times; want exactly 3"},
		{"{kind: tool_called, tool: book, count: 0}", tr, 1, "book called 0 times; want exactly 0"},
		{"{kind: tool_called, tool: delete, never: true}", tr, 1, "delete called 0 times; want never"},
		{"{kind: tool_called, tool: search, never: true}", tr, 0, "search called 1 time; want never"},
		{"{kind: tool_called, tool: get_weather, args: {city: Berlin}, never: true}", tr, 1, "want never"},
		{"{kind: tool_called, tool: get_weather, args: {city: Rome}, never: true}", tr, 0, "called 1 time; want never"},
		{"{kind: tool_called, tool: search}", calls(), 0, "no tool was called"},
		{"{kind: tool_called, tool: search, never: true}", calls(), 1, "no tool was called"},
		// Numbers compare as values: YAML 2 equals JSON 2.0.
		{"{kind: tool_called, tool: add, args: {a: 2}}", calls("add", `{"a":2.0,"b":3}`), 1, "called 1 time"},
		// A date stays the text written, not a time.
		{"{kind: tool_called, tool: book, args: {date: 2024-01-01, n: ~, ok: true}}",
			calls("book", `{"date":"2024-01-01","n":null,"ok":true}`), 1, `{"date":"2024-01-01","n":null,"ok":true}`},
		// Nested values compare whole.
		{"{kind: tool_called, tool: f, args: {opts: {deep: [1, 2]}}}", calls("f", `{"opts":{"deep":[1,2]}}`), 1, "called 1 time"},
		{"{kind: tool_called, tool: f, args: {opts: {deep: [1]}}}", calls("f", `{"opts":{"deep":[1,2]}}`), 0, "called 0 times"},
	}
	for _, tc := range cases {
		t.Run(tc.config, func(t *testing.T) {
			s := toolCalled(t, tc.config)
			got, err := s.Score(context.Background(), agentInput(tc.tr, nil))
			if err != nil {
				t.Fatal(err)
			}
			if got.Value != tc.want {
				t.Errorf("Score = %v, want %v (%s)", got.Value, tc.want, got.Reason)
			}
			if !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("reason %q lacks %q", got.Reason, tc.reason)
			}
		})
	}
}

func TestToolCalledListsBoundedCalls(t *testing.T) {
	tr := calls()
	for range 50 {
		tr.Calls = append(tr.Calls, calls("search", `{"q":"`+strings.Repeat("x", 500)+`"}`).Calls...)
	}
	got, err := toolCalled(t, "{kind: tool_called, tool: book}").Score(context.Background(), agentInput(tr, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Reason, "calls made (50)") || !strings.Contains(got.Reason, "and 45 more") || len(got.Reason) > 1000 {
		t.Errorf("reason %q (%d bytes): want the count, 5 calls shortened and the rest counted", got.Reason, len(got.Reason))
	}
}

func TestToolCalledWithoutTrajectory(t *testing.T) {
	s := toolCalled(t, "{kind: tool_called, tool: search}")
	_, err := s.Score(context.Background(), input("q1", `"q"`, `"answer"`, ""))
	if !errors.Is(err, scorer.ErrNoTrajectory) || evalrun.KindOf(err) != evalrun.ErrorPermanent {
		t.Fatalf("error %v, want a permanent ErrNoTrajectory", err)
	}
	if !strings.Contains(err.Error(), "recorded none") || !strings.Contains(err.Error(), "trajectory: <JSON path") {
		t.Errorf("error %q does not say what is needed", err)
	}
}

func TestToolCalledConfigErrors(t *testing.T) {
	cases := []struct {
		config, key, msg string
	}{
		{"{kind: tool_called}", "tool", "required"},
		{"{kind: tool_called, tool: '  '}", "tool", "required"},
		{"{kind: tool_called, tool: a, count: -1}", "count", "negative"},
		{"{kind: tool_called, tool: a, count: 1, never: true}", "never", "conflicts with count"},
		{"{kind: tool_called, tool: a, count: 0, never: true}", "never", "conflicts with count"},
		{"{kind: tool_called, tool: a, args: [1, 2]}", "args", "mapping"},
		{"{kind: tool_called, tool: a, args: Paris}", "args", "mapping"},
		{"{kind: tool_called, tool: a, mode: all}", "mode", "not an option of tool_called"},
		{"{kind: tool_called, tool: a, count: 1.5}", "count", "whole number"},
		{"{kind: tool_called, tool: a, count: two}", "count", "whole number"},
		{"{kind: tool_called, tool: a, args: {x: .inf}}", "args", "not a JSON number"},
	}
	for _, tc := range cases {
		t.Run(tc.config, func(t *testing.T) {
			var cfg scorer.Config
			err := yaml.Unmarshal([]byte(tc.config), &cfg)
			if err == nil {
				_, err = scorer.New(cfg, scorer.Deps{})
			}
			ce := wantConfigError(t, err, tc.key)
			if !strings.Contains(ce.Error(), tc.msg) {
				t.Errorf("error %q lacks %q", ce, tc.msg)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	if got := strings.Join(scorer.Keys(scorer.KindToolCalled), ","); got != "kind,name,threshold,tool,args,count,never" {
		t.Errorf("Keys(tool_called) = %s", got)
	}
	if scorer.Keys("nope") != nil {
		t.Errorf("Keys of an unknown kind is not nil")
	}
}
