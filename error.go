package evalrun

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors, matched with errors.Is. The CLI maps them to exit codes
// and the web viewer to HTTP statuses.
var (
	// ErrNotFound: a dataset, version, run or item does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: bad usage, configuration or input; nothing was run.
	ErrInvalid = errors.New("invalid")
)

// ErrorKind classifies the error of an item or a scorer. The engine retries
// only [ErrorTransient]; reports group failures by kind.
type ErrorKind string

// The error kinds.
const (
	// ErrorTransient: worth retrying (connection refused or reset,
	// unexpected EOF, one attempt's timeout, HTTP 429 and 5xx).
	ErrorTransient ErrorKind = "transient"
	// ErrorPermanent: retrying cannot help (other 4xx, a malformed 200, an
	// oversized response, a Go error of unknown class).
	ErrorPermanent ErrorKind = "permanent"
	// ErrorTimeout: the item's deadline (item_timeout) expired.
	ErrorTimeout ErrorKind = "timeout"
	// ErrorTripwire: a workflow guard stopped the item.
	ErrorTripwire ErrorKind = "tripwire"
	// ErrorPanic: the target or scorer panicked.
	ErrorPanic ErrorKind = "panic"
	// ErrorInvalidOutput: the target returned no output and no error, or a
	// scorer returned a non-number, a NaN or a value outside [0,1].
	ErrorInvalidOutput ErrorKind = "invalid_output"
	// ErrorCanceled: the run was cancelled while the item ran; such an
	// item is skipped, not failed, and is not stored.
	ErrorCanceled ErrorKind = "canceled"
)

// Invalidf returns an error with the formatted message (%w wraps as in
// fmt.Errorf) that matches [ErrInvalid] under errors.Is without appending
// its text: people read "bad size \"abc\": want a whole number", not
// "…: invalid".
func Invalidf(format string, args ...any) error {
	return &invalidError{err: fmt.Errorf(format, args...)}
}

type invalidError struct{ err error }

func (e *invalidError) Error() string { return e.err.Error() }

// Unwrap returns the formatted error and ErrInvalid.
func (e *invalidError) Unwrap() []error { return []error{e.err, ErrInvalid} }

// Error is a classified error of a target, a scorer or a model call.
type Error struct {
	Kind ErrorKind
	// StatusCode is the HTTP status, when the error came from a response.
	StatusCode int
	// RetryAfter is how long the server asked to wait (Retry-After), or 0.
	RetryAfter time.Duration
	// Usage is what the failed attempt consumed, when known, so a report's
	// usage includes spend on failures.
	Usage Usage
	// Trajectory is what an agent did before it failed (the calls up to a
	// tool no mock answers, the turns past max_steps), so that the failed
	// item's result shows it; nil otherwise.
	Trajectory *Trajectory
	Err        error
}

// Error returns the message of the wrapped error, prefixed by the HTTP
// status when there is one and the wrapped error does not already say it
// (an *Error re-wrapped with more context keeps one "HTTP 500:", not two).
func (e *Error) Error() string {
	msg := "unknown error"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	var inner *Error
	if e.StatusCode != 0 && !(errors.As(e.Err, &inner) && inner.StatusCode != 0) {
		return fmt.Sprintf("HTTP %d: %s", e.StatusCode, msg)
	}
	return msg
}

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// Transient wraps err as a transient (retryable) error. A nil err gives nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: ErrorTransient, Err: err}
}

// Permanent wraps err as a permanent error. A nil err gives nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: ErrorPermanent, Err: err}
}

// Errorf returns a new *Error of the given kind with a formatted message
// (%w wraps as in fmt.Errorf).
func Errorf(kind ErrorKind, format string, args ...any) error {
	return &Error{Kind: kind, Err: fmt.Errorf(format, args...)}
}

// KindOf returns the kind of err: the Kind of the outermost *Error in its
// chain, and [ErrorPermanent] for any other non-nil error. It returns ""
// for nil.
func KindOf(err error) ErrorKind {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Kind != "" {
		return e.Kind
	}
	return ErrorPermanent
}

// IsTransient reports whether err is worth retrying.
func IsTransient(err error) bool { return KindOf(err) == ErrorTransient }

// RetryAfterOf returns the Retry-After carried by err, or 0.
func RetryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// UsageOf returns the usage carried by err (a failed attempt's spend).
func UsageOf(err error) Usage {
	var e *Error
	if errors.As(err, &e) {
		return e.Usage
	}
	return Usage{}
}

// TrajectoryOf returns the trajectory carried by err (see [Error]), or nil.
func TrajectoryOf(err error) *Trajectory {
	var e *Error
	if errors.As(err, &e) {
		return e.Trajectory
	}
	return nil
}
