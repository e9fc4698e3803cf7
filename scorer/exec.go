package scorer

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/target"
)

// MaxAnswerBytes caps what a scorer program or grading service answers:
// an exec scorer's standard output (one-shot) or one line of it
// (persistent), an http scorer's response body. An answer is a number or
// a short object; 1 MiB leaves room for a long reason and stops a runaway
// program early.
const MaxAnswerBytes = 1 << 20

// DefaultTimeout is the timeout of one exec or http scoring when the
// config sets none.
const DefaultTimeout = 30 * time.Second

// MaxProcesses bounds a persistent exec scorer's pool.
const MaxProcesses = 64

// MaxTimeout bounds an exec or http scorer's timeout: longer is a stuck
// scorer.
const MaxTimeout = 24 * time.Hour

// timeout reads the timeout key of an exec or http config: positive, at
// most MaxTimeout; 0 when unset (the default applies).
func (c Config) timeout(b base) (time.Duration, error) {
	if c.Timeout == nil {
		return 0, nil
	}
	if d := *c.Timeout; d <= 0 || d > MaxTimeout {
		return 0, b.configError("timeout", fmt.Errorf("%v is outside (0, %v]", d, MaxTimeout))
	}
	return *c.Timeout, nil
}

// ExecOptions configure [NewExec].
type ExecOptions struct {
	// Name defaults to "exec".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
	// Command is the program and its arguments; required. A program
	// without a slash is looked up in PATH; a relative path is relative to
	// Dir.
	Command []string
	// Env is added to evalrun's environment.
	Env map[string]string
	// Dir is the working directory; "" means evalrun's.
	Dir string
	// Timeout bounds one scoring (in persistent mode: one request, from the
	// moment a process is free, its start-up included); 0 means
	// [DefaultTimeout].
	Timeout time.Duration
	// Persistent keeps long-lived processes answering one JSON line per
	// request instead of starting one per scoring.
	Persistent bool
	// Processes is the number of persistent processes (requests to one
	// process are serialized); 0 means 1. Only with Persistent.
	Processes int
}

// Exec scores with a program in any language. The program gets one JSON
// object, {"id", "input", "expected_output", "metadata", "output",
// "trajectory"} (the item's input and expected output as the dataset's
// JSON values, the target's output as its JSON value, trajectory the
// agent's tool calls or null), and answers a number in [0,1] or
// {"score": x, "reason": "..."}.
//
// One-shot (the default): one process per scoring, the object on standard
// input, the answer on standard output; a non-zero exit is the item's
// scorer error with the tail of standard error. The process runs in its
// own group, killed as a whole at the timeout or when ctx ends, as the
// exec target's are.
//
// Persistent: the processes are started at first use and kept for the
// run; each request is one line of JSON on standard input, each answer one
// line on standard output, in order (see [procPool] for what happens when
// a process hangs, dies or prints garbage). [Exec.Close] stops them.
//
// An answer that is not a number in [0,1] or such an object is a scorer
// error of kind invalid_output naming what the program printed; a
// timeout is of kind timeout. Exec is safe for concurrent use.
type Exec struct {
	base
	prog    *target.Exec
	timeout time.Duration
	pool    *procPool // nil when one-shot
}

var (
	_ evalrun.Scorer      = (*Exec)(nil)
	_ evalrun.Thresholder = (*Exec)(nil)
	_ evalrun.Closer      = (*Exec)(nil)
)

