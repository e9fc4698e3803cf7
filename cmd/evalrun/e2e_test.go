package main_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/evalrun/evalrun"
)

func TestHappyPath(t *testing.T) {
	e := newEnv(t)
	srv := newAnswerServer(t)
	e.write("data.jsonl", items(12))
	e.write("suite.yaml", srv.suite(`fail_on: ["pass_rate(exact_match) < 1"]`))
	r := e.run("run", "suite.yaml", "-o", "out/report.json", "-o", "report.md", "-o", "junit.xml")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", r.code, r.stderr)
	}
	id := runID(t, r.stderr)
	if !strings.Contains(r.stdout, "SCORER") || !strings.Contains(r.stdout, id) {
		t.Errorf("stdout lacks the summary table of run %s:\n%s", id, r.stdout)
	}
	rep := e.readReport("out/report.json")
	if rep.Run.ID != id || rep.Run.Status != evalrun.RunCompleted || rep.Run.Succeeded != 12 || len(rep.Items) != 12 {
		t.Fatalf("report run %+v with %d items", rep.Run, len(rep.Items))
	}
	for i, it := range rep.Items {
		if want := "q" + itoa(i); it.ID != want || it.Index != i {
			t.Errorf("item %d is %s (index %d), want %s in input order", i, it.ID, it.Index, want)
		}
	}
	if p := rep.Scorer("exact_match").PassRate; p == nil || *p != 1 {
		t.Errorf("exact_match pass rate %v, want 1", p)
	}
	md, err := os.ReadFile(filepath.Join(e.dir, "report.md"))
	if err != nil || !bytes.Contains(md, []byte("says-answer")) {
		t.Errorf("report.md: %v\n%s", err, md)
	}
	junit, err := os.ReadFile(filepath.Join(e.dir, "junit.xml"))
	var suites struct {
		Tests int `xml:"tests,attr"`
	}
	if err != nil || xml.Unmarshal(junit, &suites) != nil || suites.Tests != 12 {
		t.Errorf("junit.xml: %v, %d tests\n%s", err, suites.Tests, junit)
	}

	// The same dataset file again: no new version; report rebuilds the same.
	r2 := e.run("run", "suite.yaml", "-q", "--format", "json")
	if r2.code != 0 || !strings.Contains(r2.stderr, "unchanged, version 1") {
		t.Errorf("second run: exit %d\n%s", r2.code, r2.stderr)
	}
	r3 := e.run("report", id, "--format", "json")
	if r3.code != 0 {
		t.Fatalf("report: exit %d: %s", r3.code, r3.stderr)
	}
	validateSchema(t, []byte(r3.stdout))
}

func TestInterruptAndResume(t *testing.T) {
	e := newEnv(t)
	srv := newAnswerServer(t)
	const total = 20
	e.write("data.jsonl", items(total))
	e.write("suite.yaml", srv.suite(""))

	// From the 6th request on, the server holds requests until the client
	// gives up; the first held one says the run is mid-way.
	held := make(chan struct{})
	var once sync.Once
	var blocking = true
	var mu sync.Mutex
	srv.mu.Lock()
	srv.hold = func(r *http.Request, n int) {
		mu.Lock()
		b := blocking
		mu.Unlock()
		if b && n > 5 {
			once.Do(func() { close(held) })
			<-r.Context().Done()
		}
	}
	srv.mu.Unlock()
	cmd := e.command("run", "suite.yaml", "-o", "partial.json")
	stderr := signalWhen(t, cmd, held, syscall.SIGINT)
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d, want 130\nstderr:\n%s", code, stderr)
	}
	id := runID(t, stderr)
	if !strings.Contains(stderr, "resume with: evalrun run --resume "+id) {
		t.Errorf("stderr lacks the resume command:\n%s", stderr)
	}
	part := e.readReport("partial.json")
	if part.Run.Status != evalrun.RunCanceled || part.Run.Total != total ||
		part.Run.Succeeded+part.Run.Failed+part.Run.Skipped != total || len(part.Items) != part.Run.Succeeded+part.Run.Failed {
		t.Fatalf("partial report inconsistent: %+v with %d items", part.Run, len(part.Items))
	}
	if part.Run.Skipped == 0 || part.Run.Failed != 0 {
		t.Errorf("partial run: %d skipped, %d failed; want some skipped and none failed (cancelled items are skipped)", part.Run.Skipped, part.Run.Failed)
	}
	done := map[string]bool{}
	for _, it := range part.Items {
		done[it.ID] = true
	}

	mu.Lock()
	blocking = false
	mu.Unlock()
	srv.mu.Lock()
	seenBefore := map[string]int{}
	for k, v := range srv.seen {
		seenBefore[k] = v
	}
	srv.mu.Unlock()
	r := e.run("run", "--resume", id, "-o", "full.json", "-q")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if got := runID(t, r.stderr); got != id {
		t.Errorf("resume printed run %s, want %s", got, id)
	}
	full := e.readReport("full.json")
	if full.Run.Status != evalrun.RunCompleted || full.Run.Succeeded != total || len(full.Items) != total {
		t.Fatalf("resumed report: %+v with %d items", full.Run, len(full.Items))
	}
	for i, it := range full.Items {
		if it.ID != "q"+itoa(i) {
			t.Errorf("item %d is %s: each item exactly once, in order", i, it.ID)
		}
	}
	srv.mu.Lock()
	for id := range done {
		if srv.seen[id] != seenBefore[id] {
			t.Errorf("item %s was finished before the interrupt but requested again on resume", id)
		}
	}
	srv.mu.Unlock()
}

