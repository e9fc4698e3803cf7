package scorer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/target"
)

// MaxFailedStarts is how many persistent processes in a row may end
// without a single valid answer (crashing at start, hanging, printing
// garbage) before the scorer stops starting new ones: every later scoring
// of the run is then an error saying why, instead of a crash loop
// spawning a process per item.
const MaxFailedStarts = 5

// stopGrace is how long a persistent process has to exit once its
// standard input is closed at the end of a run, before it is killed.
const stopGrace = 3 * time.Second

// drainGrace is how long to wait for the rest of a dead process's output
// (its last answer line, its stderr); only a process that left the group
// can hold the pipes open longer.
const drainGrace = 2 * time.Second

// stderrKeep is how much of a persistent process's standard error is
// kept (the rest is read and dropped, so a chatty process never blocks).
const stderrKeep = 4 << 10

// errLineTooLong is a persistent process's answer line over
// [MaxAnswerBytes]: the framing is lost.
var errLineTooLong = fmt.Errorf("printed a line longer than %d bytes", MaxAnswerBytes)

// procPool runs a persistent exec scorer's processes. It has a fixed
// number of slots; a scoring takes a free slot (waiting for one under
// its ctx), starts the slot's process if there is none, writes one
// request line and reads one answer line, so requests to one process are
// serialized and answers cannot be mismatched. A process is discarded
// (killed with its group) and the slot's next request starts a fresh one
// when it:
//
//   - dies or closes its standard output (the request in flight is that
//     item's scorer error, with its exit status and stderr's tail);
//   - does not answer within the timeout (the process is presumed hung);
//   - prints a line that is not JSON or is longer than [MaxAnswerBytes]
//     (framing can no longer be trusted: the line may be a stray print
//     with the answer still to come), or prints while no request is
//     pending.
//
// A JSON answer of the wrong shape or out of range is only that item's
// error: the process keeps serving. See [MaxFailedStarts] for crash loops.
type procPool struct {
	name  string
	prog  *target.Exec
	slots chan *slot

	mu       sync.Mutex
	closed   bool
	live     map[*proc]struct{}
	failures int    // processes in a row that ended without a valid answer
	last     string // why the last of them ended
}

// slot is one process's place in the pool; it is owned by whoever took
// it from the slots channel.
type slot struct{ p *proc }

func newProcPool(name string, prog *target.Exec, n int) *procPool {
	pp := &procPool{name: name, prog: prog, slots: make(chan *slot, n), live: make(map[*proc]struct{})}
	for range n {
		pp.slots <- &slot{}
	}
	return pp
}

// do sends one request line and returns the answer line.
func (pp *procPool) do(ctx context.Context, timeout time.Duration, req []byte) ([]byte, error) {
	var sl *slot
	select {
	case sl = <-pp.slots:
	case <-ctx.Done():
		return nil, pp.ctxError(ctx, nil, timeout)
	}
	defer func() { pp.slots <- sl }()

	tctx, cancel := context.WithTimeoutCause(ctx, timeout, errScorerTimeout)
	defer cancel()
	if sl.p != nil && !sl.p.usable() {
		pp.discard(sl.p, "")
		sl.p = nil
	}
	if sl.p == nil {
		p, err := pp.start()
		if err != nil {
			return nil, err
		}
		sl.p = p
	}
	p := sl.p
	line, err := p.exchange(tctx, req)
	if err != nil {
		if errors.Is(err, errLineTooLong) {
			err = &evalrun.Error{Kind: evalrun.ErrorInvalidOutput,
				Err: fmt.Errorf("exec scorer %q: %w; the process was killed and will be restarted", pp.name, err)}
		} else if tctx.Err() != nil {
			err = pp.ctxError(tctx, p, timeout)
		} else {
			err = &evalrun.Error{Kind: evalrun.ErrorPermanent, Err: fmt.Errorf("exec scorer %q: %w", pp.name, err)}
		}
		pp.discard(p, err.Error())
		sl.p = nil
		return nil, err
	}
	if !jsonLine(line) {
		// A stray print (a progress message on stdout): the answer may
		// still be coming, so the next request must not read it.
		pp.discard(p, "printed a line that is not JSON")
		sl.p = nil
		return line, nil // parseAnswer names what it printed
	}
	p.answered = true
	pp.mu.Lock()
	pp.failures = 0
	pp.mu.Unlock()
	return line, nil
}

