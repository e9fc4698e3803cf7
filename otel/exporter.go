package otel

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/evalrun/evalrun/internal/bounded"
)

// The exporter's defaults, as the OTLP exporter specification and the
// official Go exporter have them.
const (
	// DefaultExportTimeout bounds one export, its retries included, unless
	// OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT says otherwise.
	DefaultExportTimeout = 10 * time.Second
	// maxRetryTime bounds the retries of one export when neither the
	// timeout nor the caller's context does (a timeout of 0).
	maxRetryTime = time.Minute
	// maxBackoff caps the wait between two attempts without Retry-After.
	maxBackoff = 30 * time.Second
	// maxResponseBody is the most of a collector's answer read: a partial
	// success's message, or an error's body shown in the message. Past it
	// the answer is cut, never read whole.
	maxResponseBody = 64 << 10
	// maxShownBody is the most of an error's body put in a message.
	maxShownBody = 512
)

// exporterConfig is what the OTEL_EXPORTER_OTLP_* variables say about the
// export.
type exporterConfig struct {
	url     string // where to POST, password included
	shown   string // the same without its password, for messages
	headers http.Header
	timeout time.Duration // 0: only the caller's context bounds an export
	gzip    bool
	tls     *tls.Config // nil: the system's roots, no client certificate
}

// lookup returns the OTEL_EXPORTER_OTLP_TRACES_<key> variable if it is set
// (not blank), else OTEL_EXPORTER_OTLP_<key>, and the name of the one
// returned, for messages.
func lookup(getenv func(string) string, key string) (value, name string) {
	name = "OTEL_EXPORTER_OTLP_TRACES_" + key
	if v := strings.TrimSpace(getenv(name)); v != "" {
		return v, name
	}
	name = "OTEL_EXPORTER_OTLP_" + key
	return strings.TrimSpace(getenv(name)), name
}

