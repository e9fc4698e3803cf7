package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/redact"
	"github.com/evalrun/evalrun/report"
)

// summaryBundle is a test bundle whose environment sets
// GITHUB_STEP_SUMMARY to a file in its directory.
func summaryBundle(t *testing.T) (*bundle, string) {
	t.Helper()
	b := setup(t)
	path := filepath.Join(b.dir, "step_summary.md")
	b.env = append(b.env, stepSummaryEnv+"="+path)
	return b, path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// runIDOf is the run id of "run <ID> started: …", the first line of
// standard error.
func runIDOf(t *testing.T, stderr string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^run (\S+) (started|resumed)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no run line on standard error:\n%s", stderr)
	}
	return m[1]
}

// withResult is the Markdown md with the result paragraph under its
// heading, as the step summary has it.
func withResult(md, result string) string {
	head, rest, _ := strings.Cut(md, "\n\n")
	return head + "\n\n" + result + "\n" + rest
}

const passed = "**Result: passed** (exit code 0): no target or scorer errors, every fail_on holds.\n"

// Two runs append two blocks after what an earlier step wrote (a file
// without a final newline): nothing is truncated, each block is exactly
// the Markdown of --format markdown with the result under its heading
// (which names the suite and the run), after a blank line.
func TestStepSummaryAppendsEveryRun(t *testing.T) {
	b, path := summaryBundle(t)
	const earlier = "# Build\n\nall green"
	if err := os.WriteFile(path, []byte(earlier), 0o644); err != nil {
		t.Fatal(err)
	}
	b.write("d.jsonl", `{"id": "a", "input": "x", "expected_output": "x"}`+"\n")
	suite := b.write("s.yaml", "name: smoke\ndataset: {name: d, file: d.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n")
	want := earlier
	for i := range 2 {
		code, stdout, stderr := b.run("run", suite, "-q", "--format", "markdown")
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, code, stderr)
		}
		id := runIDOf(t, stderr)
		if !strings.HasPrefix(stdout, "## evalrun: smoke, run `"+id+"` — completed\n") {
			t.Errorf("run %d: the heading does not name the suite and run %s:\n%s", i, id, stdout)
		}
		sep := "\n"
		if i == 0 {
			sep = "\n\n" // the earlier step's text had no final newline
		}
		want += sep + withResult(stdout, passed)
		if got := readFile(t, path); got != want {
			t.Fatalf("after run %d the summary file is\n%q\nwant\n%q", i, got, want)
		}
		if strings.Contains(stderr, "warning") {
			t.Errorf("run %d warned:\n%s", i, stderr)
		}
	}
}

// Unset or empty, nothing is written anywhere.
func TestStepSummaryUnsetWritesNothing(t *testing.T) {
	b := setup(t)
	b.env = append(b.env, stepSummaryEnv+"=")
	b.write("d.jsonl", `{"id": "a", "input": "x", "expected_output": "x"}`+"\n")
	suite := b.write("s.yaml", "dataset: {name: d, file: d.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n")
	if code, _, stderr := b.run("run", suite, "-q"); code != 0 || strings.Contains(stderr, stepSummaryEnv) {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			t.Errorf("%s was written", e.Name())
		}
	}
}

