package main_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// The Python scorers example runs offline: the one-shot scorer and the
// persistent one score every item, and the persistent one loads its
// "model" once for the run, not once per item. It needs python3, which
// scripts/test installs.
func TestScorersExample(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 is needed by the exec scorer example (scripts/test installs it): %v", err)
	}
	e := newEnv(t)
	suite, err := filepath.Abs("../../examples/scorers/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	loads := filepath.Join(e.dir, "loads")
	r := e.runEnv([]string{"MODEL_LOADS_FILE=" + loads}, "run", suite, "-q", "-o", "sc.json")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	rep := e.readReport("sc.json")
	for _, name := range []string{"py-keyword", "py-model"} {
		st := rep.Scorer(name)
		if st == nil || st.Count != rep.Run.Total || st.Errors != 0 || rep.Run.Total < 30 {
			t.Errorf("scorer %s: %+v over %d items, want every item scored", name, st, rep.Run.Total)
		}
	}
	b, err := os.ReadFile(loads)
	if n := strings.Count(string(b), "loaded"); err != nil || n != 1 {
		t.Errorf("the persistent scorer loaded its model %d times (%v), want once per run", n, err)
	}
}

// The JavaScript scorer example: skipped without node (scripts/test
// installs it, so CI runs it).
func TestScorersExampleNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	e := newEnv(t)
	suite, err := filepath.Abs("../../examples/scorers/suite-node.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := e.run("run", suite, "-q", "-o", "sc.json")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	rep := e.readReport("sc.json")
	one, many := rep.Scorer("js-concise"), rep.Scorer("js-concise-persistent")
	if one == nil || many == nil || one.Count != rep.Run.Total || many.Count != rep.Run.Total ||
		one.Mean == nil || many.Mean == nil || *one.Mean != *many.Mean {
		t.Errorf("js scorers: %+v and %+v over %d items, want the same verdicts on every item", one, many, rep.Run.Total)
	}
}

// A persistent scorer process that crashes, hangs or prints garbage is
// that item's scorer error; the run goes on and scores the other items,
// with one process started per failure, not per item.
func TestExecScorerMisbehavesInARun(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 is needed: %v", err)
	}
	e := newEnv(t)
	script, err := filepath.Abs("../../scorer/testdata/score.py")
	if err != nil {
		t.Fatal(err)
	}
	var data strings.Builder
	for i, in := range []string{"ok", "crash", "ok", "hang", "ok", "garbage", "ok", "ok"} {
		data.WriteString(`{"id": "i` + itoa(i) + `", "input": "` + in + `", "expected_output": "ok"}` + "\n")
	}
	e.write("data.jsonl", data.String())
	e.write("suite.yaml", `dataset: {file: data.jsonl}
target: {kind: echo}
scorers:
  - kind: exec
    name: py
    command: [python3, `+script+`, --persistent]
    persistent: true
    timeout: 3s
execution: {concurrency: 1}
`)
	starts := filepath.Join(e.dir, "starts")
	r := e.runEnv([]string{"START_FILE=" + starts}, "run", "suite.yaml", "-q", "-o", "r.json")
	if r.code != 0 && r.code != 1 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	rep := e.readReport("r.json")
	if rep.Run.Total != 8 || len(rep.Items) != 8 {
		t.Fatalf("run %+v with %d items", rep.Run, len(rep.Items))
	}
	for _, it := range rep.Items {
		sc := it.Scores.Get("py")
		bad := string(it.Output) != `"ok"`
		switch {
		case sc == nil:
			t.Errorf("item %s has no py score", it.ID)
		case bad && (sc.Error == nil || sc.Score != nil):
			t.Errorf("item %s (%s): %+v, want a scorer error", it.ID, it.Output, sc)
		case !bad && (sc.Score == nil || *sc.Score != 1):
			t.Errorf("item %s: %+v, want score 1", it.ID, sc)
		}
	}
	b, _ := os.ReadFile(starts)
	if n := strings.Count(string(b), "start"); n != 4 {
		t.Errorf("%d processes started, want 4 (the first and one after each failure)", n)
	}
	// The last process saw EOF on its standard input when the run ended
	// (the others were killed).
	if n := strings.Count(string(b), "stop"); n != 1 {
		t.Errorf("%d processes stopped at the end of the run, want 1:\n%s", n, b)
	}
}

// A dry run counts the exec and http scorers' work and does neither: no
// scorer program starts, the grading service gets no request.
func TestDryRunExecHTTPScorers(t *testing.T) {
	e := newEnv(t)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "1")
	}))
	defer srv.Close()
	e.write("data.jsonl", items(3))
	starts := filepath.Join(e.dir, "starts")
	e.write("suite.yaml", `dataset: {file: data.jsonl}
target: {kind: echo}
scorers:
  - kind: exec
    command: [sh, -c, 'echo start >> "$START_FILE"; echo 1']
  - kind: exec
    name: kept
    command: [sh, -c, 'echo start >> "$START_FILE"; while read l; do echo 1; done']
    persistent: true
  - kind: http
    url: `+srv.URL+`
`)
	r := e.runEnv([]string{"START_FILE=" + starts}, "run", "suite.yaml", "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"http scorer requests: 3 (1 scorer), before retries",
		"exec scorer scorings: 6 (2 scorers); a dry run starts no scorer program"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(starts); !errors.Is(err, os.ErrNotExist) || hits.Load() != 0 {
		t.Errorf("a dry run started a scorer program (%v) or called the service (%d requests)", err, hits.Load())
	}
}
