package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultHangMax caps a hung request when [Config.HangMax] is zero.
const DefaultHangMax = 60 * time.Second

// maxBody bounds a request body the server reads.
const maxBody = 16 << 20

// Config configures a [Server]. The zero value answers every request at once,
// with no fault and no padding.
type Config struct {
	// Latency is how long every request waits before it is answered (or
	// fails). A client that gives up earlier ends the wait.
	Latency time.Duration
	// OutputSize pads a string output (the assistant content of a chat
	// completion, the output of /echo) to at least this many bytes: the
	// output, a newline, then 'x's. 0 means no padding.
	OutputSize int
	// P429, P500, PHang, PReset and PMalformed are the probabilities, each
	// in [0,1] and summing to at most 1, that a request gets that fault
	// instead of its answer: 429 with a Retry-After header, 500, no answer
	// until the client gives up (at most HangMax, then 504), a connection
	// reset, or a 200 whose JSON body is cut short.
	P429, P500, PHang, PReset, PMalformed float64
	// RetryAfter is the Retry-After of a 429, in whole seconds (rounded
	// down); 0 sends "0".
	RetryAfter time.Duration
	// HangMax caps a hang; 0 means DefaultHangMax.
	HangMax time.Duration
	// Seed seeds the fault draws: the same seed gives the same sequence
	// of faults over the sequence of requests.
	Seed uint64
}

// Validate reports whether the probabilities are each in [0,1] and sum to at
// most 1, and the durations and size are not negative.
func (c Config) Validate() error {
	var errs []error
	sum := 0.0
	for _, p := range []struct {
		name string
		v    float64
	}{{"p429", c.P429}, {"p500", c.P500}, {"phang", c.PHang}, {"preset", c.PReset}, {"pmalformed", c.PMalformed}} {
		if !(p.v >= 0 && p.v <= 1) {
			errs = append(errs, fmt.Errorf("%s %v: must be in [0,1]", p.name, p.v))
		}
		sum += p.v
	}
	if sum > 1+1e-9 {
		errs = append(errs, fmt.Errorf("fault probabilities sum to %v: must be at most 1", sum))
	}
	if c.Latency < 0 || c.RetryAfter < 0 || c.HangMax < 0 {
		errs = append(errs, errors.New("latency, retry-after and hang-max must not be negative"))
	}
	if c.OutputSize < 0 {
		errs = append(errs, errors.New("output size must not be negative"))
	}
	return errors.Join(errs...)
}

// Fault is what a request gets instead of its normal answer.
type Fault int

// The faults, in the order their probability ranges are laid out over [0,1).
const (
	None Fault = iota
	TooManyRequests
	ServerError
	Hang
	Reset
	Malformed
)

// Stats are the server's counters since it started or was last reset.
// Requests to /stats are not counted.
type Stats struct {
	// Requests is the number of requests received.
	Requests int64 `json:"requests"`
	// InFlight is the number of requests being served now.
	InFlight int64 `json:"in_flight"`
	// PeakInFlight is the most requests ever served at the same time.
	PeakInFlight int64 `json:"peak_in_flight"`
	// Status counts the responses sent, by HTTP status code.
	Status map[string]int64 `json:"status"`
	// Hung, Resets and Malformed count those faults (a hang that the
	// client ended has no status).
	Hung      int64 `json:"hung"`
	Resets    int64 `json:"resets"`
	Malformed int64 `json:"malformed"`
}

// Server is the mock, an http.Handler. Create it with [New]; it is safe for
// concurrent use.
type Server struct {
	cfg Config
	mux *http.ServeMux
	pad string

	mu        sync.Mutex // guards rng and the counters below
	rng       *rand.Rand
	status    map[int]int64
	hung      int64
	resets    int64
	malformed int64

	requests atomic.Int64
	inFlight atomic.Int64
	peak     atomic.Int64
}

