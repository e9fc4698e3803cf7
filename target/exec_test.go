package target

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/evalrun/evalrun"
)

func newExec(t *testing.T, cfg ExecConfig) *Exec {
	t.Helper()
	x, err := NewExec(cfg)
	if err != nil {
		t.Fatalf("NewExec: %v", err)
	}
	return x
}

func sh(script string) ExecConfig { return ExecConfig{Command: []string{"sh", "-c", script}} }

func TestExecStdinIsTheItem(t *testing.T) {
	x := newExec(t, sh("cat"))
	out, err := x.Execute(context.Background(), testItem)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Value, &got); err != nil {
		t.Fatalf("output %s is not the item object: %v", out.Value, err)
	}
	if got["id"] != "q1" || got["input"] != "What is 2+2?" || got["expected_output"] != "4" || got["metadata"].(map[string]any)["lang"] != "en" {
		t.Errorf("stdin = %s", out.Value)
	}
}

func TestExecStdoutToOutput(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{`printf 'hello\n'`, `"hello"`},
		{`printf 'hello\r\n'`, `"hello"`},
		{`printf 'two\n\n'`, `"two\n"`},
		{`printf 'no newline'`, `"no newline"`},
		{`printf '42\n'`, `42`},
		{`printf '  {"a": 1}\n'`, `{"a": 1}`},
		{`printf '"42"'`, `"42"`},
		{`printf ''`, `""`},
		{`printf 'say "hi"\n'`, `"say \"hi\""`},
	} {
		out, err := newExec(t, sh(tc.script)).Execute(context.Background(), testItem)
		if err != nil {
			t.Fatalf("%s: %v", tc.script, err)
		}
		if string(out.Value) != tc.want {
			t.Errorf("%s: output %s, want %s", tc.script, out.Value, tc.want)
		}
	}
}

func TestExecEnvAndDir(t *testing.T) {
	dir := t.TempDir()
	cfg := sh(`printf '%s|%s' "$EVALRUN_TEST_FOO" "$(pwd -P)"`)
	cfg.Env = map[string]string{"EVALRUN_TEST_FOO": "bar"}
	cfg.Dir = dir
	out, err := newExec(t, cfg).Execute(context.Background(), testItem)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if want := evalrun.String("bar|" + real); string(out.Value) != string(want) {
		t.Errorf("output %s, want %s", out.Value, want)
	}
}

func TestExecNonZeroExitCarriesStderr(t *testing.T) {
	x := newExec(t, sh(`echo "first line" >&2; echo "the reason" >&2; exit 3`))
	_, err := x.Execute(context.Background(), testItem)
	wantKind(t, err, evalrun.ErrorPermanent)
	var ee *ExecError
	if !errors.As(err, &ee) {
		t.Fatalf("error %v is not an *ExecError", err)
	}
	if ee.ExitCode != 3 || !strings.Contains(ee.Stderr, "the reason") {
		t.Errorf("ExitCode = %d, Stderr = %q; want 3 and the stderr text", ee.ExitCode, ee.Stderr)
	}
}

func TestExecStderrTailIsBounded(t *testing.T) {
	x := newExec(t, sh(`i=0; while [ $i -lt 2000 ]; do echo "noise line $i" >&2; i=$((i+1)); done; echo last >&2; exit 1`))
	_, err := x.Execute(context.Background(), testItem)
	var ee *ExecError
	if !errors.As(err, &ee) {
		t.Fatalf("error %v is not an *ExecError", err)
	}
	if len(ee.Stderr) > stderrTail || !strings.HasSuffix(ee.Stderr, "last\n") {
		t.Errorf("stderr tail: %d bytes, ends %q", len(ee.Stderr), ee.Stderr[max(0, len(ee.Stderr)-20):])
	}
}

func TestExecInvalidUTF8IsReported(t *testing.T) {
	_, err := newExec(t, sh(`printf 'caf\351\n'`)).Execute(context.Background(), testItem)
	wantKind(t, err, evalrun.ErrorPermanent)
	if !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("error %v does not wrap ErrInvalidUTF8", err)
	}
}

func TestExecOutputCap(t *testing.T) {
	cfg := sh(`i=0; while [ $i -lt 1000 ]; do echo 0123456789; i=$((i+1)); done`)
	cfg.MaxOutputBytes = 100
	_, err := newExec(t, cfg).Execute(context.Background(), testItem)
	wantKind(t, err, evalrun.ErrorPermanent)
	if !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("error %v does not wrap ErrResponseTooLarge", err)
	}
}

// expiringCtx is a context whose deadline the test makes expire by hand:
// Err and Cause are context.DeadlineExceeded once expire is called, exactly
// as for a timeout, but without depending on a timer.
type expiringCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newExpiringCtx() *expiringCtx {
	return &expiringCtx{Context: context.Background(), done: make(chan struct{})}
}