// ctxError is the error of a request cut by ctx: its own timeout (the
// process, if any, is killed by the caller) or the caller's end.
func (pp *procPool) ctxError(ctx context.Context, p *proc, timeout time.Duration) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, errScorerTimeout) {
		msg := fmt.Sprintf("exec scorer %q: no answer within %s; the process was killed and will be restarted", pp.name, timeout)
		if p != nil {
			if s := tailOf(p.stderr.String()); s != "" {
				msg += "; stderr: " + s
			}
		}
		return &evalrun.Error{Kind: evalrun.ErrorTimeout, Err: errors.New(msg)}
	}
	return target.ClassifyTransport(fmt.Errorf("exec scorer %q: %w", pp.name, cause))
}

// start starts a process for a slot, unless the pool is closed or gave up.
func (pp *procPool) start() (*proc, error) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.closed {
		return nil, evalrun.Permanent(fmt.Errorf("exec scorer %q: closed", pp.name))
	}
	if pp.failures >= MaxFailedStarts {
		return nil, evalrun.Permanent(fmt.Errorf("exec scorer %q: not restarted: its last %d processes ended without a valid answer; the last: %s",
			pp.name, pp.failures, pp.last))
	}
	p, err := startProc(pp.prog.Cmd())
	if err != nil {
		pp.failures++
		pp.last = err.Error()
		return nil, evalrun.Permanent(fmt.Errorf("exec scorer %q: %w", pp.name, err))
	}
	pp.live[p] = struct{}{}
	return p, nil
}

// discard kills p and counts it as a failed start when it never gave a
// valid answer.
func (pp *procPool) discard(p *proc, why string) {
	p.kill()
	pp.mu.Lock()
	delete(pp.live, p)
	if !p.answered && why != "" {
		pp.failures++
		pp.last = why
	}
	pp.mu.Unlock()
}

// close stops every live process, in parallel, and refuses new ones.
func (pp *procPool) close() {
	pp.mu.Lock()
	pp.closed = true
	live := make([]*proc, 0, len(pp.live))
	for p := range pp.live {
		live = append(live, p)
	}
	clear(pp.live)
	pp.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range live {
		wg.Go(p.stop)
	}
	wg.Wait()
}

// proc is one running persistent process.
type proc struct {
	pid     int
	stdin   *os.File
	stdout  *os.File
	stderrR *os.File
	lines   chan lineMsg // from the reader goroutine
	dead    chan struct{}
	exited  chan struct{} // closed once the process was reaped
	waitErr error         // set before exited is closed
	stderr  *target.TailBuffer
	errDone chan struct{} // closed once stderr is drained
	// answered is set once the process gave a valid answer; only the
	// slot's owner touches it.
	answered bool
	once     sync.Once
}

// lineMsg is one line of standard output, or why there are no more.
type lineMsg struct {
	b   []byte
	err error
}

