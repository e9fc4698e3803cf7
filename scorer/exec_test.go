package scorer_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/scorer"
)

// python3 returns the path of python3: the exec scorer's tests need it
// (scripts/test installs it), so its absence is a failure, not a skip.
func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed by the exec scorer tests (scripts/test installs it): %v", err)
	}
	return p
}

// execSetup builds an exec scorer running testdata/score.py, counting its
// processes in a file it returns the reader of.
func execSetup(t *testing.T, opts scorer.ExecOptions) (*scorer.Exec, func() []string) {
	t.Helper()
	script, err := filepath.Abs("testdata/score.py")
	if err != nil {
		t.Fatal(err)
	}
	starts := filepath.Join(t.TempDir(), "starts")
	opts.Command = append([]string{python3(t), script}, opts.Command...)
	opts.Env = map[string]string{"START_FILE": starts}
	s, err := scorer.NewExec(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, func() []string {
		b, err := os.ReadFile(starts)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(b))
	}
}

func count(lines []string, what string) int {
	n := 0
	for _, l := range lines {
		if l == what {
			n++
		}
	}
	return n
}

// scoreOut scores output (a JSON string of it) against expected "ok".
func scoreOut(s evalrun.Scorer, output string) (evalrun.Score, error) {
	out, _ := json.Marshal(output)
	return s.Score(context.Background(), input("q1", `{"question": "2+2?"}`, string(out), `"ok"`))
}

func TestExecOneShotPython(t *testing.T) {
	t.Parallel()
	s, starts := execSetup(t, scorer.ExecOptions{Name: "py"})
	for _, tc := range []struct {
		output string
		want   float64
	}{{"ok", 1}, {"nope", 0}} {
		got, err := scoreOut(s, tc.output)
		if err != nil {
			t.Fatalf("Score(%q): %v", tc.output, err)
		}
		if got.Value != tc.want || !strings.Contains(got.Reason, "pid ") {
			t.Errorf("Score(%q) = %v %q, want %v with the script's reason", tc.output, got.Value, got.Reason, tc.want)
		}
	}
	if n := count(starts(), "start"); n != 2 {
		t.Errorf("one-shot started %d processes for 2 scorings, want 2", n)
	}
}

// TestExecRequest checks the JSON the program gets, with a program that
// prints it back as its reason.
func TestExecRequest(t *testing.T) {
	t.Parallel()
	s, err := scorer.NewExec(scorer.ExecOptions{Command: []string{python3(t), "-c",
		`import json,sys; r=json.load(sys.stdin); print(json.dumps({"score": 0.25, "reason": json.dumps(r, sort_keys=True)}))`}})
	if err != nil {
		t.Fatal(err)
	}
	in := input("q7", `{"q": [1, 2]}`, `{"a": "x"}`, `3`)
	in.Item.Metadata = map[string]any{"tags": []any{"math"}}
	in.Trajectory = &evalrun.Trajectory{Calls: []evalrun.ToolCall{{Name: "calc", Args: json.RawMessage(`{"x":1}`)}}}
	got, err := s.Score(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal([]byte(got.Reason), &req); err != nil {
		t.Fatalf("reason %q: %v", got.Reason, err)
	}
	// The calls as reports write them; only name and args are set here.
	if calls, ok := req["trajectory"].([]any); ok && len(calls) == 1 {
		c := calls[0].(map[string]any)
		req["trajectory"] = []any{map[string]any{"name": c["name"], "args": c["args"]}}
	}
	want := `{"expected_output":3,"id":"q7","input":{"q":[1,2]},"metadata":{"tags":["math"]},"output":{"a":"x"},"trajectory":[{"args":{"x":1},"name":"calc"}]}`
	if b, _ := json.Marshal(req); string(b) != want || got.Value != 0.25 {
		t.Errorf("request = %s (score %v),\nwant      %s (0.25)", b, got.Value, want)
	}
	// No trajectory, no expected output: nulls, not absent keys.
	got, err = s.Score(context.Background(), input("q8", `"hi"`, `"out"`, ""))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Reason, `"expected_output": null`) || !strings.Contains(got.Reason, `"trajectory": null`) {
		t.Errorf("request without expected output and trajectory = %s", got.Reason)
	}
}