// New returns a server for cfg, or cfg's validation error.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.HangMax == 0 {
		cfg.HangMax = DefaultHangMax
	}
	s := &Server{
		cfg:    cfg,
		mux:    http.NewServeMux(),
		pad:    strings.Repeat("x", cfg.OutputSize),
		rng:    rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		status: map[int]int64{},
	}
	s.mux.HandleFunc("POST /v1/chat/completions", s.served(s.chat))
	s.mux.HandleFunc("POST /v1/embeddings", s.served(s.embeddings))
	s.mux.HandleFunc("POST /echo", s.served(s.echo))
	s.mux.HandleFunc("GET /stats", s.getStats)
	s.mux.HandleFunc("POST /stats/reset", s.resetStats)
	return s, nil
}

// ServeHTTP serves the mock's endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{
		Requests:     s.requests.Load(),
		InFlight:     s.inFlight.Load(),
		PeakInFlight: s.peak.Load(),
		Status:       make(map[string]int64, len(s.status)),
		Hung:         s.hung,
		Resets:       s.resets,
		Malformed:    s.malformed,
	}
	for code, n := range s.status {
		st.Status[strconv.Itoa(code)] = n
	}
	return st
}

// ResetStats zeroes the counters; the peak restarts from the requests in
// flight now. The fault sequence goes on where it was.
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests.Store(0)
	s.peak.Store(s.inFlight.Load())
	clear(s.status)
	s.hung, s.resets, s.malformed = 0, 0, 0
}

// draw picks the fault for the next request.
func (s *Server) draw() Fault {
	c := s.cfg
	if c.P429+c.P500+c.PHang+c.PReset+c.PMalformed == 0 {
		return None
	}
	s.mu.Lock()
	u := s.rng.Float64()
	s.mu.Unlock()
	for _, f := range []struct {
		p float64
		f Fault
	}{{c.P429, TooManyRequests}, {c.P500, ServerError}, {c.PHang, Hang}, {c.PReset, Reset}, {c.PMalformed, Malformed}} {
		if u < f.p {
			return f.f
		}
		u -= f.p
	}
	return None
}

func (s *Server) count(f func()) {
	s.mu.Lock()
	f()
	s.mu.Unlock()
}

// statusWriter records the status a handler sent.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// answer writes a normal response: a JSON value.
type answer func(body []byte) (any, int)

// served wraps an endpoint with the counters, the latency and the faults.
func (s *Server) served(h answer) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		n := s.inFlight.Add(1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		defer s.inFlight.Add(-1)

		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		fault := s.draw()
		w := &statusWriter{ResponseWriter: rw}
		defer func() {
			if w.code != 0 {
				s.count(func() { s.status[w.code]++ })
			}
		}()
		if err != nil {
			http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if !sleep(r.Context(), s.cfg.Latency) {
			return
		}
		switch fault {
		case TooManyRequests:
			w.Header().Set("Retry-After", strconv.Itoa(int(s.cfg.RetryAfter/time.Second)))
			writeJSON(w, http.StatusTooManyRequests, apiError("rate limit exceeded (mock)", "rate_limit_exceeded"))
			return
		case ServerError:
			writeJSON(w, http.StatusInternalServerError, apiError("internal error (mock)", "server_error"))
			return
		case Hang:
			s.count(func() { s.hung++ })
			if sleep(r.Context(), s.cfg.HangMax) {
				writeJSON(w, http.StatusGatewayTimeout, apiError("hung (mock)", "timeout"))
			}
			return
		case Reset:
			s.count(func() { s.resets++ })
			reset(w)
			return
		case Malformed:
			s.count(func() { s.malformed++ })
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"id":"mock","object":"chat.completion","choices":[{"index":0,"mess`)
			return
		}
		v, code := h(body)
		writeJSON(w, code, v)
	}
}

// sleep waits d or until ctx is done, reporting whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// reset closes the connection with an RST (SO_LINGER 0), or just closes it
// when it cannot be hijacked.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // net/http closes the connection
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	w.Write(b)
}

func apiError(msg, typ string) any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": typ}}
}

func (s *Server) getStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Stats())
}

func (s *Server) resetStats(w http.ResponseWriter, _ *http.Request) {
	s.ResetStats()
	writeJSON(w, http.StatusOK, s.Stats())
}
