package target

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

var testItem = &evalrun.Item{
	ID:       "q1",
	Input:    json.RawMessage(`"What is 2+2?"`),
	Expected: json.RawMessage(`"4"`),
	Metadata: map[string]any{"lang": "en"},
}

func newHTTPTarget(t *testing.T, cfg HTTPConfig) *HTTP {
	t.Helper()
	h, err := NewHTTP(cfg)
	if err != nil {
		t.Fatalf("NewHTTP: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func TestHTTPDefaultBodyAndOutputPath(t *testing.T) {
	type got struct {
		method, contentType, auth string
		body                      map[string]json.RawMessage
	}
	gotc := make(chan got, 1)
	srv := newSequenceServer(t, func(w http.ResponseWriter, r *http.Request) {
		var g got
		g.method, g.contentType, g.auth = r.Method, r.Header.Get("Content-Type"), r.Header.Get("Authorization")
		if err := json.NewDecoder(r.Body).Decode(&g.body); err != nil {
			t.Errorf("decode request: %v", err)
		}
		gotc <- g
		reply(200, `{"answer": {"text": "4"}, "extra": 1}`)(w, r)
	})
	h := newHTTPTarget(t, HTTPConfig{URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer x"}, Output: "answer.text"})
	out, err := h.Execute(context.Background(), testItem)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if string(out.Value) != `"4"` {
		t.Errorf("output = %s, want \"4\"", out.Value)
	}
	g := <-gotc
	if g.method != "POST" || g.contentType != "application/json" || g.auth != "Bearer x" {
		t.Errorf("request method=%q content-type=%q auth=%q", g.method, g.contentType, g.auth)
	}
	if string(g.body["id"]) != `"q1"` || string(g.body["input"]) != `"What is 2+2?"` || len(g.body) != 2 {
		t.Errorf("request body = %v, want id and input only", g.body)
	}
}

func TestHTTPWholeBodyAndTemplate(t *testing.T) {
	bodies := make(chan string, 1)
	srv := newSequenceServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- string(b)
		reply(200, "{\"a\": [1, 2]}\n")(w, r)
	})
	h := newHTTPTarget(t, HTTPConfig{
		URL:    srv.URL,
		Method: "put",
		Body:   `{"q": {{ json .Input }}, "lang": {{ json .Metadata.lang }}, "raw": {{ .InputJSON }}, "id": "{{ .ID }}"}`,
	})
	out, err := h.Execute(context.Background(), testItem)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if string(out.Value) != `{"a": [1, 2]}` {
		t.Errorf("output = %q, want the whole body without the trailing newline", out.Value)
	}
	want := `{"q": "What is 2+2?", "lang": "en", "raw": "What is 2+2?", "id": "q1"}`
	if got := <-bodies; got != want {
		t.Errorf("body = %s, want %s", got, want)
	}
}

func TestHTTPTemplateMissingKeyIsPermanent(t *testing.T) {
	srv := newSequenceServer(t, reply(200, `{}`))
	h := newHTTPTarget(t, HTTPConfig{URL: srv.URL, Body: `{{ .Metadata.nope }}`})
	_, err := h.Execute(context.Background(), testItem)
	wantKind(t, err, evalrun.ErrorPermanent)
	if srv.Requests() != 0 {
		t.Errorf("requests = %d, want 0", srv.Requests())
	}
}

func TestHTTPPlainTextBody(t *testing.T) {
	srv := newSequenceServer(t, reply(200, "just text\n", "Content-Type", "text/plain; charset=utf-8"))
	h := newHTTPTarget(t, HTTPConfig{URL: srv.URL})
	out, err := h.Execute(context.Background(), testItem)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Value) != `"just text"` {
		t.Errorf("output = %s", out.Value)
	}
}

func TestHTTP429RetryAfterSeconds(t *testing.T) {
	srv := newSequenceServer(t, reply(429, `{"error":"slow down"}`, "Retry-After", "7"), reply(200, `{"answer":"4"}`))
	clock := newFakeClock()
	h := newHTTPTarget(t, HTTPConfig{URL: srv.URL, Output: "answer", Clock: clock})
	n, err, errs := attemptsOf(t, clock, 3, 0, func(ctx context.Context) error {
		_, err := h.Execute(ctx, testItem)
		return err
	})
	if err != nil || n != 2 {
		t.Fatalf("attempts = %d, err = %v; want 2 attempts (retry count 1), no error", n, err)
	}
	e := wantKind(t, errs[0], evalrun.ErrorTransient)
	if e.StatusCode != 429 || e.RetryAfter != 7*time.Second {
		t.Errorf("first error: status %d, RetryAfter %v; want 429, 7s", e.StatusCode, e.RetryAfter)
	}
	if w := clock.Waits(); len(w) != 1 || w[0] != 7*time.Second {
		t.Errorf("waits = %v, want [7s]", w)
	}
}

func TestHTTP429RetryAfterDate(t *testing.T) {
	date := fixedNow.Add(30 * time.Second).Format(http.TimeFormat)
	srv := newSequenceServer(t, reply(429, `{}`, "Retry-After", date))
	clock := newFakeClock()
	h := newHTTPTarget(t, HTTPConfig{URL: srv.URL, Clock: clock})
	n, err, _ := attemptsOf(t, clock, 1, 0, func(ctx context.Context) error {
		_, err := h.Execute(ctx, testItem)
		return err
	})
	if n != 2 || srv.Requests() != 2 {
		t.Fatalf("attempts = %d, requests = %d; want 2, 2", n, srv.Requests())
	}
	e := wantKind(t, err, evalrun.ErrorTransient)
	if e.StatusCode != 429 || e.RetryAfter != 30*time.Second {
		t.Errorf("status %d, RetryAfter %v; want 429, 30s", e.StatusCode, e.RetryAfter)
	}
	if w := clock.Waits(); len(w) != 1 || w[0] != 30*time.Second {
		t.Errorf("waits = %v, want [30s]", w)
	}
}

func TestHTTP500ThenSuccess(t *testing.T) {
	srv := newSequenceServer(t, reply(500, `oops`), reply(200, `{"answer":"4"}`))
	clock := newFakeClock()
	h := newHTTPTarget(t, HTTPConfig{URL: srv.URL, Output: "answer"})
	var out evalrun.Output
	n, err, errs := attemptsOf(t, clock, 3, 0, func(ctx context.Context) error {
		var err error
		out, err = h.Execute(ctx, testItem)
		return err
	})
	if err != nil || n != 2 || srv.Requests() != 2 {
		t.Fatalf("attempts = %d, requests = %d, err = %v; want 2, 2, nil", n, srv.Requests(), err)
	}
	if e := wantKind(t, errs[0], evalrun.ErrorTransient); e.StatusCode != 500 {
		t.Errorf("status = %d", e.StatusCode)
	}
	if string(out.Value) != `"4"` {
		t.Errorf("output = %s", out.Value)
	}
}

func TestHTTPHangPastAttemptTimeout(t *testing.T) {
	srv := newSequenceServer(t, hang, reply(200, `{"answer":"4"}`))
	clock := newFakeClock()
	h := newHTTPTarget(t, HTTPConfig{URL: srv.URL, Output: "answer"})
	n, err, errs := attemptsOf(t, clock, 2, 100*time.Millisecond, func(ctx context.Context) error {
		_, err := h.Execute(ctx, testItem)
		return err
	})
	if err != nil || n != 2 {
		t.Fatalf("attempts = %d, err = %v; want 2, nil", n, err)
	}
	wantKind(t, errs[0], evalrun.ErrorTransient)
	if !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Errorf("first error %v does not wrap context.DeadlineExceeded", errs[0])
	}
}

