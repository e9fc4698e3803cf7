package targettest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/retry"
)

// Attempts runs exec under a retry policy of maxRetries retries that waits
// on clock, each attempt bounded by attemptTimeout when > 0, and returns
// the attempt count, the final error and every attempt's error.
func Attempts(t testing.TB, clock evalrun.Clock, maxRetries int, attemptTimeout time.Duration, exec func(ctx context.Context) error) (int, error, []error) {
	t.Helper()
	var errs []error
	p := retry.Policy{MaxRetries: maxRetries, Delay: time.Millisecond, Clock: clock, Jitter: func(time.Duration) time.Duration { return 0 }}
	n, err := retry.Do(context.Background(), p, func(ctx context.Context, _ int) error {
		if attemptTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, attemptTimeout)
			defer cancel()
		}
		err := exec(ctx)
		errs = append(errs, err)
		return err
	})
	return n, err, errs
}

// WantKind fails the test unless err is an *evalrun.Error of kind, and
// returns it.
func WantKind(t testing.TB, err error, kind evalrun.ErrorKind) *evalrun.Error {
	t.Helper()
	var ee *evalrun.Error
	if !errors.As(err, &ee) {
		t.Fatalf("error %v (%T) is not an *evalrun.Error", err, err)
	}
	if ee.Kind != kind {
		t.Fatalf("kind = %q, want %q (error: %v)", ee.Kind, kind, err)
	}
	return ee
}
