package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

func render(t *testing.T, f func(*bytes.Buffer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestMarkdownGolden(t *testing.T) {
	rep := fixtureReport(t)
	golden(t, "report.md", render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, rep, MarkdownOptions{}) }))
	golden(t, "report-capped.md", render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, rep, MarkdownOptions{MaxFailures: 2}) }))
}

func TestTerminalGolden(t *testing.T) {
	rep := fixtureReport(t)
	golden(t, "report.txt", render(t, func(b *bytes.Buffer) error { return WriteTerminal(b, rep) }))
}

func TestJUnitGolden(t *testing.T) {
	rep := fixtureReport(t)
	golden(t, "report.junit.xml", render(t, func(b *bytes.Buffer) error { return WriteJUnit(b, rep) }))
}

func TestJUnitStructure(t *testing.T) {
	data := render(t, func(b *bytes.Buffer) error { return WriteJUnit(b, fixtureReport(t)) })
	var doc junitSuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("JUnit output is not XML: %v", err)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d testsuites, want 1", len(doc.Suites))
	}
	s := doc.Suites[0]
	// Every case has the broken scorer's error, so every case is an error;
	// q5's is the target's timeout.
	if s.Tests != 6 || len(s.Cases) != 6 || s.Errors != 6 || s.Failures != 0 {
		t.Errorf("tests/errors/failures = %d/%d/%d", s.Tests, s.Errors, s.Failures)
	}
	q5 := s.Cases[4]
	if q5.Name != "q5" || q5.Classname != "support-bot" || q5.Error == nil || q5.Error.Type != "timeout" || q5.Time != "0.500" {
		t.Errorf("q5 case = %+v", q5)
	}

	// Without the broken scorer: threshold failures become <failure>.
	run := fixtureRun()
	run.Scorers = run.Scorers[:2]
	rs := fixtureResults()
	for _, r := range rs {
		if len(r.Scores) == 3 {
			r.Scores = r.Scores[:2]
		}
	}
	data = render(t, func(b *bytes.Buffer) error { return WriteJUnit(b, Build(run, rs)) })
	doc = junitSuites{}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	s = doc.Suites[0]
	// q1 judge .25, q2 both, q4 exact, q6 judge fail; q3 passes; q5 errors.
	if s.Errors != 1 || s.Failures != 4 || doc.Failures != 4 {
		t.Errorf("errors/failures = %d/%d, want 1/4", s.Errors, s.Failures)
	}
	if c := s.Cases[2]; c.Error != nil || c.Failure != nil {
		t.Errorf("q3 passed but has %+v %+v", c.Error, c.Failure)
	}
	q2 := s.Cases[1].Failure
	if q2 == nil || q2.Type != "threshold" || q2.Message != "2 scorers below threshold" ||
		!strings.Contains(q2.Body, "exact: score 0 below threshold 0.5: r:exact") ||
		!strings.Contains(q2.Body, "judge: score 0.5 below threshold 0.7") {
		t.Errorf("q2 failure = %+v", q2)
	}

	if err := WriteJUnit(&bytes.Buffer{}, fixtureReport(t, WithoutItems())); !errors.Is(err, ErrNoItems) {
		t.Errorf("JUnit without items: err = %v, want ErrNoItems", err)
	}
}

func TestRenderersEscapeRunText(t *testing.T) {
	run := fixtureRun()
	run.Name = "evil | <b>name</b>\n# heading"
	rs := fixtureResults()
	rs[4].ItemID = "id|<script>alert(1)</script>"
	rs[4].Item.ID = rs[4].ItemID
	rs[4].Error = "line1\nline2 \x1b[31mred\x1b[0m | pipe"
	rep := Build(run, rs)

	md := string(render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, rep, MarkdownOptions{}) }))
	for _, bad := range []string{"<script>", "<b>", "\n# heading", "line1\nline2"} {
		if strings.Contains(md, bad) {
			t.Errorf("markdown contains %q unescaped", bad)
		}
	}
	if !strings.Contains(md, `id\|&lt;script&gt;alert(1)&lt;/script&gt;`) {
		t.Errorf("markdown lacks the escaped id:\n%s", md)
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| id") && strings.Count(line, "|")-strings.Count(line, `\|`) != 6 {
			t.Errorf("failure row has a broken cell count: %s", line)
		}
	}

	txt := string(render(t, func(b *bytes.Buffer) error { return WriteTerminal(b, rep) }))
	if strings.Contains(txt, "\x1b") {
		t.Error("terminal output carries an escape sequence from the run")
	}

	x := render(t, func(b *bytes.Buffer) error { return WriteJUnit(b, rep) })
	if err := xml.Unmarshal(x, &junitSuites{}); err != nil {
		t.Errorf("JUnit with control characters is not XML: %v", err)
	}
}