// NewExec returns an exec scorer, or a *[ConfigError] for bad options (a
// missing command, a program that cannot be found, a bad env name or dir,
// a negative timeout, a pool size outside [1, MaxProcesses]).
func NewExec(opts ExecOptions) (*Exec, error) {
	b, err := newBase(KindExec, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	if opts.Timeout < 0 {
		return nil, b.configError("timeout", fmt.Errorf("%v is negative", opts.Timeout))
	}
	if opts.Processes != 0 && !opts.Persistent {
		return nil, b.configError("processes", errors.New("only with persistent: true"))
	}
	if opts.Processes < 0 || opts.Processes > MaxProcesses {
		return nil, b.configError("processes", fmt.Errorf("%d is outside [1, %d]", opts.Processes, MaxProcesses))
	}
	prog, err := target.NewExec(target.ExecConfig{Command: opts.Command, Env: opts.Env, Dir: opts.Dir,
		MaxOutputBytes: MaxAnswerBytes})
	if err != nil {
		var ce *target.ConfigError
		if errors.As(err, &ce) {
			return nil, b.configError(ce.Key, ce.Err)
		}
		return nil, b.configError("command", err)
	}
	s := &Exec{base: b, prog: prog, timeout: cmp.Or(opts.Timeout, DefaultTimeout)}
	if opts.Persistent {
		s.pool = newProcPool(b.name, prog, max(opts.Processes, 1))
	}
	return s, nil
}

func buildExec(c Config, b base, d Deps) (evalrun.Scorer, error) {
	cmd := slices.Clone(c.Command)
	if len(cmd) > 0 && strings.ContainsRune(cmd[0], '/') {
		cmd[0] = resolvePath(d.BaseDir, cmd[0])
	}
	dir := d.BaseDir
	if c.Dir != "" {
		dir = resolvePath(d.BaseDir, c.Dir)
	}
	timeout, err := c.timeout(b)
	if err != nil {
		return nil, err
	}
	persistent := c.Persistent != nil && *c.Persistent
	procs := 0
	if c.Processes != nil {
		if *c.Processes < 1 {
			return nil, b.configError("processes", fmt.Errorf("%d is outside [1, %d]", *c.Processes, MaxProcesses))
		}
		procs = *c.Processes
	}
	return NewExec(ExecOptions{Name: b.name, Threshold: &b.threshold, Command: cmd, Env: c.Env, Dir: dir,
		Timeout: timeout, Persistent: persistent, Processes: procs})
}

// errScorerTimeout is the cause of a scoring's own timeout.
var errScorerTimeout = errors.New("scorer timeout")

// Score runs the program (or asks a persistent process) for in.
func (s *Exec) Score(ctx context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	req, err := encodeRequest(in)
	if err != nil {
		return evalrun.Score{}, evalrun.Permanent(fmt.Errorf("exec scorer %q: encode request: %w", s.name, err))
	}
	var answer []byte
	if s.pool != nil {
		answer, err = s.pool.do(ctx, s.timeout, append(req, '\n'))
	} else {
		answer, err = s.oneShot(ctx, append(req, '\n'))
	}
	if err != nil {
		return evalrun.Score{}, err
	}
	sc, err := parseAnswer(answer)
	if err != nil {
		return evalrun.Score{}, &evalrun.Error{Kind: evalrun.ErrorInvalidOutput,
			Err: fmt.Errorf("exec scorer %q: %w; it printed %s", s.name, err, excerpt(bytes.TrimSpace(answer)))}
	}
	return sc, nil
}

// oneShot runs the program once under the scorer's timeout.
func (s *Exec) oneShot(ctx context.Context, req []byte) ([]byte, error) {
	tctx, cancel := context.WithTimeoutCause(ctx, s.timeout, errScorerTimeout)
	defer cancel()
	out, err := s.prog.Run(tctx, req)
	if err == nil {
		return out, nil
	}
	if ctx.Err() == nil && errors.Is(context.Cause(tctx), errScorerTimeout) {
		msg := fmt.Sprintf("exec scorer %q: timed out after %s; the process group was killed", s.name, s.timeout)
		var ee *target.ExecError
		if errors.As(err, &ee) && strings.TrimSpace(ee.Stderr) != "" {
			msg += "; stderr: " + tailOf(ee.Stderr)
		}
		return nil, &evalrun.Error{Kind: evalrun.ErrorTimeout, Err: errors.New(msg)}
	}
	if errors.Is(err, target.ErrResponseTooLarge) {
		return nil, &evalrun.Error{Kind: evalrun.ErrorInvalidOutput,
			Err: fmt.Errorf("exec scorer %q: printed more than %d bytes on standard output", s.name, MaxAnswerBytes)}
	}
	return nil, &evalrun.Error{Kind: evalrun.KindOf(err), Err: fmt.Errorf("exec scorer %q: %w", s.name, err)}
}

// Close stops a persistent scorer's processes: their standard input is
// closed, and a process still running after a grace period is killed with
// its group. Later scorings fail. Closing twice, or a one-shot scorer, is
// safe.
func (s *Exec) Close() error {
	if s.pool != nil {
		s.pool.close()
	}
	return nil
}

// request is the JSON a scorer program or grading service gets.
type request struct {
	ID         string             `json:"id"`
	Input      json.RawMessage    `json:"input"`
	Output     json.RawMessage    `json:"output"`
	Expected   json.RawMessage    `json:"expected_output"`
	Metadata   map[string]any     `json:"metadata"`
	Trajectory []evalrun.ToolCall `json:"trajectory"`
}

// encodeRequest returns in as one line of JSON (json.Marshal compacts the
// raw values, so no newline is left inside).
func encodeRequest(in evalrun.ScoreInput) ([]byte, error) {
	var r request
	if in.Item != nil {
		r.ID, r.Input, r.Expected, r.Metadata = in.Item.ID, nonEmpty(in.Item.Input), nonEmpty(in.Item.Expected), in.Item.Metadata
	}
	r.Output = nonEmpty(in.Output)
	if in.Trajectory != nil {
		r.Trajectory = in.Trajectory.Calls
		if r.Trajectory == nil {
			r.Trajectory = []evalrun.ToolCall{}
		}
	}
	return json.Marshal(r)
}

// nonEmpty returns raw, or nil (null) when it holds only white space.
func nonEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	return raw
}