func TestMalformedDatasetStoresNothing(t *testing.T) {
	e := newEnv(t)
	srv := newAnswerServer(t)
	e.write("data.jsonl", `{"input": "a"}`+"\n"+`{"input": "b"}`+"\n"+`{"input": "c",}`+"\n")
	e.write("suite.yaml", srv.suite(""))
	r := e.run("run", "suite.yaml")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "data.jsonl:3:") {
		t.Errorf("stderr does not name the file and line 3:\n%s", r.stderr)
	}
	st := e.openStore()
	ds, _ := st.ListDatasets(context.Background())
	runs, _ := st.ListRuns(context.Background(), evalrun.RunFilter{})
	srv.mu.Lock()
	requests := srv.n
	srv.mu.Unlock()
	if len(ds) != 0 || len(runs) != 0 || requests != 0 {
		t.Errorf("something was stored or called: %d datasets, %d runs, %d requests", len(ds), len(runs), requests)
	}
}

func TestUnknownScorer(t *testing.T) {
	e := newEnv(t)
	e.write("data.jsonl", items(2))
	e.write("suite.yaml", "dataset: {file: data.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match, exact_macth]\n")
	r := e.run("run", "suite.yaml")
	want := `suite.yaml:3:24: scorers[1]: unknown scorer kind "exact_macth" (did you mean "exact_match"? known kinds: contains, embedding_similarity, exact_match, exec, expr, http, json_equal, json_schema, json_valid, levenshtein, llm_judge, numeric, regex, tool_called, trajectory)`
	if r.code != 2 || strings.TrimSpace(r.stderr) != want {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and\n%s", r.code, r.stderr, want)
	}
}

func TestBreachedFailOn(t *testing.T) {
	e := newEnv(t)
	e.write("data.jsonl", items(4))
	// echo returns "question i": exact_match fails everywhere.
	e.write("suite.yaml", "dataset: {file: data.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\nfail_on: [\"pass_rate(exact_match) < 0.5\"]\n")
	r := e.run("run", "suite.yaml", "--fail-on", "mean(exact_match) < 0.1", "-q")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		"fail_on breached: pass_rate(exact_match) < 0.5 (actual 0)",
		"fail_on breached: mean(exact_match) < 0.1 (actual 0)",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// The quickstart, the README's first command, runs offline with only the
// binary and sh and passes its gate (exit 0), its wrong answers showing as
// data (pass rates below 100%), not as errors.
func TestQuickstart(t *testing.T) {
	e := newEnv(t)
	suite, err := filepath.Abs("../../examples/quickstart/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := e.run("run", suite, "-q", "-o", "qs.json")
	if r.code != 0 || !strings.Contains(r.stdout, "macro pass rate") || strings.Contains(r.stderr, "breached") {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	rep := e.readReport("qs.json")
	if rep.Run.Total < 30 || rep.Run.Failed != 0 || len(rep.Cohorts) < 4 {
		t.Errorf("quickstart report: %+v, %d cohorts", rep.Run, len(rep.Cohorts))
	}
	if p := rep.Scorer("exact_match").PassRate; p == nil || *p >= 1 || *p < 0.6 {
		t.Errorf("exact_match pass rate %v, want some misses and the gate (0.6) held", p)
	}
}

// The failing-gate example breaches its threshold: exit 1, naming the rule
// and the actual value.
func TestFailingGateExample(t *testing.T) {
	e := newEnv(t)
	suite, err := filepath.Abs("../../examples/failing-gate/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := e.run("run", suite, "-q")
	if want := "fail_on breached: pass_rate(exact_match) < 0.9 (actual 0.6875)"; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("exit %d, want 1 and %q\nstderr:\n%s", r.code, want, r.stderr)
	}
	if strings.Contains(r.stderr, "items failed") {
		t.Errorf("the failing gate should be the only problem:\n%s", r.stderr)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
