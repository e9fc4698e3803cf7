package suite_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentSuiteParses(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\necho '{}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := parse(t, `
dataset: {file: data.jsonl}
target: {kind: exec, command: [`+agent+`], output: answer, trajectory: calls}
scorers:
  - {kind: tool_called, tool: get_weather, args: {city: Paris}, count: 1}
  - {kind: tool_called, name: no-delete, tool: delete_file, never: true}
  - {kind: trajectory, name: any-order, mode: any_order, threshold: 1}
  - trajectory
  - {kind: expr, name: short, expression: "len(trajectory) <= 3 && steps < 10"}
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.ScorerNames(), ","); got != "tool_called,no-delete,any-order,trajectory,short" {
		t.Fatalf("ScorerNames = %s", got)
	}
}

func TestAgentSuiteProblems(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"tool missing", `
dataset: {file: data.jsonl}
target: {kind: echo}
scorers:
  - {kind: tool_called, args: {city: Paris}}
`, []string{"suite.yaml:5:5: scorers[0].tool: required: the name of the tool to look for (the name of a tool the agent may call, e.g. tool: get_weather)"}},
		{"count negative, never with count, count not whole", `
dataset: {file: data.jsonl}
target: {kind: echo}
scorers:
  - {kind: tool_called, tool: a, count: -1}
  - {kind: tool_called, name: b, tool: a, count: 1, never: true}
  - {kind: tool_called, name: c, tool: a, count: 1.5}
`, []string{
			"suite.yaml:5:41: scorers[0].count: -1 is negative; want a whole number of calls, 0 or more (the exact number of matching calls, e.g. count: 1)",
			"suite.yaml:6:60: scorers[1].never: conflicts with count; never: true is count: 0, give one of them",
			"suite.yaml:7:50: scorers[2].count: must be a whole number of calls, 0 or more",
		}},
		{"args not a mapping", `
dataset: {file: data.jsonl}
target: {kind: echo}
scorers:
  - {kind: tool_called, tool: a, args: [1, 2]}
`, []string{"suite.yaml:5:40: scorers[0].args: must be a mapping of argument names to values"}},
		{"misspelt keys", `
dataset: {file: data.jsonl}
target: {kind: echo}
scorers:
  - {kind: tool_called, tools: a}
  - {kind: tool_called, name: b, tool: a, arguments: {x: 1}}
  - {kind: trajectory, mdoe: exact}
`, []string{
			`suite.yaml:5:25: scorers[0].tools: unknown key (did you mean "tool"? known keys: kind, name, threshold, tool, args, count, never)`,
			`suite.yaml:6:43: scorers[1].arguments: unknown key (did you mean "args"? known keys: kind, name, threshold, tool, args, count, never)`,
			`suite.yaml:7:24: scorers[2].mdoe: unknown key (did you mean "mode"? known keys: kind, name, threshold, mode)`,
		}},
		{"key of another kind", `
dataset: {file: data.jsonl}
target: {kind: echo}
scorers:
  - {kind: trajectory, tool: a}
`, []string{"scorers[0].tool: not an option of trajectory (its options: mode)"}},
		{"unknown mode", `
dataset: {file: data.jsonl}
target: {kind: echo}
scorers:
  - {kind: trajectory, mode: ordered}
`, []string{`suite.yaml:5:30: scorers[0].mode: unknown mode "ordered"; want exact, in_order, any_order, subset or f1 (in_order, the default, lets other calls come between the expected ones; see docs/suite.md)`}},
		{"expr misuses steps", `
dataset: {file: data.jsonl}
target: {kind: echo}
scorers:
  - {kind: expr, expression: "steps.name == 1"}
`, []string{"suite.yaml:5:30: scorers[0].expression: does not compile"}},
		{"bad http trajectory path", `
dataset: {file: data.jsonl}
target: {kind: http, url: "http://127.0.0.1:1/", trajectory: "calls.#(name==\"x\""}
scorers: [exact_match]
`, []string{`suite.yaml:3:62: target.trajectory: path "calls.#(name==\"x\"" has an unclosed '(' (a gjson path, e.g. result.calls;`}},
		{"bad exec paths", `
dataset: {file: data.jsonl}
target:
  kind: exec
  command: [sh, -c, "echo {}"]
  output: "@nope"
scorers: [exact_match]
`, []string{`suite.yaml:6:11: target.output: path "@nope" uses an unknown modifier @nope`}},
		{"trajectory key on another target kind", `
dataset: {file: data.jsonl}
target: {kind: echo, trajectory: calls}
scorers: [exact_match]
`, []string{"suite.yaml:3:22: target.trajectory: unknown key"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.src)
			if err == nil {
				t.Fatal("parsed, want problems")
			}
			lines := problems(t, err)
			for _, w := range tc.want {
				found := false
				for _, l := range lines {
					if strings.Contains(l, w) {
						found = true
					}
				}
				if !found {
					t.Errorf("problems\n%s\nlack %q", strings.Join(lines, "\n"), w)
				}
			}
		})
	}
}