// parseAnswer reads a number in [0,1] or {"score": x, "reason": "..."}.
func parseAnswer(b []byte) (evalrun.Score, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return evalrun.Score{}, errors.New("empty answer: want a number in [0,1] or {\"score\": x, \"reason\": \"...\"}")
	}
	if !json.Valid(b) {
		return evalrun.Score{}, errors.New("answer is not JSON: want a number in [0,1] or {\"score\": x, \"reason\": \"...\"}")
	}
	raw, reason := b, ""
	if b[0] == '{' {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			return evalrun.Score{}, err
		}
		s, ok := obj["score"]
		if !ok {
			return evalrun.Score{}, errors.New(`answer has no "score"`)
		}
		raw = bytes.TrimSpace(s)
		if r, ok := obj["reason"]; ok && !bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
			reason = text(r)
		}
	}
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return evalrun.Score{}, errors.New(`answer must be a number in [0,1] or {"score": x, "reason": "..."}`)
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return evalrun.Score{}, fmt.Errorf("score %s is not a finite number", raw)
	}
	if v < 0 || v > 1 {
		return evalrun.Score{}, fmt.Errorf("score %v is outside [0,1]", v)
	}
	return evalrun.Score{Value: v, Reason: reason}, nil
}

// excerptRunes is how much of an answer or stderr an error quotes.
const excerptRunes = 200

// excerpt quotes the start of b for an error message.
func excerpt(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if r := []rune(s); len(r) > excerptRunes {
		return strconv.Quote(string(r[:excerptRunes])) + fmt.Sprintf(" (%d bytes, shortened)", len(b))
	}
	return strconv.Quote(s)
}

// tailOf returns the end of a program's standard error for a message.
func tailOf(stderr string) string {
	s := strings.TrimSpace(strings.ToValidUTF8(stderr, "\uFFFD"))
	const max = 1 << 10
	if len(s) > max {
		s = "…" + strings.ToValidUTF8(s[len(s)-max:], "")
	}
	return s
}