func TestMarkdownFailureCap(t *testing.T) {
	rep := fixtureReport(t)
	tests := []struct {
		max       int
		rows      int
		remainder string
	}{
		{0, 7, ""},
		{2, 2, "… and 5 more"},
		{7, 7, ""},
		{-1, 0, "… and 7 more"},
	}
	for _, tt := range tests {
		md := string(render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, rep, MarkdownOptions{MaxFailures: tt.max}) }))
		_, failures, _ := strings.Cut(md, "### Failures (7)")
		rows := 0
		for _, line := range strings.Split(failures, "\n") {
			if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| item") && !strings.HasPrefix(line, "| ---") {
				rows++
			}
		}
		if rows != tt.rows {
			t.Errorf("MaxFailures %d: %d rows, want %d", tt.max, rows, tt.rows)
		}
		if tt.remainder != "" && !strings.Contains(failures, tt.remainder) || tt.remainder == "" && strings.Contains(failures, "more") {
			t.Errorf("MaxFailures %d: remainder line wrong:\n%s", tt.max, failures)
		}
	}
}

func TestFormats(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Format
	}{{"json", FormatJSON}, {"MD", FormatMarkdown}, {"markdown", FormatMarkdown}, {"junit", FormatJUnit}, {"xml", FormatJUnit}, {"table", FormatTable},
		{"html", FormatHTML}, {"HTM", FormatHTML}} {
		if got, err := ParseFormat(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseFormat(%q) = %q, %v", tt.in, got, err)
		}
	}
	if _, err := ParseFormat("pdf"); !errors.Is(err, evalrun.ErrInvalid) {
		t.Errorf("ParseFormat(pdf): err = %v, want ErrInvalid", err)
	}
	for path, want := range map[string]Format{"r.json": FormatJSON, "a/b.MD": FormatMarkdown, "junit.xml": FormatJUnit, "s.txt": FormatTable,
		"report.html": FormatHTML, "R.HTM": FormatHTML} {
		if got, ok := FormatForPath(path); !ok || got != want {
			t.Errorf("FormatForPath(%q) = %q, %v", path, got, ok)
		}
	}
	if _, ok := FormatForPath("report.pdf"); ok {
		t.Error("FormatForPath(.pdf) ok")
	}
	rep := fixtureReport(t)
	for _, f := range Formats {
		var buf bytes.Buffer
		if err := Write(&buf, rep, f); err != nil || buf.Len() == 0 {
			t.Errorf("Write %s: %v, %d bytes", f, err, buf.Len())
		}
	}
	if err := Write(&bytes.Buffer{}, rep, "pdf"); !errors.Is(err, evalrun.ErrInvalid) {
		t.Errorf("Write pdf: %v", err)
	}
}

func ExampleWriteTerminal() {
	v := 1.0
	run := &evalrun.Run{ID: "r1", Name: "demo", Status: evalrun.RunCompleted, Total: 1, Succeeded: 1,
		Scorers: []evalrun.ScorerInfo{{Name: "exact_match", Threshold: 0.5}}}
	rep := Build(run, []*evalrun.ItemResult{{ItemID: "q1", Output: evalrun.String("a"),
		Scores: []evalrun.ScorerResult{{Scorer: "exact_match", Score: &v, Passed: true}}}})
	var buf bytes.Buffer
	_ = WriteTerminal(&buf, rep)
	fmt.Print(strings.Join(strings.Split(buf.String(), "\n")[4:6], "\n"))
	// Output:
	// SCORER       COUNT  ERRORS  MEAN   P50    P95    PASS    THRESHOLD
	// exact_match  1      0       1.000  1.000  1.000  100.0%  0.50
}
