package openai

import (
	"context"
	"encoding/json"
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
	now   time.Time
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

// fakeAPI is an OpenAI-compatible server serving the n-th request with
// handlers[n] (the last for later ones). It records request bodies and
// headers.
type fakeAPI struct {
	*httptest.Server
	count atomic.Int64

	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	paths   []string
}

func newFakeAPI(t *testing.T, handlers ...http.HandlerFunc) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(f.count.Add(1)) - 1
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.headers = append(f.headers, r.Header.Clone())
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		handlers[min(n, len(handlers)-1)](w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) Requests() int { return int(f.count.Load()) }

func (f *fakeAPI) Body(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[i]
}

func (f *fakeAPI) Header(i int) http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[i]
}

func (f *fakeAPI) Path(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paths[i]
}

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

// completion is a chat completion reply with content and usage.
func completion(content string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	return string(b)
}

func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

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

// env returns a LookupEnv over a fixed map.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
