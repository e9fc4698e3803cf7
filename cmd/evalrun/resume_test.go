package main_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// interrupted runs the suite of srv on n items until the server holds a
// request past the 5th, stops the process with sig and returns the run id
// and the items whose results were stored before.
func interrupted(t *testing.T, e *env, srv *answerServer, n int, sig syscall.Signal) (string, map[string]bool) {
	t.Helper()
	e.write("data.jsonl", items(n))
	e.write("suite.yaml", srv.suite(""))
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	srv.mu.Lock()
	srv.hold = func(r *http.Request, k int) {
		if k > 5 {
			once.Do(func() { close(held) })
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}
	srv.mu.Unlock()
	t.Cleanup(func() { close(release) })
	cmd := e.command("run", "suite.yaml", "-q")
	stderr := signalWhen(t, cmd, held, sig)
	id := runID(t, stderr)
	srv.mu.Lock()
	srv.hold = nil
	srv.mu.Unlock()
	return id, storedItems(t, e, id)
}

// signalWhen starts cmd, sends it sig once held is closed (failing the
// test when that takes over 30 s), waits for it to exit and returns its
// standard error.
func signalWhen(t *testing.T, cmd *exec.Cmd, held <-chan struct{}, sig syscall.Signal) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the run never reached a held request\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return stderr.String()
}

// storedItems returns the ids of the items with a stored result.
func storedItems(t *testing.T, e *env, id string) map[string]bool {
	t.Helper()
	r := e.run("report", id, "--format", "json")
	if r.code != 0 {
		t.Fatalf("report %s: exit %d\n%s", id, r.code, r.stderr)
	}
	var rep struct {
		Items []struct{ ID string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	for _, it := range rep.Items {
		done[it.ID] = true
	}
	return done
}

func showRun(t *testing.T, e *env, id string) *evalrun.Run {
	t.Helper()
	r := e.run("runs", "show", id, "--json")
	var run evalrun.Run
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &run) != nil {
		t.Fatalf("runs show %s: exit %d\n%s%s", id, r.code, r.stdout, r.stderr)
	}
	return &run
}

// snapshot copies the server's per-item request counts.
func (s *answerServer) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.seen))
	for k, v := range s.seen {
		out[k] = v
	}
	return out
}

// checkResumedOnce checks that from before to now the server was asked
// for each item without a stored result exactly once, and for no other.
func checkResumedOnce(t *testing.T, srv *answerServer, n int, done map[string]bool, before map[string]int) {
	t.Helper()
	after := srv.snapshot()
	for i := range n {
		id := "q" + itoa(i)
		want := 1
		if done[id] {
			want = 0
		}
		if got := after[id] - before[id]; got != want {
			t.Errorf("item %s was requested %d times by the resumes, want %d (stored before: %v)", id, got, want, done[id])
		}
	}
}