// readConfig reads the exporter's variables through getenv and the files
// they name through readFile. A value that is set but wrong is an error
// naming the variable (never a header's value: it may be a secret).
func readConfig(getenv func(string) string, readFile func(string) ([]byte, error)) (exporterConfig, error) {
	u, err := endpointURL(getenv)
	if err != nil {
		return exporterConfig{}, err
	}
	c := exporterConfig{url: u.String(), shown: u.Redacted(), headers: http.Header{}, timeout: DefaultExportTimeout}
	if v, name := lookup(getenv, "HEADERS"); v != "" {
		if c.headers, err = parseHeaders(v); err != nil {
			return exporterConfig{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	if v, name := lookup(getenv, "TIMEOUT"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
			return exporterConfig{}, fmt.Errorf("%s=%q is not a number of milliseconds (e.g. 10000)", name, v)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v, name := lookup(getenv, "COMPRESSION"); strings.ToLower(v) {
	case "gzip":
		c.gzip = true
	case "", "none":
	default:
		return exporterConfig{}, fmt.Errorf("%s=%q: want gzip or none", name, v)
	}
	if u.Scheme != "https" {
		// The certificates are for TLS; an http endpoint has none to check.
		return c, nil
	}
	if v, name := lookup(getenv, "CERTIFICATE"); v != "" {
		pem, err := readFile(v)
		if err != nil {
			return exporterConfig{}, fmt.Errorf("%s: %w", name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return exporterConfig{}, fmt.Errorf("%s: %s holds no PEM certificate", name, v)
		}
		c.tls = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	certFile, certName := lookup(getenv, "CLIENT_CERTIFICATE")
	keyFile, keyName := lookup(getenv, "CLIENT_KEY")
	switch {
	case certFile == "" && keyFile == "":
	case certFile == "" || keyFile == "":
		return exporterConfig{}, fmt.Errorf("%s and %s go together: set both or neither", certName, keyName)
	default:
		certPEM, err := readFile(certFile)
		if err != nil {
			return exporterConfig{}, fmt.Errorf("%s: %w", certName, err)
		}
		keyPEM, err := readFile(keyFile)
		if err != nil {
			return exporterConfig{}, fmt.Errorf("%s: %w", keyName, err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return exporterConfig{}, fmt.Errorf("%s, %s: %w", certName, keyName, err)
		}
		if c.tls == nil {
			c.tls = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		c.tls.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// maxPEMFile bounds what is read of a certificate or key file: a bundle
// of every public CA is ~200 KB. A variable naming /dev/zero or a huge
// file by mistake is an error, not a read until memory runs out.
const maxPEMFile = 4 << 20

// readPEMFile reads the file a certificate variable names, at most
// maxPEMFile bytes of it.
func readPEMFile(name string) ([]byte, error) {
	b, err := bounded.ReadFile(name, maxPEMFile)
	if errors.Is(err, bounded.ErrTooLarge) {
		return nil, fmt.Errorf("%s is larger than %d MB: not a PEM file", name, maxPEMFile>>20)
	}
	return b, err
}

// parseHeaders parses the W3C-baggage-like list of the HEADERS variables,
// key=value,key2=value2, each value URL-decoded and trimmed, as the
// official exporter does. Its errors never show a value, nor an entry
// that does not parse: "Authorization: Bearer KEY" (a colon for the
// equals sign) is all key, and all secret.
func parseHeaders(s string) (http.Header, error) {
	h := http.Header{}
	for i, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || !validHeaderKey(k) {
			return nil, fmt.Errorf("entry %d (of the comma-separated list) is not key=value with a header name as key", i+1)
		}
		dv, err := url.PathUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("the value of %s is not URL-encoded correctly", k)
		}
		if strings.ContainsFunc(dv, func(r rune) bool { return r != '\t' && (r < 0x20 || r == 0x7f) }) {
			// net/http refuses such a value (RFC 9110) on every request:
			// say so now rather than fail (and retry) every export.
			return nil, fmt.Errorf("the value of %s holds a control character (a line break?) once URL-decoded", k)
		}
		h.Set(k, strings.TrimSpace(dv))
	}
	return h, nil
}

// validHeaderKey reports whether k is an HTTP token (RFC 9110).
func validHeaderKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range []byte(k) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// exporter is evalrun's OTLP/HTTP span exporter: an sdktrace.SpanExporter
// that writes the protobuf request itself (encoder) and posts it as the
// official otlptracehttp exporter would, without linking that exporter,
// whose configuration code imports gRPC whole (docs/benchmarks.md,
// *Tracing*). The span batcher (batcher.go) calls ExportSpans from one
// goroutine at a time; the mutex makes it safe anyway.
type exporter struct {
	cfg       exporterConfig
	client    *http.Client
	userAgent string
	handle    func(error) // reports a partial success: otel.Handle

	// retryBase is the first wait between two attempts without
	// Retry-After; each next wait doubles, up to maxBackoff, jittered.
	retryBase time.Duration

	// final is set for the flush at exit: a connection that fails there is
	// not retried (a collector that is down stays down for the seconds
	// the exit may wait), an answer asking to retry still is.
	final atomic.Bool

	stopped    atomic.Bool
	stop       context.Context // done when Shutdown is called
	cancelStop context.CancelFunc

	mu  sync.Mutex
	enc encoder
	gz  *gzip.Writer
	zbf bytes.Buffer
}

var errShutdown = errors.New("the exporter is shut down")

func newExporter(cfg exporterConfig, version string) *exporter {
	// Our own transport, like the official exporter's: a program that
	// changed http.DefaultTransport does not change where spans go.
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       cfg.tls,
	}
	stop, cancel := context.WithCancel(context.Background())
	ua := "evalrun"
	if version != "" {
		ua += "/" + version
	}
	return &exporter{
		cfg:        cfg,
		client:     &http.Client{Transport: tr, CheckRedirect: checkRedirect},
		userAgent:  ua + " (OTLP/HTTP exporter)",
		handle:     otel.Handle,
		retryBase:  time.Second,
		stop:       stop,
		cancelStop: cancel,
	}
}

// checkRedirect follows a redirect only when it repeats the POST with its
// body (307, 308): a 301, 302 or 303 would be followed with a GET without
// the spans, whose 200 would pass for a delivery. And only to the same
// scheme and host: net/http would send another host the user's headers
// (it drops Authorization and Cookie there, not x-api-key and the like)
// and the spans, or downgrade https to http. The 3xx answer is then the
// export's, an error.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if req.Method != via[0].Method || req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// ExportSpans posts spans to the collector in one request, retrying as
// [exporter.send] says, within ctx and the export timeout. A partial
// success (the collector rejected some spans) is reported through the
// error handler, and the export counts as done.
func (x *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if x.stopped.Load() {
		return errShutdown
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	body, n := x.enc.encode(spans)
	if n == 0 {
		return nil
	}
	if x.cfg.gzip {
		var err error
		if body, err = x.compress(body); err != nil {
			return fmt.Errorf("traces export: gzip: %w", err)
		}
	}
	if x.cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, x.cfg.timeout)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(x.stop, cancel)()
	if err := x.send(ctx, body, n); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

func (x *exporter) compress(body []byte) ([]byte, error) {
	x.zbf.Reset()
	if x.gz == nil {
		x.gz = gzip.NewWriter(&x.zbf)
	} else {
		x.gz.Reset(&x.zbf)
	}
	if _, err := x.gz.Write(body); err != nil {
		return nil, err
	}
	if err := x.gz.Close(); err != nil {
		return nil, err
	}
	return x.zbf.Bytes(), nil
}

// Shutdown stops the exporter: an export under way is cancelled, later
// ones fail. The span batcher calls it after its last export.
func (x *exporter) Shutdown(ctx context.Context) error {
	x.stopped.Store(true)
	x.cancelStop()
	x.client.CloseIdleConnections()
	return ctx.Err()
}

// send posts body (n spans) until the collector takes it. It retries, as
// the OTLP specification asks, answers 429, 502, 503 and 504 (waiting
// what Retry-After says, else an exponential backoff) and failed
// connections (not during the final flush), as long as ctx allows the
// wait: when the next attempt would come after ctx's deadline it gives up
// at once with the last error rather than wait for nothing.
func (x *exporter) send(ctx context.Context, body []byte, n int) error {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		retry, wait, err := x.post(ctx, body, n)
		if err != nil && ctx.Err() != nil {
			return x.ctxErr(ctx, err)
		}
		if !retry {
			return err
		}
		if wait < 0 {
			wait = x.backoff(attempt)
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return fmt.Errorf("%w (the next attempt would come after the export's deadline)", err)
		}
		if time.Since(start)+wait > maxRetryTime {
			return fmt.Errorf("%w (retried for %s)", err, time.Since(start).Round(time.Second))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return x.ctxErr(ctx, err)
		case <-t.C:
		}
	}
}

// ctxErr is the error of an export ctx ended: it wraps ctx's error (the
// caller tells a deadline from the rest) and says why in words.
func (x *exporter) ctxErr(ctx context.Context, last error) error {
	if x.stop.Err() != nil {
		return fmt.Errorf("%w: %w", errShutdown, last)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("the collector did not answer in time: %w", ctx.Err())
	}
	if errors.Is(last, ctx.Err()) {
		return last
	}
	return fmt.Errorf("%w: %w", ctx.Err(), last)
}

// backoff is the wait before attempt+1 without a Retry-After: retryBase
// doubled per attempt, capped, times a random factor in [0.5, 1.5).
func (x *exporter) backoff(attempt int) time.Duration {
	d := min(x.retryBase<<min(attempt, 16), maxBackoff)
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

// post makes one attempt. It returns whether to retry and, for an answer
// with Retry-After, how long to wait (-1: no Retry-After).
func (x *exporter) post(ctx context.Context, body []byte, n int) (retry bool, wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.cfg.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("request to %s: %w", x.cfg.shown, err)
	}
	// As the official exporter: the user's headers may replace the
	// User-Agent, not the Content-Type.
	req.Header.Set("User-Agent", x.userAgent)
	for k, v := range x.cfg.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if x.cfg.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := x.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = x.cfg.shown // never the password, whatever net/http does
		}
		return ctx.Err() == nil && !x.final.Load(), -1, err
	}
	defer resp.Body.Close()
	answer, readErr := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody+1))
	cut := len(answer) > maxResponseBody
	answer = answer[:min(len(answer), maxResponseBody)]
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		if readErr != nil {
			// The collector took the spans; only its answer is lost.
			return false, 0, nil
		}
		x.partialSuccess(resp.Header.Get("Content-Type"), answer, cut, n)
		return false, 0, nil
	case code == http.StatusTooManyRequests, code == http.StatusBadGateway,
		code == http.StatusServiceUnavailable, code == http.StatusGatewayTimeout:
		return true, retryAfter(resp.Header.Get("Retry-After")), fmt.Errorf("%s answered %s%s", x.cfg.shown, resp.Status, shownBody(answer))
	case code >= 300 && code <= 399:
		return false, 0, fmt.Errorf("%s answered %s, a redirect not followed (only a 307 or 308 to the same scheme and host is)", x.cfg.shown, resp.Status)
	default:
		return false, 0, fmt.Errorf("%s answered %s%s", x.cfg.shown, resp.Status, shownBody(answer))
	}
}

// shownBody is an error answer's body for a message: its start, on one
// line.
func shownBody(b []byte) string {
	if s := oneLine(string(b)); s != "" {
		return ": " + s
	}
	return ""
}

// oneLine is text from the collector made fit for the user's terminal:
// its start (maxShownBody bytes), valid UTF-8, control characters (line
// breaks, escape sequences that would recolour or retitle the terminal)
// turned to spaces and spaces collapsed.
func oneLine(s string) string {
	cut := len(s) > maxShownBody
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, validUTF8(s[:min(len(s), maxShownBody)]))
	s = strings.Join(strings.Fields(s), " ")
	if cut && s != "" {
		s += "…"
	}
	return s
}

// retryAfter parses a Retry-After header, seconds or an HTTP date; -1
// when there is none or it does not parse.
func retryAfter(v string) time.Duration {
	if v == "" {
		return -1
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, int64(maxRetryTime/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return -1
}

// partialSuccess reports the partial_success of a collector's answer (n
// spans sent), protobuf or JSON, if it rejected spans or said something.
// A protobuf answer cut at maxResponseBody (a long message) still says
// how many spans were rejected: the count comes before the message, which
// is taken as far as it was read.
func (x *exporter) partialSuccess(contentType string, answer []byte, cut bool, n int) {
	if len(answer) == 0 {
		return
	}
	var rejected int64
	var msg string
	switch strings.TrimSpace(strings.Split(contentType, ";")[0]) {
	case "application/x-protobuf":
		ps, ok := protoField(answer, fResponsePartialSuccess, cut)
		if !ok {
			return
		}
		for len(ps) > 0 {
			num, typ, tl := protowire.ConsumeTag(ps)
			if tl < 0 {
				return
			}
			ps = ps[tl:]
			vl := protowire.ConsumeFieldValue(num, typ, ps)
			if vl < 0 {
				if v, ok := cutBytes(typ, ps, cut); ok && num == fPartialErrorMessage {
					msg = string(v)
					break
				}
				return
			}
			switch {
			case num == fPartialRejectedSpans && typ == protowire.VarintType:
				v, _ := protowire.ConsumeVarint(ps)
				rejected = int64(v)
			case num == fPartialErrorMessage && typ == protowire.BytesType:
				v, _ := protowire.ConsumeBytes(ps)
				msg = string(v)
			}
			ps = ps[vl:]
		}
	case "application/json":
		var r struct {
			PartialSuccess *struct {
				RejectedSpans json.Number `json:"rejectedSpans"`
				ErrorMessage  string      `json:"errorMessage"`
			} `json:"partialSuccess"`
		}
		// OTLP/JSON writes int64 as a string; json.Number takes either.
		if json.Unmarshal(answer, &r) != nil || r.PartialSuccess == nil {
			return
		}
		rejected, _ = r.PartialSuccess.RejectedSpans.Int64()
		msg = r.PartialSuccess.ErrorMessage
	default:
		return
	}
	if rejected == 0 && msg == "" {
		return
	}
	x.handle(fmt.Errorf("traces export: the collector at %s rejected %d of %d spans: %s", x.cfg.shown, rejected, n, cmp.Or(oneLine(msg), "(no message)")))
}

// protoField returns the value of the last occurrence of the
// length-delimited field num in the message b; in a message cut short
// (cut), the last field's value may be only what there is of it.
func protoField(b []byte, num protowire.Number, cut bool) ([]byte, bool) {
	var v []byte
	found := false
	for len(b) > 0 {
		n, typ, tl := protowire.ConsumeTag(b)
		if tl < 0 {
			return nil, false
		}
		b = b[tl:]
		vl := protowire.ConsumeFieldValue(n, typ, b)
		if vl < 0 {
			if cv, ok := cutBytes(typ, b, cut); ok && n == num {
				return cv, true
			}
			return nil, false
		}
		if n == num && typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(b)
			found = true
		}
		b = b[vl:]
	}
	return v, found
}

// cutBytes returns what there is of a length-delimited value b starts
// with (its tag consumed) whose length goes past the end of b, when the
// message was cut (cut); ok false otherwise.
func cutBytes(typ protowire.Type, b []byte, cut bool) ([]byte, bool) {
	if !cut || typ != protowire.BytesType {
		return nil, false
	}
	l, ll := protowire.ConsumeVarint(b)
	if ll < 0 || l <= uint64(len(b)-ll) {
		return nil, false
	}
	return b[ll:], true
}

var _ sdktrace.SpanExporter = (*exporter)(nil)