func startProc(cmd *exec.Cmd) (*proc, error) {
	var pipes [6]*os.File // stdin r/w, stdout r/w, stderr r/w
	for i := 0; i < len(pipes); i += 2 {
		var err error
		if pipes[i], pipes[i+1], err = os.Pipe(); err != nil {
			closeFiles(pipes[:i]...)
			return nil, fmt.Errorf("start: %w", err)
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes[0], pipes[3], pipes[5]
	err := cmd.Start()
	closeFiles(pipes[0], pipes[3], pipes[5]) // the child holds its own copies
	if err != nil {
		closeFiles(pipes[1], pipes[2], pipes[4])
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p := &proc{pid: cmd.Process.Pid, stdin: pipes[1], stdout: pipes[2], stderrR: pipes[4],
		lines: make(chan lineMsg, 1), dead: make(chan struct{}), exited: make(chan struct{}),
		stderr: &target.TailBuffer{Max: stderrKeep}, errDone: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go func() {
		defer close(p.errDone)
		_, _ = io.Copy(p.stderr, p.stderrR)
	}()
	go p.read()
	return p, nil
}

// read sends standard output's lines until EOF, an error or a line over
// the cap, then stops.
func (p *proc) read() {
	br := bufio.NewReaderSize(p.stdout, 64<<10)
	for {
		line, err := readLine(br, MaxAnswerBytes)
		if len(line) > 0 || err == nil {
			select {
			case p.lines <- lineMsg{b: line}:
			case <-p.dead:
				return
			}
		}
		if err != nil {
			select {
			case p.lines <- lineMsg{err: err}:
			case <-p.dead:
			}
			return
		}
	}
}

// readLine reads one line without its end ("\n" or "\r\n"); at EOF it
// returns what it has (possibly nothing) with io.EOF.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 { // +1: the newline
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			line = line[:len(line)-1]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return line, err
		}
	}
}

// usable reports whether p can take a request: alive, with nothing
// printed since its last answer.
func (p *proc) usable() bool {
	select {
	case <-p.exited:
		return false
	default:
	}
	return len(p.lines) == 0
}

// exchange writes req and waits for one line of answer. Any error means
// the process must be discarded.
func (p *proc) exchange(ctx context.Context, req []byte) ([]byte, error) {
	wrote := make(chan error, 1)
	go func() {
		_, err := p.stdin.Write(req) // a kill ends a blocked write
		wrote <- err
	}()
	for {
		select {
		case err := <-wrote:
			wrote = nil
			if err != nil {
				return nil, p.failure(fmt.Sprintf("could not write the request: %v", err))
			}
		case m := <-p.lines:
			if m.err != nil {
				if errors.Is(m.err, errLineTooLong) {
					return nil, m.err
				}
				// Usually it exited: give it a moment to be reaped, so
				// that the error says so and gives its exit status.
				select {
				case <-p.exited:
					return nil, p.failure("exited without answering")
				case <-time.After(drainGrace):
					return nil, p.failure("closed its standard output without answering")
				}
			}
			if wrote != nil {
				// The write's result may just not be in yet; a program
				// that answers without reading the whole request has the
				// timeout to read it.
				select {
				case err := <-wrote:
					if err != nil {
						return nil, p.failure(fmt.Sprintf("could not write the request: %v", err))
					}
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return m.b, nil
		case <-p.exited:
			// Its answer may still be in the pipe.
			p.killGroup()
			select {
			case m := <-p.lines:
				if m.err == nil && wrote == nil {
					return m.b, nil
				}
			case <-time.After(drainGrace):
			}
			return nil, p.failure("exited without answering")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// failure kills the process group and describes how the process ended:
// its exit status and the tail of its standard error.
func (p *proc) failure(what string) error {
	p.killGroup()
	msg := fmt.Sprintf("process %d %s", p.pid, what)
	select {
	case <-p.exited:
		if p.waitErr != nil {
			msg += " (" + p.waitErr.Error() + ")"
		} else {
			msg += " (exit status 0)"
		}
	case <-time.After(drainGrace):
	}
	select {
	case <-p.errDone:
	case <-time.After(drainGrace):
	}
	if s := tailOf(p.stderr.String()); s != "" {
		msg += "; stderr: " + s
	}
	return errors.New(msg)
}

func (p *proc) killGroup() { _ = syscall.Kill(-p.pid, syscall.SIGKILL) }

// kill kills the process group and releases the pipes; safe to repeat.
func (p *proc) kill() {
	p.once.Do(func() {
		p.killGroup()
		close(p.dead)
		closeFiles(p.stdin, p.stdout, p.stderrR)
	})
}

// stop ends p at the end of a run: EOF on its standard input, then a
// grace period to exit, then the kill.
func (p *proc) stop() {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
	}
	p.kill()
}

// jsonLine reports whether line, trimmed, is valid JSON.
func jsonLine(line []byte) bool {
	return json.Valid(bytes.TrimSpace(line))
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
