package target

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/retry"
)

// fakeClock is a Clock frozen at now whose After fires at once and records
// the durations asked for.
type fakeClock struct {
	now time.Time

	mu    sync.Mutex
	waits []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- c.now.Add(d)
	return ch
}

func (c *fakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

var fixedNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// sequenceServer serves the n-th request (from 0) with handlers[n], the
// last handler for every later request, and counts requests.
type sequenceServer struct {
	*httptest.Server
	count atomic.Int64
}

func newSequenceServer(t *testing.T, handlers ...http.HandlerFunc) *sequenceServer {
	t.Helper()
	s := &sequenceServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.count.Add(1)) - 1
		handlers[min(n, len(handlers)-1)](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sequenceServer) Requests() int { return int(s.count.Load()) }

// reply returns a handler writing status and body with optional headers
// given as key, value pairs.
func reply(status int, body string, kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// hang blocks until the client goes away. It reads the request body first:
// the server notices a closed connection only once the body is consumed.
func hang(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// reset hijacks the connection and closes it with an RST.
func reset(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = conn.Close()
	}
}

// attemptsOf runs exec under a retry policy with a fake clock, each attempt
// bounded by attemptTimeout when > 0, and returns the attempt count, the
// final error and every attempt's error.
func attemptsOf(t *testing.T, clock *fakeClock, maxRetries int, attemptTimeout time.Duration, exec func(ctx context.Context) error) (int, error, []error) {
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

// wantKind fails the test unless err is an *evalrun.Error of kind.
func wantKind(t *testing.T, err error, kind evalrun.ErrorKind) *evalrun.Error {
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