func (c *expiringCtx) expire()                     { c.once.Do(func() { close(c.done) }) }
func (c *expiringCtx) Done() <-chan struct{}       { return c.done }
func (c *expiringCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *expiringCtx) Value(key any) any           { return nil }
func (c *expiringCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// waitDead waits (bounded) until pid has exited, using a pidfd, which
// becomes readable when the process terminates.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return // already gone
	}
	if errors.Is(err, syscall.ENOSYS) {
		t.Skip("pidfd_open not supported")
	}
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 10_000)
	for errors.Is(err, syscall.EINTR) {
		n, err = unix.Poll(fds, 10_000)
	}
	if err != nil || n != 1 {
		t.Errorf("process %d still alive after the group was killed (poll: %d, %v)", pid, n, err)
	}
}

// readPids reads one line of space-separated pids from the fifo at path.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	f, err := os.Open(path) // blocks until the program opens it for writing
	if err != nil {
		t.Errorf("open fifo: %v", err)
		return nil
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		t.Errorf("read pids: %v", err)
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(line) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Errorf("bad pid %q", f)
		}
		pids = append(pids, p)
	}
	return pids
}

func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pids")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := sh(`echo "started, about to hang" >&2; sleep 100 & a=$!; sh -c 'sleep 100 & sleep 100' & b=$!; echo "$$ $a $b" > "$FIFO"; wait`)
	cfg.Env = map[string]string{"FIFO": fifo}
	x := newExec(t, cfg)

	ctx := newExpiringCtx()
	pidc := make(chan []int, 1)
	go func() {
		pids := readPids(t, fifo)
		pidc <- pids
		ctx.expire() // the "timeout" strikes once every process is up
	}()
	_, err := x.Execute(ctx, testItem)
	pids := <-pidc
	if len(pids) != 3 {
		t.Fatalf("got pids %v, want 3", pids)
	}
	wantKind(t, err, evalrun.ErrorTransient)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
	var ee *ExecError
	if !errors.As(err, &ee) || !strings.Contains(ee.Stderr, "about to hang") {
		t.Errorf("error %v does not carry stderr as an *ExecError", err)
	}
	for _, pid := range pids {
		waitDead(t, pid)
	}
	// The grandchildren of the inner sh had no pid reported: the group
	// must be empty.
	if err := syscall.Kill(-pids[0], 0); !errors.Is(err, syscall.ESRCH) {
		// Zombies not yet reaped by init still count as group members;
		// check that none of them is running.
		assertGroupDead(t, pids[0])
	}
}

// assertGroupDead fails when a running (non-zombie) process is in group
// pgid.
func assertGroupDead(t *testing.T, pgid int) {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		// pid (comm) state ppid pgrp ...
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 3 || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		if fields[0] != "Z" && fields[0] != "X" {
			waitDead(t, pid)
		}
	}
}

func TestExecRealTimeoutIsTransient(t *testing.T) {
	x := newExec(t, sh(`sleep 100`))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := x.Execute(ctx, testItem)
	wantKind(t, err, evalrun.ErrorTransient)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}

func TestExecCancelIsCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newExec(t, sh(`sleep 100`)).Execute(ctx, testItem)
	wantKind(t, err, evalrun.ErrorCanceled)
}

func TestExecLeftoverChildrenAreKilled(t *testing.T) {
	// The program exits at once, leaving a child that holds stdout open:
	// Execute must not wait for it, and must kill it.
	x := newExec(t, sh(`sleep 100 & echo $!`))
	out, err := x.Execute(context.Background(), testItem)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(out.Value))
	if err != nil {
		t.Fatalf("output %s is not a pid", out.Value)
	}
	waitDead(t, pid)
}

func TestExecConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ExecConfig
		key  string
	}{
		{"no command", ExecConfig{}, "command"},
		{"empty program", ExecConfig{Command: []string{""}}, "command"},
		{"bad env", ExecConfig{Command: []string{"sh"}, Env: map[string]string{"A=B": "x"}}, "env"},
		{"missing dir", ExecConfig{Command: []string{"sh"}, Dir: "/nonexistent/evalrun"}, "dir"},
		{"negative cap", ExecConfig{Command: []string{"sh"}, MaxOutputBytes: -1}, "max_output_bytes"},
	} {
		err := tc.cfg.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%s: Validate() = %v, want a ConfigError for %q", tc.name, err, tc.key)
		}
	}
	_, err := NewExec(ExecConfig{Command: []string{"evalrun-no-such-program"}})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "command" {
		t.Errorf("NewExec with a missing program = %v, want a ConfigError for command", err)
	}
}

func TestExecRelativeProgramRunsInDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bot.sh"), []byte("#!/bin/sh\necho from-dir\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := newExec(t, ExecConfig{Command: []string{"./bot.sh"}, Dir: dir}).Execute(context.Background(), testItem)
	if err != nil || string(out.Value) != `"from-dir"` {
		t.Fatalf("output %s, err %v", out.Value, err)
	}
	_, err = NewExec(ExecConfig{Command: []string{"./missing.sh"}, Dir: dir})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "command" {
		t.Errorf("missing relative program: %v, want a ConfigError for command", err)
	}
}