// Two resumes of one interrupted run started at once: one executes every
// missing item exactly once, the other is refused, naming the run.
func TestConcurrentResumesExecuteEachItemOnce(t *testing.T) {
	e := newEnv(t)
	srv := newAnswerServer(t)
	const n = 30
	id, done := interrupted(t, e, srv, n, syscall.SIGINT)
	if len(done) == 0 || len(done) == n {
		t.Fatalf("%d of %d items stored before the interrupt, want some", len(done), n)
	}
	first := showRun(t, e, id)
	if first.Status != evalrun.RunCanceled || first.StartedAt.IsZero() {
		t.Fatalf("interrupted run: %+v", first)
	}
	before := srv.snapshot()

	// The resumes' requests wait until one resume has exited: the loser
	// cannot find the run finished, only claimed.
	gate := make(chan struct{})
	srv.mu.Lock()
	srv.hold = func(r *http.Request, _ int) {
		select {
		case <-gate:
		case <-r.Context().Done():
		}
	}
	srv.mu.Unlock()
	type proc struct {
		cmd            *exec.Cmd
		stdout, stderr bytes.Buffer
	}
	procs := make([]*proc, 2)
	exited := make(chan int, 2)
	for i := range procs {
		p := &proc{cmd: e.command("run", "--resume", id, "-q", "-o", filepath.Join(e.dir, "full"+itoa(i)+".json"))}
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		procs[i] = p
	}
	for i, p := range procs {
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.cmd.Process.Kill() }) // a failed test leaves none behind
		go func() {
			_ = p.cmd.Wait()
			exited <- i
		}()
	}
	var loser int
	select {
	case loser = <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("neither resume exited while the other held the run")
	}
	close(gate)
	winner := 1 - loser
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("the winning resume did not finish")
	}
	l, w := procs[loser], procs[winner]
	if code := l.cmd.ProcessState.ExitCode(); code != 2 ||
		!strings.Contains(l.stderr.String(), "run "+id+" is being resumed elsewhere") {
		t.Errorf("refused resume: exit %d, want 2 naming the run\n%s", code, l.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(e.dir, "full"+itoa(loser)+".json")); err == nil {
		t.Errorf("the refused resume wrote a report")
	}
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("winning resume: exit %d\n%s", code, w.stderr.String())
	}
	checkResumedOnce(t, srv, n, done, before)
	full := e.readReport("full" + itoa(winner) + ".json")
	if full.Run.Status != evalrun.RunCompleted || full.Run.Succeeded != n || len(full.Items) != n {
		t.Fatalf("resumed report: %+v with %d items", full.Run, len(full.Items))
	}

	// The run keeps its first start; its claim was released.
	last := showRun(t, e, id)
	if !last.StartedAt.Equal(first.StartedAt) || !last.CompletedAt.After(first.CompletedAt) {
		t.Errorf("resumed run started %v completed %v; want started %v (the first start) and completed after %v",
			last.StartedAt, last.CompletedAt, first.StartedAt, first.CompletedAt)
	}
	if last.ClaimedBy != "" {
		t.Errorf("the finished run is still claimed by %q", last.ClaimedBy)
	}
}

// A run whose process was SIGKILLed holds an unexpired claim; a resume on
// the same machine sees the process gone and takes the run over at once.
func TestResumeAfterSIGKILL(t *testing.T) {
	e := newEnv(t)
	srv := newAnswerServer(t)
	const n = 20
	id, done := interrupted(t, e, srv, n, syscall.SIGKILL)
	killed := showRun(t, e, id)
	if killed.Status != evalrun.RunRunning || killed.ClaimedBy == "" || !killed.ClaimExpires.After(time.Now()) {
		t.Fatalf("killed run: status %s, claim %q until %v; want running with a live claim", killed.Status, killed.ClaimedBy, killed.ClaimExpires)
	}
	before := srv.snapshot()
	start := time.Now()
	r := e.run("run", "--resume", id, "-q")
	if r.code != 0 {
		t.Fatalf("resume after SIGKILL: exit %d\n%s", r.code, r.stderr)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("resume took %v: it waited for the dead process's claim to expire", time.Since(start))
	}
	checkResumedOnce(t, srv, n, done, before)
	if last := showRun(t, e, id); !last.StartedAt.Equal(killed.StartedAt) || last.Status != evalrun.RunCompleted {
		t.Errorf("resumed run: status %s started %v, want completed, started %v", last.Status, last.StartedAt, killed.StartedAt)
	}
}

// A completed run is not reopened by --resume: refused (exit 2), nothing
// requested, nothing written, its record unchanged.
func TestResumeOfCompletedRunRefused(t *testing.T) {
	e := newEnv(t)
	srv := newAnswerServer(t)
	e.write("data.jsonl", items(4))
	e.write("suite.yaml", srv.suite(""))
	r := e.run("run", "suite.yaml", "-q")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	id := runID(t, r.stderr)
	before, requests := showRun(t, e, id), srv.snapshot()
	r = e.run("run", "--resume", id, "-q", "-o", "again.json")
	if r.code != 2 || !strings.Contains(r.stderr, "run "+id+" is already completed") {
		t.Fatalf("resume of a completed run: exit %d, want 2\n%s", r.code, r.stderr)
	}
	after := showRun(t, e, id)
	if after.Status != before.Status || !after.StartedAt.Equal(before.StartedAt) || !after.CompletedAt.Equal(before.CompletedAt) ||
		after.Succeeded != before.Succeeded {
		t.Errorf("record changed by a refused resume:\n before %+v\n after  %+v", before, after)
	}
	if got := srv.snapshot(); len(got) != len(requests) || got["q0"] != requests["q0"] {
		t.Errorf("the refused resume called the target: %v, before %v", got, requests)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "again.json")); err == nil {
		t.Errorf("the refused resume wrote a report")
	}
}
