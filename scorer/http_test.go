package scorer_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/retry"
	"github.com/evalrun/evalrun/scorer"
)

// waitClock ends every wait at once and records it.
type waitClock struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (c *waitClock) Now() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
func (c *waitClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}

// httpSetup starts a grading service answering with the responses in
// turn (the last one repeated) and returns an http scorer for it with two
// retries, the service's hit count and the clock.
func httpSetup(t *testing.T, timeout time.Duration, responses ...func(w http.ResponseWriter, r *http.Request)) (*scorer.HTTP, *atomic.Int32, *waitClock) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(hits.Add(1)) - 1
		responses[min(n, len(responses)-1)](w, r)
	}))
	t.Cleanup(srv.Close)
	clock := &waitClock{}
	s, err := scorer.NewHTTP(scorer.HTTPOptions{Name: "grader", URL: srv.URL + "/grade?api_key=s3cret-query",
		Headers: map[string]string{"Authorization": "Bearer s3cret-token-value"}, Timeout: timeout,
		Retry: retry.Policy{MaxRetries: 2, Delay: 100 * time.Millisecond, Clock: clock, Jitter: func(time.Duration) time.Duration { return 0 }},
		Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, &hits, clock
}

func status(code int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func TestHTTPScorerAnswers(t *testing.T) {
	t.Parallel()
	var got map[string]any
	var header http.Header
	s, _, _ := httpSetup(t, 0, func(w http.ResponseWriter, r *http.Request) {
		header = r.Header
		_ = json.NewDecoder(r.Body).Decode(&got)
		io.WriteString(w, `{"score": 0.75, "reason": "close enough"}`)
	})
	sc, err := s.Score(context.Background(), input("q1", `{"q": 1}`, `"four"`, `"4"`))
	if err != nil || sc.Value != 0.75 || sc.Reason != "close enough" {
		t.Fatalf("Score = %v, %v; want 0.75 close enough", sc, err)
	}
	b, _ := json.Marshal(got)
	if want := `{"expected_output":"4","id":"q1","input":{"q":1},"metadata":null,"output":"four","trajectory":null}`; string(b) != want {
		t.Errorf("request body = %s, want %s", b, want)
	}
	if header.Get("Authorization") != "Bearer s3cret-token-value" || header.Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v", header)
	}
	if tp := header.Get("Traceparent"); tp != "" {
		t.Errorf("traceparent %q sent with tracing off", tp)
	}
}

func TestHTTPScorerErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		timeout   time.Duration
		responses []func(http.ResponseWriter, *http.Request)
		hits      int32
		kind      evalrun.ErrorKind // "" for a score of 1
		says      string
		waits     []time.Duration
	}{
		{name: "500 retried", responses: []func(http.ResponseWriter, *http.Request){status(500, "overloaded"), status(200, "1")},
			hits: 2, waits: []time.Duration{100 * time.Millisecond}},
		{name: "429 honours Retry-After", responses: []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(429)
			}, status(200, `{"score": 1}`)},
			hits: 2, waits: []time.Duration{7 * time.Second}},
		{name: "500 until retries run out", responses: []func(http.ResponseWriter, *http.Request){status(503, "down")},
			hits: 3, kind: evalrun.ErrorTransient, says: "503 Service Unavailable: down",
			waits: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{name: "400 not retried", responses: []func(http.ResponseWriter, *http.Request){status(400, "bad request: token s3cret-token-value")},
			hits: 1, kind: evalrun.ErrorPermanent, says: "400 Bad Request"},
		{name: "timeout retried", timeout: 200 * time.Millisecond, responses: []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, r *http.Request) {
				// The server sees the client go only once the body is read.
				_, _ = io.Copy(io.Discard, r.Body)
				<-r.Context().Done()
			}},
			hits: 3, kind: evalrun.ErrorTransient, says: "no response within 200ms",
			waits: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{name: "garbage", responses: []func(http.ResponseWriter, *http.Request){status(200, "<html>oops</html>")},
			hits: 1, kind: evalrun.ErrorInvalidOutput, says: `the response was "<html>oops</html>"`},
		{name: "out of range", responses: []func(http.ResponseWriter, *http.Request){status(200, `{"score": 2}`)},
			hits: 1, kind: evalrun.ErrorInvalidOutput, says: "score 2 is outside [0,1]"},
		{name: "oversized body", responses: []func(http.ResponseWriter, *http.Request){status(200, strings.Repeat("1", scorer.MaxAnswerBytes+1))},
			hits: 1, kind: evalrun.ErrorInvalidOutput, says: "larger than 1048576 bytes"},
		{name: "body at the cap", responses: []func(http.ResponseWriter, *http.Request){
			status(200, `{"score": 1, "reason": "`+strings.Repeat("r", scorer.MaxAnswerBytes-30)+`"}`)},
			hits: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, hits, clock := httpSetup(t, tc.timeout, tc.responses...)
			sc, err := s.Score(context.Background(), input("q1", `"q"`, `"a"`, `"a"`))
			if tc.kind == "" {
				if err != nil || sc.Value != 1 {
					t.Errorf("Score = %v, %v; want 1", sc, err)
				}
			} else {
				if err == nil {
					t.Fatalf("Score = %v, want an error", sc)
				}
				if k := evalrun.KindOf(err); k != tc.kind {
					t.Errorf("kind = %s, want %s (%v)", k, tc.kind, err)
				}
				if !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), `http scorer "grader"`) {
					t.Errorf("error %q does not say %q", err, tc.says)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error %q shows a secret", err)
				}
			}
			if h := hits.Load(); h != tc.hits {
				t.Errorf("%d requests, want %d", h, tc.hits)
			}
			clock.mu.Lock()
			defer clock.mu.Unlock()
			if len(clock.waits) != len(tc.waits) {
				t.Fatalf("waits %v, want %v", clock.waits, tc.waits)
			}
			for i, w := range tc.waits {
				if clock.waits[i] != w {
					t.Errorf("wait %d = %s, want %s", i, clock.waits[i], w)
				}
			}
		})
	}
}

func TestHTTPScorerRedirects(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		io.WriteString(w, "1")
	}))
	defer other.Close()
	s, hits, _ := httpSetup(t, 0, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/grade" {
			http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
			return
		}
		if r.URL.Path == "/moved" && r.URL.Query().Get("far") == "" {
			http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
			return
		}
		io.WriteString(w, "1")
	})
	_, err := s.Score(context.Background(), input("q1", `"q"`, `"a"`, `"a"`))
	if err == nil || evalrun.KindOf(err) != evalrun.ErrorPermanent || !strings.Contains(err.Error(), "refusing a redirect") {
		t.Errorf("Score = %v, want a permanent refusal of the redirect", err)
	}
	if hits.Load() != 2 || elsewhere.Load() != 0 {
		t.Errorf("hits: %d here (want 2: a same-origin redirect is followed), %d elsewhere (want 0)", hits.Load(), elsewhere.Load())
	}
}

func TestHTTPScorerConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts scorer.HTTPOptions
		key  string
	}{
		{"no url", scorer.HTTPOptions{}, "url"},
		{"bad scheme", scorer.HTTPOptions{URL: "ftp://x"}, "url"},
		{"bad method", scorer.HTTPOptions{URL: "http://x", Method: "PO ST"}, "method"},
		{"bad header", scorer.HTTPOptions{URL: "http://x", Headers: map[string]string{"X": "a\nb"}}, "headers"},
		{"negative timeout", scorer.HTTPOptions{URL: "http://x", Timeout: -1}, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scorer.NewHTTP(tc.opts)
			wantConfigError(t, err, tc.key)
		})
	}
}
