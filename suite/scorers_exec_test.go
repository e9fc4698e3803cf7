package suite_test

import (
	"regexp"
	"testing"
)

// TestParseExecHTTPScorerProblems: bad exec and http scorer config is
// reported at its file:line before anything runs.
func TestParseExecHTTPScorerProblems(t *testing.T) {
	src := `dataset: {file: data.jsonl}
target: {kind: echo}
scorers:
  - kind: exec
    name: nocmd
  - kind: exec
    name: yes
    command: [sh, score.sh]
    persistent: yes
  - kind: exec
    name: str
    command: python3 score.py
  - kind: exec
    name: missing
    command: [./nope.py]
  - kind: exec
    name: half
    command: [sh]
    processes: 1.5
    persistent: true
  - kind: http
    name: nourl
    method: POST
  - kind: http
    name: slow
    url: http://127.0.0.1:1/grade
    timeout: 0s
`
	_, err := parse(t, src)
	got := problems(t, err)
	for i := range got { // the suite's directory is a temporary one
		got[i] = regexp.MustCompile(`stat /\S+/nope.py`).ReplaceAllString(got[i], "stat DIR/nope.py")
	}
	compareLines(t, got, []string{
		`suite.yaml:4:5: scorers[0].command: required: a list [program, args...] (a list: the program and its arguments, e.g. command: [python3, score.py])`,
		`suite.yaml:9:17: scorers[1].persistent: must be true or false, got "yes"`,
		`suite.yaml:12:14: scorers[2].command: cannot unmarshal !!str ` + "`python3...`" + ` into []string (a list: the program and its arguments, e.g. command: [python3, score.py])`,
		`suite.yaml:15:14: scorers[3].command: stat ` + "DIR" + `/nope.py: no such file or directory (a list: the program and its arguments, e.g. command: [python3, score.py])`,
		`suite.yaml:19:16: scorers[4].processes: must be a whole number of processes, 1 to 64`,
		`suite.yaml:21:5: scorers[5].url: required`,
		`suite.yaml:27:14: scorers[6].timeout: 0s is outside (0, 24h0m0s]`,
	})
}
