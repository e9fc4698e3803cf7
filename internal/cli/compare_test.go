package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// compare of runs that share no items says so on standard error (and in
// the output); an unknown run is named with how to list runs.
func TestCompareWarnsAndNamesMissingRun(t *testing.T) {
	b := setup(t)
	ids := make([]string, 2)
	for i, ds := range []string{"faq", "chat"} {
		b.write(ds+".jsonl", `{"id": "`+ds+`-1", "input": "x", "expected_output": "x"}`+"\n")
		suite := b.write(ds+".yaml", "name: "+ds+"\ndataset: {name: "+ds+", file: "+ds+".jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n")
		code, _, stderr := b.run("run", suite, "-q")
		if code != 0 {
			t.Fatalf("run %s: exit %d\n%s", ds, code, stderr)
		}
		ids[i] = strings.Fields(stderr)[1] // "run <ID> started: …"
	}
	code, stdout, stderr := b.run("compare", ids[0], ids[1], "--json")
	want := "runs share no items: A is dataset faq v1 (1 result), B is dataset chat v1 (1 result)"
	if code != 0 || !strings.Contains(stderr, "warning: "+want) || !strings.Contains(stdout, want) {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, _, stderr = b.run("compare", ids[0], "nope")
	if code != 2 || !strings.Contains(stderr, "run nope not found (evalrun runs list shows the runs)") {
		t.Errorf("unknown run: exit %d\n%s", code, stderr)
	}
}

// compare -o with a .html or .xml file is refused before anything is
// written: a comparison is Markdown or JSON, and a report.html holding
// Markdown would mislead whoever opens it.
func TestCompareRefusesHTMLAndXMLFiles(t *testing.T) {
	b := setup(t)
	b.write("qa.jsonl", `{"id": "q1", "input": "x", "expected_output": "x"}`+"\n")
	suite := b.write("qa.yaml", "name: qa\ndataset: {name: qa, file: qa.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n")
	ids := make([]string, 2)
	for i := range ids {
		code, _, stderr := b.run("run", suite, "-q")
		if code != 0 {
			t.Fatalf("run: exit %d\n%s", code, stderr)
		}
		ids[i] = strings.Fields(stderr)[1]
	}
	for _, name := range []string{"cmp.html", "cmp.HTM", "cmp.xml"} {
		path := filepath.Join(b.dir, name)
		code, _, stderr := b.run("compare", ids[0], ids[1], "-o", path)
		if code != 2 || !strings.Contains(stderr, "a comparison is written as Markdown (.md) or JSON (.json)") {
			t.Errorf("-o %s: exit %d\n%s", name, code, stderr)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("-o %s: a file was written (stat: %v)", name, err)
		}
	}
	code, _, stderr := b.run("compare", ids[0], ids[1], "-o", filepath.Join(b.dir, "cmp.md"))
	if code != 0 {
		t.Errorf("-o cmp.md: exit %d\n%s", code, stderr)
	}
}
