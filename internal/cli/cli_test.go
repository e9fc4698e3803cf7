package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// bundle is a test's directory, database and environment.
type bundle struct {
	t   *testing.T
	dir string
	db  string
	env []string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	dir := t.TempDir()
	b := &bundle{t: t, dir: dir, db: "sqlite:" + filepath.Join(dir, "db.sqlite")}
	b.env = []string{"EVALRUN_DB=" + b.db}
	return b
}

func (b *bundle) write(name, content string) string {
	b.t.Helper()
	p := filepath.Join(b.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		b.t.Fatal(err)
	}
	return p
}

// main runs the CLI with buffers; tweak adjusts the state first.
func (b *bundle) main(ctx context.Context, tweak func(*State), args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	st := &State{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Env: b.env,
		CancelPoll: time.Hour, ProgressEvery: time.Hour, Now: time.Now}
	if tweak != nil {
		tweak(st)
	}
	code = st.Main(ctx, args)
	return code, out.String(), errb.String()
}

func (b *bundle) run(args ...string) (int, string, string) {
	return b.main(context.Background(), nil, args...)
}

const data3 = `{"id": "a", "input": "x", "expected_output": "x", "metadata": {"tags": ["t1"]}}
{"id": "b", "input": "y", "expected_output": "z", "metadata": {"tags": ["t2"]}}
{"id": "c", "input": "w", "expected_output": "w"}
`

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errFailed, 1},
		{errors.New("disk full"), 1},
		{fmt.Errorf("x: %w", evalrun.ErrInvalid), 2},
		{fmt.Errorf("x: %w", evalrun.ErrNotFound), 2},
		{usageError(errors.New("unknown flag")), 2},
		{fmt.Errorf("run: %w", ErrInterrupted), 130},
		{quietExit(ExitFailed, errFailed), 1},
		{quietExit(ExitInterrupted, ErrInterrupted), 130},
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	b := setup(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `evalrun: unknown command "bogus" for "evalrun"`},
		{[]string{"run"}, `evalrun: evalrun run: missing SUITE.yaml (usage: evalrun run SUITE.yaml [flags])`},
		{[]string{"run", "x.yaml", "--concurrency", "many"}, `evalrun: invalid argument "many" for "--concurrency" flag`},
		{[]string{"dataset", "import", "d"}, `evalrun: evalrun dataset import: missing FILE`},
		{[]string{"runs", "show", "nope"}, `evalrun: run nope not found (evalrun runs list shows the runs)`},
		{[]string{"run", "missing.yaml"}, `evalrun: invalid: suite file: open missing.yaml: no such file or directory`},
		{[]string{"report", "x", "-o", "report.pdf"}, `evalrun: -o report.pdf: cannot tell the format from the extension`},
		{[]string{"runs", "list", "--db", "mysql://x"}, `evalrun: --db "mysql://x": unknown storage (use sqlite:PATH or postgres://user@host/db)`},
		{[]string{"runs", "list", "--limit", "-1"}, `evalrun: --limit -1: must not be negative`},
	} {
		code, _, stderr := b.run(tc.args...)
		if code != 2 || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// evalrun --help lists every command a user can run, worker (distributed
// mode) included, with what it does.
func TestRootHelpListsWorker(t *testing.T) {
	b := setup(t)
	code, out, _ := b.run("--help")
	if code != 0 {
		t.Fatalf("evalrun --help: exit %d", code)
	}
	_, commands, ok := strings.Cut(out, "Available Commands:")
	if !ok {
		t.Fatalf("evalrun --help lists no commands:\n%s", out)
	}
	commands, _, _ = strings.Cut(commands, "Flags:")
	for _, want := range []string{"run ", "worker      Execute the items of distributed runs (PostgreSQL)", "serve ", "runs ", "report ", "compare "} {
		if !strings.Contains(commands, "\n  "+want) {
			t.Errorf("evalrun --help does not list %q:\n%s", want, commands)
		}
	}
}

func TestHelpHasExamples(t *testing.T) {
	b := setup(t)
	var walk func(path []string)
	walk = func(path []string) {
		code, out, _ := b.run(append(path, "--help")...)
		if code != 0 || !strings.Contains(out, "Examples:") {
			t.Errorf("evalrun %s --help: exit %d, no examples:\n%s", strings.Join(path, " "), code, out)
		}
	}
	for _, p := range [][]string{{}, {"run"}, {"dataset"}, {"dataset", "import"}, {"dataset", "list"}, {"dataset", "show"},
		{"dataset", "versions"}, {"dataset", "export"}, {"runs"}, {"runs", "list"}, {"runs", "show"}, {"runs", "cancel"},
		{"report"}, {"compare"}, {"serve"}, {"worker"}, {"version"}} {
		walk(p)
	}
	code, out, _ := b.run("completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: exit %d", code)
	}
}

