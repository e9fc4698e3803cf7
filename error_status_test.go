package evalrun_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/evalrun/evalrun"
)

// An *Error re-wrapped with context and the same status (as the judge and
// embedding scorers do to attach usage) says "HTTP 500:" once.
func TestErrorStatusPrefixOnce(t *testing.T) {
	inner := &evalrun.Error{Kind: evalrun.ErrorTransient, StatusCode: 500, Err: errors.New("internal server error")}
	wrapped := fmt.Errorf("llm_judge: judge model (3 attempts): %w", inner)
	outer := &evalrun.Error{Kind: inner.Kind, StatusCode: inner.StatusCode, Err: wrapped}
	if got, want := outer.Error(), "llm_judge: judge model (3 attempts): HTTP 500: internal server error"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := inner.Error(), "HTTP 500: internal server error"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	plain := &evalrun.Error{StatusCode: 404, Err: fmt.Errorf("wrapped: %w", errors.New("not found"))}
	if got, want := plain.Error(), "HTTP 404: wrapped: not found"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// Invalidf matches ErrInvalid without "invalid" tacked on the message.
func TestInvalidf(t *testing.T) {
	cause := errors.New("missing port")
	err := evalrun.Invalidf("--addr %q: want HOST:PORT (%w)", "127.0.0.1", cause)
	if !errors.Is(err, evalrun.ErrInvalid) || !errors.Is(err, cause) {
		t.Errorf("%v does not match ErrInvalid and its cause", err)
	}
	if got, want := err.Error(), `--addr "127.0.0.1": want HOST:PORT (missing port)`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
