package target

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/evalrun/evalrun"
)

// stderrTail is how much of a program's standard error an error keeps.
const stderrTail = 4 << 10

// ExecConfig configures an [Exec] target. The yaml keys are the suite
// file's.
type ExecConfig struct {
	// Command is the program and its arguments. A program without a slash
	// is looked up in PATH; a relative path is relative to Dir. Required.
	Command []string `yaml:"command" json:"command"`
	// Env is added to the environment evalrun runs with (and overrides
	// variables of the same name).
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// Dir is the working directory; empty means evalrun's.
	Dir string `yaml:"dir" json:"dir,omitempty"`
	// MaxOutputBytes caps standard output; 0 means
	// [DefaultMaxResponseBytes]. More is a permanent error.
	MaxOutputBytes int64 `yaml:"max_output_bytes" json:"max_output_bytes,omitempty"`
	// Output, when set, is a gjson path into the JSON standard output
	// picking the output (as for [HTTPConfig]); empty means the whole of
	// standard output.
	Output string `yaml:"output" json:"output,omitempty"`
	// Trajectory, when set, makes the program a black-box agent: a gjson
	// path into its JSON standard output naming the tool calls it made
	// (see [HTTPConfig.Trajectory]).
	Trajectory string `yaml:"trajectory" json:"trajectory,omitempty"`
}

// Validate reports the first bad value as a *[ConfigError] naming its key.
func (c *ExecConfig) Validate() error {
	if len(c.Command) == 0 || c.Command[0] == "" {
		return configErrorf("command", "required: a list [program, args...]")
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return configErrorf("env", "invalid variable name %q", k)
		}
	}
	if c.Dir != "" {
		fi, err := os.Stat(c.Dir)
		if err != nil {
			return configErrorf("dir", "%w", err)
		}
		if !fi.IsDir() {
			return configErrorf("dir", "%q is not a directory", c.Dir)
		}
	}
	if c.MaxOutputBytes < 0 {
		return configErrorf("max_output_bytes", "must not be negative, got %d", c.MaxOutputBytes)
	}
	if c.Output != "" {
		if err := checkPath("output", c.Output); err != nil {
			return err
		}
	}
	if c.Trajectory != "" {
		if err := checkPath("trajectory", c.Trajectory); err != nil {
			return err
		}
	}
	return nil
}

// Exec is a target running a local program once per item.
//
// The program reads the item as one JSON object on standard input,
// {"id", "input", "expected_output", "metadata"} (absent fields omitted),
// followed by a newline, and writes its output to standard output:
//
//   - standard output that is valid JSON (surrounding white space ignored)
//     is the output as that JSON value: print {"answer": 4} for an object,
//     4 for a number, "4" for the string 4;
//   - anything else is text: the output is a JSON string of it, with one
//     trailing newline ("\n" or "\r\n") removed;
//   - output that is not valid UTF-8 is a permanent error ([ErrInvalidUTF8]).
//
// With an output path, standard output must be JSON and the output is the
// value at the path (not JSON, or nothing there, is a permanent
// [ErrMalformedResponse]). With a trajectory path, the tool calls at that
// path are the output's trajectory; standard output that is not JSON or
// holds no valid trajectory there fails the item with kind invalid_output
// ([ErrInvalidTrajectory]).
//
// A non-zero exit status is a permanent error, an *[ExecError] carrying the
// tail of standard error. The program runs in its own process group. When
// ctx ends (a timeout or a cancel) the whole group is killed with SIGKILL,
// and when the program exits any process it left behind in its group is
// killed too, so no child outlives the item (a process that starts its own
// session escapes this). The timeout of one attempt is transient, a cancel
// is canceled. Exec is safe for concurrent use.
type Exec struct {
	path   string
	args   []string
	env    []string
	dir    string
	max    int64
	output string // the output path, or ""
	traj   string // the trajectory path, or ""
}

var _ evalrun.Target = (*Exec)(nil)