// A run whose fail_on is breached and whose target fails an item exits 1,
// as without the summary, and the summary says so.
func TestStepSummaryOnFailingRun(t *testing.T) {
	b, path := summaryBundle(t)
	b.write("d.jsonl", data3)
	// a answers x (passes), b answers other (fails exact_match), c exits 3.
	b.write("bot.sh", `read -r line
case "$line" in *'"c"'*) echo "no answer" >&2; exit 3;; esac
case "$line" in *'"x"'*) echo x;; *) echo other;; esac
`)
	suite := b.write("s.yaml", `name: gate
dataset: {name: d, file: d.jsonl}
target: {kind: exec, command: [sh, bot.sh]}
scorers: [exact_match]
fail_on: ["pass_rate(exact_match) < 0.9"]
`)
	code, stdout, stderr := b.run("run", suite, "-q", "--format", "markdown")
	if code != 1 || !strings.Contains(stderr, "fail_on breached") || !strings.Contains(stderr, "1 of 3 items failed") {
		t.Fatalf("exit %d, want 1 with a breached gate\n%s", code, stderr)
	}
	got := readFile(t, path)
	id := runIDOf(t, stderr)
	result := "**Result: failed** (exit code 1)\n\n- 1 of 3 items failed (target errors)\n" +
		"- fail\\_on breached: pass\\_rate(exact\\_match) &lt; 0.9 (actual 0.5)\n"
	if got != withResult(stdout, result) || !strings.HasPrefix(got, "## evalrun: gate, run `"+id+"` — completed\n\n**Result: failed**") ||
		!strings.Contains(got, "### Failures (1)") {
		t.Errorf("summary:\n%s\nstdout:\n%s", got, stdout)
	}
}

// An interrupted run (exit 130) appends the partial summary.
func TestStepSummaryOnInterruptedRun(t *testing.T) {
	b, path := summaryBundle(t)
	srv := newServer(t, true)
	suite := b.httpSuite(srv.URL)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	type outcome struct {
		code   int
		stderr string
	}
	done := make(chan outcome, 1)
	go func() {
		code, _, stderr := b.main(ctx, nil, "run", suite, "-q")
		done <- outcome{code, stderr}
	}()
	select {
	case <-srv.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never reached its second item")
	}
	cancel(ErrInterrupted)
	var o outcome
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not stop")
	}
	if o.code != ExitInterrupted {
		t.Fatalf("exit %d, want 130\n%s", o.code, o.stderr)
	}
	got := readFile(t, path)
	if !strings.HasPrefix(got, "## evalrun: cli-test, run `"+runIDOf(t, o.stderr)+"` — canceled\n\n"+
		"**Result: interrupted** (exit code 130): the summary is partial; `evalrun run --resume "+runIDOf(t, o.stderr)+"` finishes the run.\n") ||
		!strings.Contains(got, "| 3 | 1 | 0 | 2 |") { // total, succeeded, failed, skipped
		t.Errorf("summary of the interrupted run:\n%s", got)
	}
}

// compare appends its comparison (the Markdown it prints) too.
func TestStepSummaryCompare(t *testing.T) {
	b, path := summaryBundle(t)
	b.write("d.jsonl", data3)
	suite := b.write("s.yaml", "name: cmp\ndataset: {name: d, file: d.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n")
	var ids []string
	for range 2 {
		_, _, stderr := b.run("run", suite, "-q")
		ids = append(ids, runIDOf(t, stderr))
	}
	before := readFile(t, path)
	code, stdout, stderr := b.run("compare", ids[0], ids[1])
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s", code, stderr)
	}
	if got := readFile(t, path); got != before+"\n"+stdout || !strings.HasPrefix(stdout, "## evalrun compare\n") {
		t.Errorf("summary after compare:\n%s\ncompare printed:\n%s", got, stdout)
	}
	// --json and -o do not change what the summary gets: the Markdown.
	out := filepath.Join(b.dir, "cmp.json")
	if code, _, stderr := b.run("compare", ids[0], ids[1], "-o", out); code != 0 {
		t.Fatalf("compare -o: exit %d\n%s", code, stderr)
	}
	if got := readFile(t, path); got != before+"\n"+stdout+"\n"+stdout {
		t.Errorf("summary after compare -o:\n%s", got)
	}
}

