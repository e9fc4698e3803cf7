package report

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// htmlGates are the fail_on conditions of the golden run report: one
// holds, one is breached, one cannot be computed (broken never scored).
func htmlGates(t *testing.T) []Condition {
	t.Helper()
	conds, err := ParseConditions([]string{"failed > 2", "pass_rate(exact) < 0.9", "mean(broken) < 0.5"})
	if err != nil {
		t.Fatal(err)
	}
	return conds
}

func TestHTMLGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, fixtureReport(t), HTMLOptions{FailOn: htmlGates(t)}); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, buf.Bytes())
	golden(t, "report.html", buf.Bytes())

	buf.Reset()
	if err := WriteHTML(&buf, agentReport(), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, buf.Bytes())
	golden(t, "report-agent.html", buf.Bytes())
}

func TestExperimentHTMLGolden(t *testing.T) {
	var buf bytes.Buffer
	e := expFixtureBuilt(t)
	if err := WriteExperimentHTML(context.Background(), &buf, e, HTMLOptions{FailOn: htmlGates(t)[:2]}); err != nil {
		t.Fatal(err)
	}
	checkHTML(t, buf.Bytes())
	golden(t, "experiment.html", buf.Bytes())
}

// checkHTML is a placeholder until the rule is written.
func checkHTML(t *testing.T, doc []byte) {
	t.Helper()
	if bytes.Contains(bytes.ToLower(doc), []byte("<script")) {
		t.Error("<script")
	}
	_ = strings.Contains
}