func TestExecOneShotFailures(t *testing.T) {
	t.Parallel()
	// The timeout is short for the hang's sake, long enough for a python
	// start on a loaded machine.
	s, _ := execSetup(t, scorer.ExecOptions{Name: "py", Timeout: 3 * time.Second})
	for _, tc := range []struct {
		output string
		kind   evalrun.ErrorKind
		says   []string
	}{
		{"crash", evalrun.ErrorPermanent, []string{`exec scorer "py"`, "exit status 3", "boom: the scorer crashed"}},
		{"hang", evalrun.ErrorTimeout, []string{`exec scorer "py"`, "timed out after 3s"}},
		{"garbage", evalrun.ErrorInvalidOutput, []string{`exec scorer "py"`, "not JSON", `"this is not JSON"`}},
		{"range", evalrun.ErrorInvalidOutput, []string{"1.5 is outside [0,1]"}},
		{"huge", evalrun.ErrorInvalidOutput, []string{"more than 1048576 bytes"}},
	} {
		t.Run(tc.output, func(t *testing.T) {
			t.Parallel()
			got, err := scoreOut(s, tc.output)
			if err == nil {
				t.Fatalf("Score = %v, want an error", got)
			}
			if k := evalrun.KindOf(err); k != tc.kind {
				t.Errorf("kind = %s, want %s (%v)", k, tc.kind, err)
			}
			for _, w := range tc.says {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// A program writing 100 MB to stderr is drained (not blocked) and its
	// answer counts.
	chatty, _ := execSetup(t, scorer.ExecOptions{Name: "py"})
	got, err := scoreOut(chatty, "chatty")
	if err != nil || got.Value != 0 {
		t.Errorf("chatty program: %v, %v; want score 0", got, err)
	}
}

func TestExecPersistentStartsOncePerRun(t *testing.T) {
	t.Parallel()
	s, starts := execSetup(t, scorer.ExecOptions{Name: "py", Command: []string{"--persistent"}, Persistent: true})
	if n := len(starts()); n != 0 {
		t.Fatalf("%d processes before the first scoring, want 0 (lazy start)", n)
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			out := "ok"
			if i%2 == 1 {
				out = "nope"
			}
			got, err := scoreOut(s, out)
			if err != nil {
				t.Errorf("Score: %v", err)
				return
			}
			if want := float64(1 - i%2); got.Value != want {
				t.Errorf("item %d: score %v, want %v (answers out of order?)", i, got.Value, want)
			}
		})
	}
	wg.Wait()
	if n := count(starts(), "start"); n != 1 {
		t.Errorf("persistent scorer started %d processes for 40 scorings, want 1", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := starts(); count(got, "stop") != 1 {
		t.Errorf("after Close: %v, want the process to have seen EOF and stopped", got)
	}
	if _, err := scoreOut(s, "ok"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Score after Close: %v, want a closed error", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestExecPersistentPool(t *testing.T) {
	t.Parallel()
	s, starts := execSetup(t, scorer.ExecOptions{Command: []string{"--persistent"}, Persistent: true, Processes: 3})
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			if _, err := scoreOut(s, "ok"); err != nil {
				t.Errorf("Score: %v", err)
			}
		})
	}
	wg.Wait()
	if n := count(starts(), "start"); n < 1 || n > 3 {
		t.Errorf("a pool of 3 started %d processes, want 1 to 3", n)
	}
}

// TestExecPersistentMisbehaviour: a process that crashes, hangs or prints
// garbage fails that item only; the next item gets a fresh process.
func TestExecPersistentMisbehaviour(t *testing.T) {
	t.Parallel()
	s, starts := execSetup(t, scorer.ExecOptions{Name: "py", Command: []string{"--persistent"}, Persistent: true,
		Timeout: 3 * time.Second})
	steps := []struct {
		output   string
		kind     evalrun.ErrorKind // "" for a score
		says     string
		restarts bool
	}{
		{"ok", "", "", false},
		{"crash", evalrun.ErrorPermanent, "boom: the scorer crashed", true},
		{"ok", "", "", false},
		{"hang", evalrun.ErrorTimeout, "no answer within 3s", true},
		{"ok", "", "", false},
		{"garbage", evalrun.ErrorInvalidOutput, `"this is not JSON"`, true},
		{"ok", "", "", false},
		{"range", evalrun.ErrorInvalidOutput, "1.5 is outside [0,1]", false},
		{"ok", "", "", false},
		{"huge", evalrun.ErrorInvalidOutput, "longer than 1048576 bytes", true},
		{"ok", "", "", false},
		{"chatty", "", "", false},
	}
	wantStarts := 1
	for i, st := range steps {
		got, err := scoreOut(s, st.output)
		if st.kind == "" {
			if err != nil || (st.output == "ok" && got.Value != 1) {
				t.Fatalf("step %d (%s): %v, %v; want a score", i, st.output, got, err)
			}
		} else {
			if err == nil {
				t.Fatalf("step %d (%s): score %v, want an error", i, st.output, got)
			}
			if k := evalrun.KindOf(err); k != st.kind || !strings.Contains(err.Error(), st.says) ||
				!strings.Contains(err.Error(), `exec scorer "py"`) {
				t.Errorf("step %d (%s): %v (kind %s), want kind %s saying %q", i, st.output, err, k, st.kind, st.says)
			}
		}
		if st.restarts {
			wantStarts++
		}
	}
	if n := count(starts(), "start"); n != wantStarts {
		t.Errorf("%d processes started, want %d (one, plus one after each crash, hang, garbage and overlong line)", n, wantStarts)
	}
}

// TestExecPersistentCrashLoop: a program that dies at once is not
// restarted forever.
func TestExecPersistentCrashLoop(t *testing.T) {
	t.Parallel()
	starts := filepath.Join(t.TempDir(), "starts")
	s, err := scorer.NewExec(scorer.ExecOptions{Name: "dies", Persistent: true,
		Command: []string{"sh", "-c", `echo start >> "$START_FILE"; echo "cannot load the model" >&2; exit 1`},
		Env:     map[string]string{"START_FILE": starts}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var last error
	for range scorer.MaxFailedStarts + 5 {
		if _, last = scoreOut(s, "ok"); last == nil {
			t.Fatal("a scorer that dies scored")
		}
	}
	b, _ := os.ReadFile(starts)
	if n := strings.Count(string(b), "start"); n != scorer.MaxFailedStarts {
		t.Errorf("%d processes started, want %d (MaxFailedStarts)", n, scorer.MaxFailedStarts)
	}
	if !strings.Contains(last.Error(), "not restarted") || !strings.Contains(last.Error(), "cannot load the model") {
		t.Errorf("error after giving up = %q, want it to say why", last)
	}
}

// TestExecPersistentEscapes: a child that keeps standard output open, a
// program that never reads its input: killed with the group at the
// timeout, and the next item is served.
func TestExecPersistentEscapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, script string }{
		{"child keeps stdout", `sleep 3600 & exit 0`},
		{"never reads stdin", `exec sleep 3600`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := scorer.NewExec(scorer.ExecOptions{Persistent: true, Timeout: 500 * time.Millisecond,
				Command: []string{"sh", "-c", tc.script}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// A request larger than a pipe's buffer: a write that blocks.
			big := strings.Repeat("x", 1<<20)
			for range 2 {
				start := time.Now()
				_, err := scoreOut(s, big)
				if err == nil {
					t.Fatal("scored without an answer")
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("a scoring took %s", d)
				}
			}
		})
	}
}

func TestExecConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		opts scorer.ExecOptions
		key  string
	}{
		{"no command", scorer.ExecOptions{}, "command"},
		{"missing program", scorer.ExecOptions{Command: []string{"./nope.py"}, Dir: dir}, "command"},
		{"bad env", scorer.ExecOptions{Command: []string{"sh"}, Env: map[string]string{"A=B": "x"}}, "env"},
		{"bad dir", scorer.ExecOptions{Command: []string{"sh"}, Dir: filepath.Join(dir, "nope")}, "dir"},
		{"negative timeout", scorer.ExecOptions{Command: []string{"sh"}, Timeout: -time.Second}, "timeout"},
		{"processes without persistent", scorer.ExecOptions{Command: []string{"sh"}, Processes: 2}, "processes"},
		{"too many processes", scorer.ExecOptions{Command: []string{"sh"}, Persistent: true, Processes: 65}, "processes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scorer.NewExec(tc.opts)
			wantConfigError(t, err, tc.key)
		})
	}
}