// NewExec returns an Exec target, or a *[ConfigError] for bad config. A
// program that cannot be found is a config error of "command".
func NewExec(cfg ExecConfig) (*Exec, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	path := cfg.Command[0]
	if strings.ContainsRune(path, filepath.Separator) {
		// A path runs relative to Dir, as exec.Cmd does.
		check := path
		if !filepath.IsAbs(check) && cfg.Dir != "" {
			check = filepath.Join(cfg.Dir, check)
		}
		if fi, err := os.Stat(check); err != nil {
			return nil, configErrorf("command", "%w", err)
		} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return nil, configErrorf("command", "%s is not an executable file", check)
		}
	} else {
		var err error
		if path, err = exec.LookPath(path); err != nil && !errors.Is(err, exec.ErrDot) {
			return nil, configErrorf("command", "%w", err)
		}
	}
	x := &Exec{path: path, args: cfg.Command[1:], dir: cfg.Dir, max: cfg.MaxOutputBytes,
		output: cfg.Output, traj: cfg.Trajectory}
	if x.max == 0 {
		x.max = DefaultMaxResponseBytes
	}
	if len(cfg.Env) > 0 {
		keys := make([]string, 0, len(cfg.Env))
		for k := range cfg.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		x.env = os.Environ()
		for _, k := range keys {
			x.env = append(x.env, k+"="+cfg.Env[k])
		}
	}
	return x, nil
}

// ExecError is a program's failure: a non-zero exit status, a signal, or
// being killed when its context ended (then Err wraps the context's cause).
type ExecError struct {
	// ExitCode is the exit status, or -1 when a signal ended the program.
	ExitCode int
	// Stderr is the tail (the last 4 KB) of the program's standard error.
	Stderr string
	// Err is the underlying *exec.ExitError or start error.
	Err error
}

// Error returns the exit status and standard error.
func (e *ExecError) Error() string {
	msg := e.Err.Error()
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *ExecError) Unwrap() error { return e.Err }

