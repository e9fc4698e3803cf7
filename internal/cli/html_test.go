package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// htmlData is data3 with markup in an item's id, input, expected output
// and tag.
const htmlData = data3 + `{"id": "<script>alert(1)</script>", "input": "\"><img src=x onerror=alert(1)>", "expected_output": "javascript:alert(1)", "metadata": {"tags": ["<b>tag</b>"]}}
`

var startedLine = regexp.MustCompile(`(?m)^run (\S+) started`)

// checkHTMLDoc checks what every HTML report must be: a whole document,
// no script, the hostile item shown as text.
func checkHTMLDoc(t *testing.T, what, doc string) {
	t.Helper()
	if !strings.HasPrefix(doc, "<!DOCTYPE html>") || !strings.HasSuffix(doc, "</html>\n") {
		t.Errorf("%s: not a whole HTML document:\n%.300s", what, doc)
	}
	if strings.Contains(strings.ToLower(doc), "<script") || strings.Contains(doc, "<img") {
		t.Errorf("%s: markup from the dataset is not escaped", what)
	}
	if !strings.Contains(doc, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(doc, "&lt;b&gt;tag&lt;/b&gt;") {
		t.Errorf("%s: the hostile item's id or tag is not shown as text", what)
	}
}

// TestHTMLReportEntryPoints: -o report.html and --format html on evalrun
// run (retained and --no-retain, streamed from storage), and evalrun
// report RUN with --format html and -o .htm, each with the suite's
// fail_on gate.
func TestHTMLReportEntryPoints(t *testing.T) {
	b := setup(t)
	b.write("d.jsonl", htmlData)
	suite := b.write("suite.yaml", "name: html\ndataset: {name: d, file: d.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n"+
		"fail_on: \"pass_rate(exact_match) < 0.9\"\n")
	read := func(path string) string {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	const gate = `<td><code>pass_rate(exact_match) &lt; 0.9</code></td><td class="n">0.5</td><td><span class="bad strong">breached</span>`

	out := filepath.Join(b.dir, "out", "report.html")
	code, stdout, stderr := b.run("run", "-q", suite, "-o", out)
	if code != 1 || !strings.Contains(stderr, "wrote "+out+" (html)") {
		t.Fatalf("run -o report.html: exit %d (want 1: the gate is breached)\n%s", code, stderr)
	}
	if strings.Contains(stdout, "<html") {
		t.Error("run -o report.html: HTML on standard output too")
	}
	m := startedLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no run id in %q", stderr)
	}
	runID := m[1]
	doc := read(out)
	checkHTMLDoc(t, "run -o report.html", doc)
	if !strings.Contains(doc, gate) || !strings.Contains(doc, `<h2 id="items">Items (4)</h2>`) {
		t.Errorf("run -o report.html: no breached gate or not 4 items:\n%s", doc)
	}

	code, stdout, _ = b.run("run", "-q", suite, "--format", "html", "--no-retain")
	if code != 1 {
		t.Fatalf("run --format html --no-retain: exit %d", code)
	}
	checkHTMLDoc(t, "run --format html --no-retain", stdout)
	if !strings.Contains(stdout, gate) || strings.Count(stdout, "<article ") != 4 {
		t.Errorf("run --format html --no-retain: no gate or not 4 items")
	}

	code, stdout, stderr = b.run("report", runID, "--format", "html", "-o", filepath.Join(b.dir, "r.htm"))
	if code != 0 {
		t.Fatalf("report --format html: exit %d\n%s", code, stderr)
	}
	checkHTMLDoc(t, "report RUN --format html", stdout)
	// The same items as the run wrote; the gate from the stored suite.
	if !strings.Contains(stdout, gate) || strings.Count(stdout, "<article ") != 4 {
		t.Errorf("report RUN --format html: no gate from the stored suite or not 4 items")
	}
	if file := read(filepath.Join(b.dir, "r.htm")); file != stdout {
		t.Error("report RUN -o r.htm differs from --format html")
	}
	if _, after, _ := strings.Cut(doc, "<main>"); !strings.Contains(stdout, after[:2000]) {
		t.Error("report RUN does not rebuild the summary the run wrote")
	}
}

// TestHTMLExperimentReport: an experiment's HTML report from evalrun run
// -o and evalrun report --experiment --format html.
func TestHTMLExperimentReport(t *testing.T) {
	b := setup(t)
	b.write("d.jsonl", htmlData)
	suite := b.write("suite.yaml", "name: exp-html\ndataset: {name: d, file: d.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n"+
		"fail_on: \"failed > 0\"\nvariants:\n  - name: first\n  - name: second\n    target: {name: other}\n")
	out := filepath.Join(b.dir, "exp.html")
	code, _, stderr := b.run("run", "-q", suite, "-o", out)
	if code != 0 {
		t.Fatalf("run -o exp.html: exit %d\n%s", code, stderr)
	}
	m := expLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no experiment id in %q", stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for what, doc := range map[string]string{"run -o exp.html": string(data)} {
		checkHTMLDoc(t, what, doc)
	}
	code, stdout, stderr := b.run("report", "--experiment", m[1], "--format", "html")
	if code != 0 {
		t.Fatalf("report --experiment --format html: exit %d\n%s", code, stderr)
	}
	checkHTMLDoc(t, "report --experiment --format html", stdout)
	for _, doc := range []string{string(data), stdout} {
		if !strings.Contains(doc, "evalrun experiment report") || strings.Count(doc, "<article ") != 4 ||
			strings.Count(doc, `<td>second</td><td><code>failed &gt; 0</code></td><td class="n">0</td><td><span class="good">holds</span>`) != 1 {
			t.Errorf("not the experiment report with 4 items and second's gate:\n%s", doc)
		}
	}
}