// A conversation input is previewed as its messages, not as a JSON blob.
func TestDatasetShowConversation(t *testing.T) {
	b := setup(t)
	f := b.write("c.jsonl", `{"id":"c1","input":[{"role":"user","content":"hi"},{"role":"assistant","content":"yes?"}]}`+"\n")
	if code, _, errs := b.run("dataset", "import", "c", f); code != 0 {
		t.Fatalf("import: %s", errs)
	}
	_, out, _ := b.run("dataset", "show", "c")
	if !strings.Contains(out, "user: hi / assistant: yes?") || strings.Contains(out, `"role"`) {
		t.Errorf("dataset show:\n%s", out)
	}
}

func TestDatasetCommands(t *testing.T) {
	b := setup(t)
	f := b.write("d.jsonl", data3)
	code, out, errs := b.run("dataset", "import", "d", f)
	if code != 0 || out != "dataset d: version 1 (3 items: 3 added, 0 changed, 0 removed)\n" {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	if _, out, _ = b.run("dataset", "import", "d", f); out != "dataset d: unchanged, version 1 (3 items)\n" {
		t.Errorf("second import: %q", out)
	}
	b.write("d.jsonl", data3+`{"id": "d", "input": "v"}`+"\n")
	b.run("dataset", "import", "d", f)

	var list []datasetJSON
	_, out, _ = b.run("dataset", "list", "--json")
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || list[0].LatestVersion != 2 || list[0].ItemCount != 4 {
		t.Errorf("dataset list --json: %v %s", err, out)
	}
	var versions []versionJSON
	_, out, _ = b.run("dataset", "versions", "d", "--json")
	if err := json.Unmarshal([]byte(out), &versions); err != nil || len(versions) != 2 || versions[1].Added != 1 {
		t.Errorf("dataset versions --json: %v %s", err, out)
	}
	var show struct {
		Version int             `json:"version"`
		Items   []*evalrun.Item `json:"items"`
	}
	_, out, _ = b.run("dataset", "show", "d", "--version", "1", "--json")
	if err := json.Unmarshal([]byte(out), &show); err != nil || show.Version != 1 || len(show.Items) != 3 || show.Items[1].ID != "b" {
		t.Errorf("dataset show --json: %v %s", err, out)
	}
	if code, _, errs := b.run("dataset", "show", "d", "--version", "7"); code != 2 || !strings.Contains(errs, "has no version 7") {
		t.Errorf("show of a missing version: %d %s", code, errs)
	}
	_, out, _ = b.run("dataset", "export", "d", "--version", "1")
	if out != strings.ReplaceAll(strings.ReplaceAll(data3, ": ", ":"), ", ", ",") {
		t.Errorf("export:\n%s\nwant the file compacted:\n%s", out, data3)
	}
}

// closedPipe is a standard output whose reader went away: every write
// fails with EPIPE (SIGPIPE is ignored by cmd/evalrun).
type closedPipe struct{}

func (closedPipe) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
}

// A listing piped into a reader that stops early (evalrun runs list |
// head -1) is not a failure: exit 0, no "broken pipe" message.
func TestClosedStdoutIsNotAFailure(t *testing.T) {
	b := setup(t)
	b.write("d.jsonl", data3)
	if code, _, stderr := b.run("dataset", "import", "d", filepath.Join(b.dir, "d.jsonl")); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	for _, args := range [][]string{{"dataset", "list"}, {"dataset", "show", "d", "--json"}, {"runs", "list"}} {
		code, _, stderr := b.main(context.Background(), func(st *State) { st.Stdout = closedPipe{} }, args...)
		if code != 0 || stderr != "" {
			t.Errorf("%v into a closed pipe: exit %d, stderr %q; want 0 and nothing", args, code, stderr)
		}
	}
}

// Only standard output or error going away is forgiven: a broken pipe to
// a database or a target is a real error.
func TestOutputGone(t *testing.T) {
	stdout := &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{stdout, true},
		{fmt.Errorf("list runs: %w", stdout), true},
		{&os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.ENOSPC}, false},
		{&os.PathError{Op: "write", Path: "/tmp/report.json", Err: syscall.EPIPE}, false},
		{&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, false},
	} {
		if got := outputGone(tc.err); got != tc.want {
			t.Errorf("outputGone(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// Exporting a dataset that does not exist says so, not that its "version
// 0" is missing; a missing version of an existing dataset names it.
func TestDatasetExportNotFound(t *testing.T) {
	b := setup(t)
	code, _, errs := b.run("dataset", "export", "nope")
	if code != 2 || !strings.Contains(errs, "dataset nope not found (evalrun dataset list shows the datasets)") || strings.Contains(errs, "version 0") {
		t.Errorf("export of a missing dataset: exit %d, %q", code, errs)
	}
	b.write("d.jsonl", data3)
	if code, _, errs := b.run("dataset", "import", "d", filepath.Join(b.dir, "d.jsonl")); code != 0 {
		t.Fatalf("import: %s", errs)
	}
	code, _, errs = b.run("dataset", "export", "d", "--version", "7")
	if code != 2 || !strings.Contains(errs, "dataset d version 7 not found (evalrun dataset versions d lists them)") {
		t.Errorf("export of a missing version: exit %d, %q", code, errs)
	}
}