func TestHTTPCanceledIsCanceled(t *testing.T) {
	srv := newSequenceServer(t, hang)
	h := newHTTPTarget(t, HTTPConfig{URL: srv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := h.Execute(ctx, testItem)
	wantKind(t, err, evalrun.ErrorCanceled)
}

func TestHTTPConnectionReset(t *testing.T) {
	srv := newSequenceServer(t, reset(t), reply(200, `{"answer":"4"}`))
	clock := newFakeClock()
	h := newHTTPTarget(t, HTTPConfig{URL: srv.URL, Output: "answer"})
	n, err, errs := attemptsOf(t, clock, 3, 0, func(ctx context.Context) error {
		_, err := h.Execute(ctx, testItem)
		return err
	})
	if err != nil || n != 2 || srv.Requests() != 2 {
		t.Fatalf("attempts = %d, requests = %d, err = %v; want 2, 2, nil", n, srv.Requests(), err)
	}
	wantKind(t, errs[0], evalrun.ErrorTransient)
}

func TestHTTPConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	h := newHTTPTarget(t, HTTPConfig{URL: "http://" + addr + "/x"})
	_, err = h.Execute(context.Background(), testItem)
	wantKind(t, err, evalrun.ErrorTransient)
}

// permanentOnce asserts that a permanent error is not retried: one
// attempt, one request, whatever the retry budget.
func permanentOnce(t *testing.T, srv *sequenceServer, h *HTTP) error {
	t.Helper()
	n, err, _ := attemptsOf(t, newFakeClock(), 3, 0, func(ctx context.Context) error {
		_, err := h.Execute(ctx, testItem)
		return err
	})
	if n != 1 || srv.Requests() != 1 {
		t.Fatalf("attempts = %d, requests = %d; want 1, 1 (never retried)", n, srv.Requests())
	}
	wantKind(t, err, evalrun.ErrorPermanent)
	return err
}

func TestHTTPMalformed200(t *testing.T) {
	for _, tc := range []struct{ name, body, path string }{
		{"invalid JSON", `{"answer": `, ""},
		{"invalid JSON with path", `{"answer": `, "answer"},
		{"path not found", `{"other": 1}`, "answer"},
		{"empty body", ``, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newSequenceServer(t, reply(200, tc.body))
			h := newHTTPTarget(t, HTTPConfig{URL: srv.URL, Output: tc.path})
			err := permanentOnce(t, srv, h)
			if !errors.Is(err, ErrMalformedResponse) {
				t.Errorf("error %v does not wrap ErrMalformedResponse", err)
			}
		})
	}
}