// execInput is the JSON a program reads on standard input.
type execInput struct {
	ID       string          `json:"id"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected_output,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
}

// Execute runs the program for item.
func (x *Exec) Execute(ctx context.Context, item *evalrun.Item) (evalrun.Output, error) {
	in, err := json.Marshal(execInput{ID: item.ID, Input: item.Input, Expected: item.Expected, Metadata: item.Metadata})
	if err != nil {
		return evalrun.Output{}, evalrun.Permanent(fmt.Errorf("encode item: %w", err))
	}
	in = append(in, '\n')
	stdout, err := x.Run(ctx, in)
	if err != nil {
		return evalrun.Output{}, err
	}
	v, err := stdoutValue(stdout)
	if err != nil {
		return evalrun.Output{}, err
	}
	out := evalrun.Output{Value: v}
	if x.output != "" {
		doc := bytes.TrimSpace(stdout)
		if !json.Valid(doc) { // not gjson.ValidBytes: see trajectoryOf
			return evalrun.Output{}, evalrun.Permanent(fmt.Errorf("%w: standard output is not JSON (output path %q)", ErrMalformedResponse, x.output))
		}
		res := gjson.GetBytes(doc, x.output)
		if !res.Exists() {
			return evalrun.Output{}, evalrun.Permanent(fmt.Errorf("%w: output path %q not found in standard output", ErrMalformedResponse, x.output))
		}
		out.Value = json.RawMessage(res.Raw)
	}
	if x.traj != "" {
		if out.Trajectory, err = trajectoryOf(bytes.TrimSpace(stdout), x.traj, "standard output"); err != nil {
			return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorInvalidOutput, Err: err}
		}
	}
	return out, nil
}

// Run runs the program once with in as its standard input and returns
// its standard output, with the process handling and error classes of
// [Exec] (see there): a non-zero exit is a permanent *[ExecError], output
// over the cap a permanent error wrapping [ErrResponseTooLarge], the end
// of ctx kills the process group. The exec scorer runs its one-shot
// programs with it.
func (x *Exec) Run(ctx context.Context, in []byte) ([]byte, error) {
	if ctx.Err() != nil {
		return nil, ClassifyTransport(context.Cause(ctx))
	}
	var err error

	var pipes [6]*os.File // stdin r/w, stdout r/w, stderr r/w
	for i := 0; i < len(pipes); i += 2 {
		if pipes[i], pipes[i+1], err = os.Pipe(); err != nil {
			closeAll(pipes[:i]...)
			return nil, evalrun.Transient(fmt.Errorf("exec: %w", err))
		}
	}
	stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4], pipes[5]
	cmd := x.Cmd()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	err = cmd.Start()
	closeAll(stdinR, stdoutW, stderrW) // the child holds its own copies
	if err != nil {
		closeAll(stdinW, stdoutR, stderrR)
		return nil, evalrun.Permanent(&ExecError{ExitCode: -1, Err: fmt.Errorf("start %s: %w", x.path, err)})
	}
	pgid := cmd.Process.Pid
	killGroup := func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

	// Feed stdin and drain stdout and stderr concurrently; the pipes reach
	// EOF when every process of the group has died.
	go func() {
		_, _ = stdinW.Write(in) // EPIPE when the program does not read it
		_ = stdinW.Close()
	}()
	stderr := &TailBuffer{Max: stderrTail}
	var stdout []byte
	var stdoutErr error
	var readers sync.WaitGroup
	readers.Go(func() {
		if stdout, stdoutErr = ReadLimited(stdoutR, x.max); stdoutErr != nil {
			killGroup() // too much output: stop the program
		}
	})
	readers.Go(func() { _, _ = io.Copy(stderr, stderrR) })

	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-waitc:
	case <-ctx.Done():
		killGroup()
		waitErr = <-waitc
	}
	killGroup() // whatever the program left behind in its group
	x.drain(&readers, stdoutR, stderrR)

	if ctx.Err() != nil {
		return nil, ClassifyTransport(&ExecError{ExitCode: -1, Stderr: stderr.String(), Err: fmt.Errorf("exec %s: %w", x.path, context.Cause(ctx))})
	}
	if stdoutErr != nil {
		if errors.Is(stdoutErr, os.ErrClosed) {
			// drain closed it: a process outside the group holds it.
			stdoutErr = fmt.Errorf("still open %s after the program ended (a process it started in a session of its own holds it): %w", drainGrace, stdoutErr)
		}
		return nil, ClassifyTransport(fmt.Errorf("exec %s: stdout: %w", x.path, stdoutErr))
	}
	if waitErr != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			code = ee.ExitCode()
		}
		return nil, evalrun.Permanent(&ExecError{ExitCode: code, Stderr: stderr.String(), Err: fmt.Errorf("exec %s: %w", x.path, waitErr)})
	}
	return stdout, nil
}

// Cmd returns an unstarted command for the program: its path, arguments,
// environment and directory, in a process group of its own so that the
// group can be killed at once.
func (x *Exec) Cmd() *exec.Cmd {
	cmd := exec.Command(x.path, x.args...)
	cmd.Env, cmd.Dir = x.env, x.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// drainGrace is how long the readers may take once the process group is
// dead; only a process that left the group can hold the pipes longer.
const drainGrace = 2 * time.Second

// drain waits for the pipe readers, closing the pipes after drainGrace so
// that a process that escaped the group cannot block the item.
func (x *Exec) drain(readers *sync.WaitGroup, files ...*os.File) {
	done := make(chan struct{})
	go func() {
		readers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(drainGrace):
		closeAll(files...) // unblocks the reads
		<-done
	}
	closeAll(files...)
}

// stdoutValue turns a program's standard output into an output value.
func stdoutValue(b []byte) (json.RawMessage, error) {
	if err := CheckUTF8(b); err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && json.Valid(t) {
		return t, nil
	}
	s := string(b)
	if strings.HasSuffix(s, "\r\n") {
		s = s[:len(s)-2]
	} else if strings.HasSuffix(s, "\n") {
		s = s[:len(s)-1]
	}
	return evalrun.String(s), nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// TailBuffer keeps the last Max bytes written to it: a child process's
// stderr, whose tail explains its failure, without holding what a chatty
// or hostile program prints. It is safe for concurrent use.
type TailBuffer struct {
	mu  sync.Mutex
	Max int
	b   []byte
}

// Write appends p, dropping what falls out of the tail.
func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(p) >= t.Max {
		t.b = append(t.b[:0], p[len(p)-t.Max:]...)
		return len(p), nil
	}
	t.b = append(t.b, p...)
	if over := len(t.b) - t.Max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// String returns the tail, invalid UTF-8 replaced.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.b), "\uFFFD")
}
