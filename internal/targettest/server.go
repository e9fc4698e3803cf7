package targettest

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// Server is an HTTP test server serving the n-th request (from 0) with the
// n-th of its handlers, the last handler for every later request. It counts
// the requests and records each one's path, headers and body (decoded as a
// JSON object, nil when it is not one); handlers still read the whole body.
// Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server
	count atomic.Int64

	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	paths   []string
}

// NewServer starts a [Server] serving handlers (at least one), closed when
// the test ends.
func NewServer(t testing.TB, handlers ...http.HandlerFunc) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.count.Add(1)) - 1
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		handlers[min(n, len(handlers)-1)](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// Requests returns the number of requests received so far.
func (s *Server) Requests() int { return int(s.count.Load()) }

// Body returns the JSON object the i-th request (from 0) sent.
func (s *Server) Body(i int) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[i]
}

// Header returns the headers of the i-th request (from 0).
func (s *Server) Header(i int) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[i]
}

// Path returns the URL path of the i-th request (from 0).
func (s *Server) Path(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paths[i]
}

// Reply returns a handler writing status and body with optional headers
// given as key, value pairs; the Content-Type is application/json unless
// given.
func Reply(status int, body string, kv ...string) http.HandlerFunc {
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

// Hang blocks until the client goes away. It reads the request body first:
// the server notices a closed connection only once the body is consumed.
func Hang(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// Reset returns a handler that hijacks the connection and closes it with
// an RST.
func Reset(t testing.TB) http.HandlerFunc {
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
