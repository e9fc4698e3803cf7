package main_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// A reader that goes away (evalrun run ... 2>&1 | head -1) does not kill
// the run: with standard output and error a pipe nobody reads, the -o
// reports are written whole, the run is stored completed and the exit
// code is the run's. Before, SIGPIPE killed the process (exit 141) at its
// first write after the reader left, and no report was written.
func TestClosedPipe(t *testing.T) {
	e := newEnv(t)
	srv := newAnswerServer(t)
	e.write("data.jsonl", items(12))
	e.write("suite.yaml", srv.suite(""))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first write
	cmd := e.command("run", "suite.yaml", "-o", "report.json", "-o", "report.md")
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	w.Close()
	if err != nil {
		t.Fatalf("evalrun with a closed stdout and stderr: %v (want exit 0)", err)
	}
	rep := e.readReport("report.json")
	if rep.Run.Status != evalrun.RunCompleted || rep.Run.Succeeded != 12 || len(rep.Items) != 12 {
		t.Fatalf("report.json: run %+v with %d items", rep.Run, len(rep.Items))
	}
	if md, err := os.ReadFile(e.dir + "/report.md"); err != nil || !strings.Contains(string(md), rep.Run.ID) {
		t.Errorf("report.md: %v\n%s", err, md)
	}
	stored := e.run("report", rep.Run.ID, "--format", "json")
	if stored.code != 0 || !strings.Contains(stored.stdout, `"status": "completed"`) {
		t.Errorf("stored run: exit %d\n%s%s", stored.code, stored.stdout, stored.stderr)
	}
}

// With a concurrency above what the open-file limit allows, the run
// clamps it with a warning instead of failing items "too many open
// files". The limit is lowered for the child by the shell (soft and hard:
// Go raises the soft one to the hard one at start-up).
func TestConcurrencyAboveOpenFileLimit(t *testing.T) {
	e := newEnv(t)
	srv := newAnswerServer(t)
	e.write("data.jsonl", items(300))
	e.write("suite.yaml", srv.suite(""))
	cmd := exec.Command("/bin/sh", "-c", `ulimit -n 128 && exec "$0" "$@"`, bin, "run", "suite.yaml", "--concurrency", "1000",
		"-q", "-o", "report.json", "--db", e.db)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "EVALRUN_DB=", "GITHUB_STEP_SUMMARY=") // a test run is not this CI step's summary
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "warning: concurrency 1000 needs more open files than the limit of 128 (ulimit -n): running 32 items at once; raise the hard limit to run more"
	if !strings.Contains(string(out), want+"\n") {
		t.Errorf("output lacks the warning %q:\n%s", want, out)
	}
	rep := e.readReport("report.json")
	if rep.Run.Succeeded != 300 || rep.Run.Failed != 0 {
		t.Errorf("run %+v, want 300 items succeeded", rep.Run)
	}
}

// What run refuses, --dry-run refuses, with exit 2 and the place.
func TestHostileInputRefused(t *testing.T) {
	e := newEnv(t)
	srv := newAnswerServer(t)
	e.write("data.jsonl", items(3))
	e.write("suite.yaml", srv.suite(""))
	e.write("alias.yaml", "a: &a [*a]\n")
	e.write("dup.yaml", srv.suite("execution: {repeat: 2}\n"))
	e.write("many.yaml", strings.Replace(srv.suite(""), "data.jsonl", "many.jsonl", 1))
	e.write("many.jsonl", items(10_001))
	e.write("bad.yaml", strings.Replace(srv.suite(""), "data.jsonl", "bad.jsonl", 1))
	e.write("bad.jsonl", "{\"input\": \"ok\"}\n{\"input\": \"\xff\"}\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"alias.yaml"}, "alias.yaml:1:8: a[0]: alias *a refers to a node that contains the alias (a cycle)"},
		{[]string{"dup.yaml"}, `dup.yaml:11:1: execution: duplicate key "execution": already set on line 10 (keep one of them)`},
		{[]string{"suite.yaml", "--concurrency", "1000000000"}, "--concurrency 1000000000: must be at most 10000"},
		{[]string{"suite.yaml", "--concurrency", "9223372036854775807"}, "--concurrency 9223372036854775807: must be at most 10000"},
		{[]string{"suite.yaml", "--repeat", "1000000000"}, "--repeat 1000000000: must be at most 1000"},
		{[]string{"many.yaml", "--repeat", "1000"}, "10001 items × repeat 1000: more than 10000000 executions in one run"},
		{[]string{"bad.yaml"}, "bad.jsonl:2: invalid UTF-8: byte 0xff at offset 27 of the file (save the file as UTF-8)"},
	} {
		for _, dry := range []bool{true, false} {
			args := append([]string{"run"}, tc.args...)
			if dry {
				args = append(args, "--dry-run")
			}
			r := e.run(args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("evalrun %s: exit %d, want 2 and %q\n%s", strings.Join(args, " "), r.code, tc.want, r.stderr)
			}
		}
	}
}
