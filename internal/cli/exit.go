package cli

import (
	"errors"
	"fmt"

	"github.com/evalrun/evalrun"
)

// The exit codes of evalrun.
const (
	// ExitOK: the run completed with no target or scorer errors and every
	// fail_on threshold holds (or a command succeeded).
	ExitOK = 0
	// ExitFailed: the run finished but with errors or a breached threshold,
	// or an operation failed (storage, I/O).
	ExitFailed = 1
	// ExitUsage: bad usage, configuration or input; nothing was run.
	ExitUsage = 2
	// ExitInterrupted: interrupted by a signal or cancelled; the partial
	// reports were written and the run can be resumed.
	ExitInterrupted = 130
)

// ErrInterrupted is the cancellation cause main gives the context on the
// first SIGINT or SIGTERM.
var ErrInterrupted = errors.New("interrupted")

// errCanceled is the cause of a run cancelled through the store (evalrun
// runs cancel from another process).
var errCanceled = errors.New("canceled with evalrun runs cancel")

// errFailed says a run finished with errors or a breached threshold; the
// reasons were already printed.
var errFailed = errors.New("the run finished with errors or a breached threshold")

// exitError carries an exit code; when quiet, its message was already
// printed.
type exitError struct {
	code  int
	quiet bool
	err   error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as bad usage (exit code 2).
func usageError(err error) error {
	var ee *exitError
	if err == nil || errors.As(err, &ee) || errors.Is(err, evalrun.ErrInvalid) {
		return err
	}
	return &exitError{code: ExitUsage, err: err}
}

// quietExit returns an error with the given exit code whose message has
// already been printed.
func quietExit(code int, err error) error {
	return &exitError{code: code, quiet: true, err: err}
}

// silent reports whether err's message was already printed.
func silent(err error) bool {
	var ee *exitError
	return errors.As(err, &ee) && ee.quiet
}

// ExitCode maps an error to evalrun's exit code, the one place that does:
// nil is 0; an interruption 130; bad usage, configuration or input
// (evalrun.ErrInvalid, evalrun.ErrNotFound) 2; a run that finished with
// errors, and every other error, 1.
func ExitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, ErrInterrupted), errors.Is(err, errCanceled):
		return ExitInterrupted
	case errors.Is(err, evalrun.ErrInvalid), errors.Is(err, evalrun.ErrNotFound):
		return ExitUsage
	}
	return ExitFailed
}

// invalidf returns a bad-input error (exit code 2) with a message for
// people.
func invalidf(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}