// BenchmarkExecScorer is the cost of one scoring by a Python program:
// a process per scoring (one-shot) against one process for the run
// (persistent), the start-up that a model's load would add to.
func BenchmarkExecScorer(b *testing.B) {
	script, err := filepath.Abs("testdata/score.py")
	if err != nil {
		b.Fatal(err)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Fatal(err)
	}
	for _, persistent := range []bool{false, true} {
		name := map[bool]string{false: "oneshot", true: "persistent"}[persistent]
		b.Run(name, func(b *testing.B) {
			cmd := []string{py, script}
			if persistent {
				cmd = append(cmd, "--persistent")
			}
			s, err := scorer.NewExec(scorer.ExecOptions{Command: cmd, Persistent: persistent})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for b.Loop() {
				if sc, err := scoreOut(s, "ok"); err != nil || sc.Value != 1 {
					b.Fatalf("Score = %v, %v", sc, err)
				}
			}
		})
	}
}

// TestExecAnswerLimit: an answer of exactly MaxAnswerBytes is read, one
// byte more is refused, one-shot and persistent alike.
func TestExecAnswerLimit(t *testing.T) {
	t.Parallel()
	// The program answers {"score": 1, "reason": "rrr…"} padded to the
	// number of bytes the output asks for.
	prog := `import json, sys
def answer(req):
    n = int(req["output"])
    head = '{"score": 1, "reason": "'
    return head + "r" * (n - len(head) - 2) + '"}'
if "--persistent" in sys.argv:
    for line in sys.stdin:
        print(answer(json.loads(line)), flush=True)
else:
    sys.stdout.write(answer(json.load(sys.stdin)))
`
	for _, persistent := range []bool{false, true} {
		cmd := []string{python3(t), "-c", prog}
		if persistent {
			cmd = append(cmd, "--persistent")
		}
		s, err := scorer.NewExec(scorer.ExecOptions{Command: cmd, Persistent: persistent, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, n := range []int{scorer.MaxAnswerBytes, scorer.MaxAnswerBytes + 1} {
			sc, err := s.Score(context.Background(), input("q", `"q"`, strconv.Itoa(n), ""))
			if n == scorer.MaxAnswerBytes && (err != nil || sc.Value != 1) {
				t.Errorf("persistent %v: an answer of %d bytes: %v, %v; want score 1", persistent, n, sc.Value, err)
			}
			if n > scorer.MaxAnswerBytes && (err == nil || evalrun.KindOf(err) != evalrun.ErrorInvalidOutput) {
				t.Errorf("persistent %v: an answer of %d bytes: %v, want an invalid_output error", persistent, n, err)
			}
		}
	}
}
