package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// hostileMention is text from a pull request (a suite, a dataset, a
// target's output) that would ping people, link away or render math in a
// PR comment if the Markdown reports passed it on as written.
const hostileMention = "@octocat cc @org/team mail foo@bar.example see https://evil.example/x " +
	"HTTP://evil.example/y ftp://evil.example/z www.evil.example WWW.evil.example $$\\huge{PASSED}$$ " +
	"\x1b[2J\x1b]8;;http:evil\x07\u009b31m"

// live finds what GitHub would turn into a mention, an autolink or math in
// rendered Markdown: an @ directly followed by a name character, a URL
// scheme's "://", "www.", or a "$"; and a control character, a terminal
// escape when the file is printed in a CI log.
var live = regexp.MustCompile(`(?i)@[a-z0-9]|://|www\.|\$|[\x00-\x09\x0b-\x1f\x7f\x{80}-\x{9f}]`)

func checkInert(t *testing.T, what, md string) {
	t.Helper()
	for _, line := range strings.Split(md, "\n") {
		if m := live.FindString(line); m != "" {
			t.Errorf("%s: %q is live in the rendered Markdown: %s", what, m, line)
		}
	}
}

// TestMarkdownNeutralizesMentions: a run's name, item ids, scorer names,
// tags and error messages cannot @mention people, autolink or render math
// in a PR comment.
func TestMarkdownNeutralizesMentions(t *testing.T) {
	run := fixtureRun()
	run.Name = "suite " + hostileMention
	run.Target.Name = hostileMention
	rs := fixtureResults()
	rs[4].ItemID = "id " + hostileMention
	rs[4].Item.ID = rs[4].ItemID
	rs[4].Error = "error " + hostileMention
	rs[4].Item.Metadata["tags"] = []any{"tag " + hostileMention}
	rep := Build(run, rs)
	md := string(render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, rep, MarkdownOptions{}) }))
	checkInert(t, "run markdown", md)
	// Still readable: the text is there, only made inert.
	if !strings.Contains(md, "@&#8203;octocat") {
		t.Errorf("the mention is not shown, neutralized:\n%s", md)
	}
}

// TestExperimentMarkdownNeutralizesMentions: the same for an experiment's
// Markdown, with the text in the suite name, target name, scorer name,
// item id, output and error.
func TestExperimentMarkdownNeutralizesMentions(t *testing.T) {
	a, b := expRun("base", 0), expRun("cand", 1)
	a.Name = "suite " + hostileMention
	b.Target.Name = hostileMention
	ra := []*evalrun.ItemResult{expResult(a, 0, true, true, false), expResult(a, 1, true, true, false)}
	rb := []*evalrun.ItemResult{expResult(b, 0, false, false, false), expResult(b, 1, true, true, true)}
	ra[0].ItemID, rb[0].ItemID = "id "+hostileMention, "id "+hostileMention
	// The output cell is cut to maxOutputRunes: one mention at its start.
	rb[0].Output = evalrun.String("@octocat " + hostileMention)
	rb[1].Error = "@octocat failed"
	name := "s @octocat"
	a.Scorers = []evalrun.ScorerInfo{{Name: name, Threshold: 0.5}, expScorers[1]}
	b.Scorers = a.Scorers
	ra[0].Scores[0].Scorer, ra[1].Scores[0].Scorer, rb[0].Scores[0].Scorer = name, name, name
	exp, err := evalrun.ExperimentOf(a.Experiment, []*evalrun.Run{a, b})
	if err != nil {
		t.Fatal(err)
	}
	e, err := BuildExperiment(exp, []*Report{Build(a, ra), Build(b, rb)}, CompareOptions{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	md := string(render(t, func(buf *bytes.Buffer) error { return WriteExperimentMarkdown(buf, e) }))
	checkInert(t, "experiment markdown", md)
	if !strings.Contains(md, "(2 of 2)") || !strings.Contains(md, "error: @&#8203;octocat failed") {
		t.Errorf("the disagreeing items are not listed with their text neutralized:\n%s", md)
	}
}