// An experiment appends the experiment's Markdown, with the variants'
// problems when there are.
func TestStepSummaryExperiment(t *testing.T) {
	b, path := summaryBundle(t)
	srv := newVariantServer(t)
	suite := b.variantSuite(srv.URL, 0, []string{"good", "wrong"}, "")
	code, stdout, stderr := b.run("run", suite, "-q", "--format", "markdown")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	expID, _ := experimentIDs(t, stderr)
	got := readFile(t, path)
	if got != withResult(stdout, passed) || !strings.HasPrefix(got, "## evalrun experiment: exp-test, experiment `"+expID+"`\n") {
		t.Errorf("summary:\n%s\nstdout:\n%s", got, stdout)
	}

	suite = b.variantSuite(srv.URL, 0, []string{"good", "broken"}, "")
	code, stdout, stderr = b.run("run", suite, "-q", "--format", "markdown")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	_, runs := experimentIDs(t, stderr)
	broken := "- variant broken (run " + runs["broken"] + "): "
	result := "**Result: failed** (exit code 1)\n\n" + broken + "the run failed: every item failed\n" +
		broken + "3 of 3 items failed (target errors)\n"
	if after := readFile(t, path); after != got+"\n"+withResult(stdout, result) {
		t.Errorf("summary after a failing experiment:\n%s", after[len(got):])
	}
}

// A summary file that cannot be written (its directory is missing, it is
// a directory, the disk is full) costs one warning on standard error and
// changes neither the exit code nor the reports.
func TestStepSummaryUnwritableWarnsOnce(t *testing.T) {
	b := setup(t)
	b.write("d.jsonl", data3)
	ok := b.write("ok.yaml", "name: ok\ndataset: {name: d, file: d.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\n")
	failing := b.write("bad.yaml", "name: bad\ndataset: {name: d, file: d.jsonl}\ntarget: {kind: echo}\nscorers: [exact_match]\nfail_on: [\"pass_rate(exact_match) < 0.9\"]\n")
	paths := []string{filepath.Join(b.dir, "missing", "summary.md"), b.dir}
	if _, err := os.Stat("/dev/full"); err == nil {
		paths = append(paths, "/dev/full") // every write fails with ENOSPC
	}
	env := b.env
	for _, p := range paths {
		for suite, wantCode := range map[string]int{ok: 0, failing: 1} {
			b.env = append(env[:len(env):len(env)], stepSummaryEnv+"="+p)
			report := filepath.Join(b.dir, "r.json")
			os.Remove(report)
			code, _, stderr := b.run("run", suite, "-q", "-o", report)
			if code != wantCode {
				t.Errorf("%s, %s: exit %d, want %d\n%s", p, filepath.Base(suite), code, wantCode, stderr)
			}
			if n := strings.Count(stderr, "warning: "+stepSummaryEnv+": "); n != 1 ||
				!strings.Contains(stderr, "(the exit code is unchanged)") {
				t.Errorf("%s: %d warnings, want 1:\n%s", p, n, stderr)
			}
			if _, err := os.Stat(report); err != nil {
				t.Errorf("%s: the report file was not written: %v", p, err)
			}
		}
	}
}

// bigReport is the report of a run of n items, every one failed by its
// scorer, with tags tag-0 … tag-(tags-1): the Markdown lists 20 failures,
// but one cohort row per tag.
func bigReport(n, tags int) *report.Report {
	results := make([]*evalrun.ItemResult, n)
	for i := range results {
		id := fmt.Sprintf("item-%06d", i)
		results[i] = &evalrun.ItemResult{Index: i, ItemID: id, Output: evalrun.String("x"),
			Item:   &evalrun.Item{ID: id, Metadata: map[string]any{"tags": []any{fmt.Sprintf("tag-%06d", i%tags)}}},
			Scores: []evalrun.ScorerResult{{Scorer: "exact_match", Error: "boom"}}}
	}
	run := &evalrun.Run{ID: "20260101T000000-big", Name: "big", Status: evalrun.RunCompleted, Total: n, Succeeded: n,
		Scorers: []evalrun.ScorerInfo{{Name: "exact_match", Threshold: 0.5}}}
	return report.Build(run, results)
}

