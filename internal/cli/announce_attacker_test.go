package cli

import (
	"strings"
	"testing"
)

// TestAnnounceLinesAreOneLine: the lines a run and an experiment print
// when they start hold the suite's name and its targets' names, from a
// file a pull request may bring. Terminal escapes (clear the screen, set
// the window title) and newlines (a forged line in a CI log) in them are
// shown inert.
func TestAnnounceLinesAreOneLine(t *testing.T) {
	b := setup(t)
	b.write("d.jsonl", data3)
	evil := `a\e[2J\e]0;pwned\a\nFAKE LINE\rback\u009b31m`
	plain := b.write("plain.yaml", "name: \""+evil+"\"\ndataset: {name: d, file: d.jsonl}\n"+
		"target: {kind: echo, name: \"t "+evil+"\"}\nscorers: [exact_match]\n")
	exp := b.write("exp.yaml", "name: \""+evil+"\"\ndataset: {name: d, file: d.jsonl}\n"+
		"target: {kind: echo}\nscorers: [exact_match]\n"+
		"variants:\n  - name: a\n  - name: b\n    target: {name: \"t "+evil+"\"}\n")
	for _, suite := range []string{plain, exp} {
		code, stdout, stderr := b.run("run", suite)
		if code != 0 {
			t.Fatalf("%s: exit %d:\n%s", suite, code, stderr)
		}
		stderr += stdout
		if strings.ContainsAny(stderr, "\x1b\a\r\u009b") {
			t.Errorf("%s: the output carries a terminal control character: %q", suite, stderr)
		}
		for _, line := range strings.Split(stderr, "\n") {
			if strings.HasPrefix(line, "FAKE LINE") {
				t.Errorf("%s: a newline from the suite forged a line: %q", suite, stderr)
			}
		}
	}
}
