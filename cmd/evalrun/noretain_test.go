package main_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/evalrun/evalrun/report"
)

// TestNoRetainStreamsReports runs a suite with --no-retain: the reports it
// writes (standard output and -o files) stream their item rows from
// storage, and must be the JSON and JUnit of the full report: valid
// against docs/report.schema.json, every item in input order, byte for
// byte what the in-memory renderers write for the stored run. evalrun
// report RUN_ID writes the same bytes again.
func TestNoRetainStreamsReports(t *testing.T) {
	e := newEnv(t)
	srv := newAnswerServer(t)
	const n = 57
	e.write("data.jsonl", items(n))
	suite := e.write("suite.yaml", srv.suite(""))
	r := e.run("run", suite, "--no-retain", "--format", "json", "-o", "report.json", "-o", "junit.xml", "-o", "summary.md")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	id := runID(t, r.stderr)

	rep := e.readReport("report.json") // validates against the schema
	if len(rep.Items) != n {
		t.Fatalf("report.json: %d items, want %d", len(rep.Items), n)
	}
	for i, it := range rep.Items {
		if it.Index != i || it.ID != fmt.Sprintf("q%d", i) {
			t.Fatalf("item %d is index %d id %q, want index %d id q%d", i, it.Index, it.ID, i, i)
		}
		if want := fmt.Sprintf("%q", fmt.Sprintf("answer %d", i)); string(it.Output) != want {
			t.Errorf("item %d: output %s, want %s", i, it.Output, want)
		}
	}
	if rep.Run.ID != id || rep.Run.Succeeded != n {
		t.Errorf("run block: id %s, %d succeeded; want %s, %d", rep.Run.ID, rep.Run.Succeeded, id, n)
	}

	// The same bytes as the in-memory renderers on the full stored report.
	full, err := report.FromStore(context.Background(), e.openStore(), id)
	if err != nil {
		t.Fatal(err)
	}
	var wantJSON, wantJUnit, wantMD bytes.Buffer
	if err := report.WriteJSON(&wantJSON, full); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJUnit(&wantJUnit, full); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteMarkdown(&wantMD, full, report.MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	same := func(name string, got []byte, want *bytes.Buffer) {
		t.Helper()
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s differs from the in-memory rendering of the stored run\n--- got:\n%.2000s\n--- want:\n%.2000s", name, got, want.Bytes())
		}
	}
	read := func(name string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(e.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	same("report.json", read("report.json"), &wantJSON)
	same("standard output (--format json)", []byte(r.stdout), &wantJSON)
	same("junit.xml", read("junit.xml"), &wantJUnit)
	same("summary.md", read("summary.md"), &wantMD)

	// evalrun report RUN_ID streams too.
	r2 := e.run("report", id, "-o", "again.json", "--format", "junit")
	if r2.code != 0 {
		t.Fatalf("evalrun report: exit %d\n%s", r2.code, r2.stderr)
	}
	same("evalrun report -o again.json", read("again.json"), &wantJSON)
	same("evalrun report --format junit", []byte(r2.stdout), &wantJUnit)
}