// The summary of a 100,000-item run stays within the block limit, whole
// lines then a note that says what was cut and why; appended to a file
// near GitHub's 1 MiB, the file stays within 1 MiB; at the limit nothing
// is appended and standard error says why.
func TestStepSummaryBoundedOnBigRun(t *testing.T) {
	rep := bigReport(100_000, 20_000)
	var md strings.Builder
	if err := report.WriteMarkdown(&md, rep, report.MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	full := withResult(md.String(), verdictMarkdown(ExitFailed, rep.Run.ID, nil))
	if len(full) <= stepSummaryBlockLimit {
		t.Fatalf("the fixture's Markdown is %d bytes: too small to test the cap", len(full))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.md")
	var stderr bytes.Buffer
	st := &State{Stderr: &stderr, Env: []string{stepSummaryEnv + "=" + path}}

	st.stepSummaryRun(rep)
	st.flushStepSummary(ExitFailed)
	got := readFile(t, path)
	if len(got) > stepSummaryBlockLimit {
		t.Errorf("the block is %d bytes, over %d", len(got), stepSummaryBlockLimit)
	}
	body, note, ok := strings.Cut(got, "\n… summary cut here: ")
	if !ok || !strings.HasPrefix(full, body) || !strings.HasSuffix(body, "|\n") {
		t.Fatalf("not a prefix of whole lines then the note:\n%s", got[max(len(got)-500, 0):])
	}
	rest := full[len(body):]
	if want := fmt.Sprintf("%d more lines (%d bytes) not shown, to stay within GitHub's limit of 1 MiB per step summary.",
		strings.Count(rest, "\n"), len(rest)); !strings.HasPrefix(note, want) {
		t.Errorf("note %q, want it to start %q", note, want)
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr: %s", stderr.String())
	}

	// Near the limit: what is appended fits the rest of the 1 MiB.
	filler := bytes.Repeat([]byte("x\n"), (stepSummaryLimit-100<<10)/2)
	if err := os.WriteFile(path, filler, 0o644); err != nil {
		t.Fatal(err)
	}
	st.stepSummaryRun(rep)
	st.flushStepSummary(ExitFailed)
	got = readFile(t, path)
	if !strings.HasPrefix(got, string(filler)) || len(got) > stepSummaryLimit || len(got) < stepSummaryLimit-1024 ||
		!strings.Contains(got, "… summary cut here: ") {
		t.Errorf("file of %d bytes after appending near the limit", len(got))
	}

	// At the limit: nothing appended, one warning.
	before := got
	st.stepSummaryRun(rep)
	st.flushStepSummary(ExitFailed)
	if got := readFile(t, path); got != before {
		t.Errorf("appended %d bytes to a full summary", len(got)-len(before))
	}
	if n := strings.Count(stderr.String(), "warning: "); n != 1 || !strings.Contains(stderr.String(), "near GitHub's limit") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// The cut keeps whole lines and never passes the budget, also when no
// line fits whole.
func TestStepSummaryBlockCut(t *testing.T) {
	block := []byte(strings.Repeat("0123456789\n", 50)) // 550 bytes
	for _, tc := range []struct {
		size   int64
		last   byte
		budget int64
		sep    string
	}{
		{0, '\n', 1000, ""},
		{10, '\n', 1000, "\n"},
		{10, 'x', 1000, "\n\n"},
		{0, '\n', 400, ""},
		{10, 'x', 300, "\n\n"},
		{0, '\n', 200, ""},
	} {
		out := stepSummaryBlock(block, tc.size, tc.last, tc.budget)
		name := fmt.Sprintf("size %d last %q budget %d", tc.size, tc.last, tc.budget)
		if out == nil {
			t.Errorf("%s: nothing", name)
			continue
		}
		if int64(len(out)) > tc.budget || !bytes.HasPrefix(out, []byte(tc.sep)) {
			t.Errorf("%s: %d bytes %q", name, len(out), out)
		}
		kept, _, cut := bytes.Cut(out[len(tc.sep):], []byte("\n… summary cut here"))
		if cut != (int64(len(block)+len(tc.sep)) > tc.budget) || !bytes.HasPrefix(block, kept) ||
			(len(kept) > 0 && kept[len(kept)-1] != '\n') {
			t.Errorf("%s: %q", name, out)
		}
	}
	if out := stepSummaryBlock(block, 10, '\n', 100); out != nil {
		t.Errorf("a budget smaller than the note: %q", out)
	}
}

// A secret of the suite that a target sends back never reaches the
// summary, whose file GitHub publishes.
func TestStepSummaryScrubsSecrets(t *testing.T) {
	const secret = "tok-5e4d3c2b1a09"
	b, path := summaryBundle(t)
	b.env = append(b.env, "TOKEN="+secret)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest) // the error message quotes the body
		fmt.Fprintf(w, "bad token %s", r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	suite := b.httpSuite(srv.URL)
	code, stdout, stderr := b.run("run", suite, "-q", "--format", "markdown")
	if code != 1 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	got := readFile(t, path)
	if !strings.Contains(got, "bad token") || !strings.Contains(stdout, "bad token") {
		t.Fatalf("the target's message is not in the summary:\n%s", got)
	}
	if strings.Contains(got, secret) {
		t.Errorf("the summary has the secret:\n%s", got)
	}

	// Behind the report's own scrubbing, the suite's scrubber sees the
	// block as it sees standard output.
	st := &State{Stderr: io.Discard, Env: b.env, scrub: &redact.Scrubber{}}
	st.scrub.Add(secret)
	before := got
	st.appendStepSummary("test", func(w io.Writer) error { _, err := io.WriteString(w, "leak "+secret+"\n"); return err })
	if got := readFile(t, path); got != before+"\nleak "+redact.Mask+"\n" {
		t.Errorf("appended %q", got[len(before):])
	}
}

func TestVerdictMarkdown(t *testing.T) {
	for _, tc := range []struct {
		code    int
		reasons []string
		want    string
	}{
		{0, nil, passed},
		{1, []string{"2 of 3 items failed (target errors)", "fail_on breached: failed > 0 (actual 2)"},
			"**Result: failed** (exit code 1)\n\n- 2 of 3 items failed (target errors)\n- fail\\_on breached: failed &gt; 0 (actual 2)\n"},
		{1, nil, "**Result: failed** (exit code 1): see the step's log.\n"},
		{2, nil, "**Result: failed** (exit code 2): see the step's log.\n"},
		{130, nil, "**Result: interrupted** (exit code 130): the summary is partial; `evalrun run --resume r1` finishes the run.\n"},
		{130, []string{"variant b (run r2): 1 of 3 items failed (target errors)"},
			"**Result: interrupted** (exit code 130): the summary is partial; `evalrun run --resume r1` finishes the run.\n\n" +
				"- variant b (run r2): 1 of 3 items failed (target errors)\n"},
	} {
		if got := verdictMarkdown(tc.code, "r1", tc.reasons); got != tc.want {
			t.Errorf("%d %q:\n%q\nwant\n%q", tc.code, tc.reasons, got, tc.want)
		}
	}
}

// A distributed run appends its summary as a local run does (skipped
// without TEST_DATABASE_URL).
func TestStepSummaryDistributed(t *testing.T) {
	b, suite := setupPostgres(t)
	path := filepath.Join(b.dir, "step_summary.md")
	b.env = append(b.env, stepSummaryEnv+"="+path)
	ctx, stopWorker := context.WithCancel(context.Background())
	workerDone := make(chan int, 1)
	go func() {
		code, _, _ := b.main(ctx, nil, "worker", "--concurrency", "2")
		workerDone <- code
	}()
	code, stdout, stderr := b.run("run", suite, "--distributed", "-q", "--format", "markdown")
	stopWorker()
	<-workerDone
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	got := readFile(t, path)
	if got != withResult(stdout, passed) || !strings.HasPrefix(got, "## evalrun: cli-test, run `"+strings.Fields(stderr)[1]+"` — completed\n") {
		t.Errorf("summary:\n%s\nstdout:\n%s", got, stdout)
	}
}