func TestHTTP4xxIsPermanent(t *testing.T) {
	srv := newSequenceServer(t, reply(404, `{"error":"no route"}`))
	h := newHTTPTarget(t, HTTPConfig{URL: srv.URL})
	err := permanentOnce(t, srv, h)
	if e := wantKind(t, err, evalrun.ErrorPermanent); e.StatusCode != 404 {
		t.Errorf("status = %d", e.StatusCode)
	}
}

func TestHTTPOversizedBody(t *testing.T) {
	big := `{"answer":"` + strings.Repeat("x", 2000) + `"}`
	chunked := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		w.(http.Flusher).Flush() // no Content-Length: the cap applies while reading
		_, _ = io.WriteString(w, big)
	}
	for name, handler := range map[string]http.HandlerFunc{"content-length": reply(200, big), "chunked": chunked} {
		t.Run(name, func(t *testing.T) {
			srv := newSequenceServer(t, handler)
			h := newHTTPTarget(t, HTTPConfig{URL: srv.URL, MaxResponseBytes: 1024})
			err := permanentOnce(t, srv, h)
			if !errors.Is(err, ErrResponseTooLarge) {
				t.Errorf("error %v does not wrap ErrResponseTooLarge", err)
			}
		})
	}
}

func TestHTTPInvalidUTF8IsReported(t *testing.T) {
	srv := newSequenceServer(t, reply(200, "{\"answer\":\"caf\xe9\"}"))
	h := newHTTPTarget(t, HTTPConfig{URL: srv.URL, Output: "answer"})
	err := permanentOnce(t, srv, h)
	if !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("error %v does not wrap ErrInvalidUTF8", err)
	}
}

func TestHTTPConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  HTTPConfig
		key  string
	}{
		{"no url", HTTPConfig{}, "url"},
		{"bad scheme", HTTPConfig{URL: "ftp://x/y"}, "url"},
		{"no host", HTTPConfig{URL: "http:///y"}, "url"},
		{"bad method", HTTPConfig{URL: "http://x", Method: "PO ST"}, "method"},
		{"bad header", HTTPConfig{URL: "http://x", Headers: map[string]string{"Bad Name": "v"}}, "headers"},
		{"header newline", HTTPConfig{URL: "http://x", Headers: map[string]string{"X": "a\r\nb"}}, "headers"},
		{"negative max", HTTPConfig{URL: "http://x", MaxResponseBytes: -1}, "max_response_bytes"},
		{"bad template", HTTPConfig{URL: "http://x", Body: "{{ .Input "}, "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.key {
				t.Fatalf("Validate() = %v, want a ConfigError for %q", err, tc.key)
			}
			if !errors.Is(err, evalrun.ErrInvalid) {
				t.Errorf("error does not match evalrun.ErrInvalid")
			}
			if _, err := NewHTTP(tc.cfg); err == nil {
				t.Errorf("NewHTTP accepted bad config")
			}
		})
	}
	if err := (&HTTPConfig{URL: "https://example.com/a", Method: "get", Output: "a.b"}).Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
}

// Bodies are read into pooled buffers: an output must stay what its own
// response said after later responses reuse the buffer, with an output
// path and without.
func TestHTTPOutputsDoNotShareTheBodyBuffer(t *testing.T) {
	for _, path := range []string{"output", ""} {
		srv := newSequenceServer(t,
			reply(200, `{"output": "`+strings.Repeat("a", 3000)+`\n"}`),
			reply(200, `{"output": "`+strings.Repeat("b", 3000)+`\n"}`))
		h := newHTTPTarget(t, HTTPConfig{URL: srv.URL, Output: path})
		first, err := h.Execute(context.Background(), testItem)
		if err != nil {
			t.Fatalf("path %q: Execute: %v", path, err)
		}
		want := string(first.Value)
		for range 3 {
			if _, err := h.Execute(context.Background(), testItem); err != nil {
				t.Fatalf("path %q: Execute: %v", path, err)
			}
		}
		if got := string(first.Value); got != want || !strings.Contains(got, "aaaa") {
			t.Errorf("path %q: first output changed after later requests: %.40q…, was %.40q…", path, got, want)
		}
	}
}
