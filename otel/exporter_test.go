package otel

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an httptest OTLP/HTTP receiver answering each request with
// the next of its answers (the last one again when they run out) and
// keeping what it received.
type collector struct {
	t       *testing.T
	mu      sync.Mutex
	answers []func(w http.ResponseWriter, r *http.Request)
	got     []*http.Request
	bodies  [][]byte // as received (gzip included)
}

func newCollector(t *testing.T, answers ...func(w http.ResponseWriter, r *http.Request)) (*collector, *httptest.Server) {
	c := &collector{t: t, answers: answers}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	i := min(len(c.got), len(c.answers)-1)
	c.got = append(c.got, r)
	c.bodies = append(c.bodies, body)
	answer := c.answers[i]
	c.mu.Unlock()
	answer(w, r)
}

func (c *collector) requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

func status(code int, header ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, "collector says no")
	}
}

// testExporter is the exporter Start would make from env, its partial
// successes collected instead of handed to otel.Handle, and a backoff
// too long for a test to wait out (a test that retries relies on
// Retry-After or sets it).
func testExporter(t *testing.T, env map[string]string) (*exporter, *[]error) {
	t.Helper()
	cfg, err := readConfig(func(k string) string { return env[k] }, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	x := newExporter(cfg, "test")
	var handled []error
	x.handle = func(err error) { handled = append(handled, err) }
	x.retryBase = time.Hour
	t.Cleanup(func() { _ = x.Shutdown(context.Background()) })
	return x, &handled
}

func someSpans() []sdktrace.ReadOnlySpan { return benchSpans(3) }

func TestExportHeadersAndRequest(t *testing.T) {
	c, srv := newCollector(t, ok)
	x, _ := testExporter(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        srv.URL + "/otlp/",
		"OTEL_EXPORTER_OTLP_HEADERS":         "x-generic=g, authorization=ignored",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":  " Authorization = Bearer%20abc%3D ,x-team=t%2Cu,,content-type=text/plain",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
	})
	spans := someSpans()
	if err := x.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	r := c.got[0]
	for k, want := range map[string]string{
		"Authorization": "Bearer abc=", "X-Team": "t,u", "X-Generic": "",
		"Content-Type": "application/x-protobuf", "Content-Encoding": "", "User-Agent": "evalrun/test (OTLP/HTTP exporter)",
	} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != "/otlp/v1/traces" {
		t.Errorf("%s %s", r.Method, r.URL.Path)
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(c.bodies[0], &req); err != nil || len(req.ResourceSpans[0].ScopeSpans[0].Spans) != len(spans) {
		t.Errorf("body: %v, %v", err, &req)
	}
}

func TestExportGzip(t *testing.T) {
	c, srv := newCollector(t, ok)
	x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/t", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"})
	for range 2 { // the second time with the gzip writer of the first
		if err := x.ExportSpans(context.Background(), someSpans()); err != nil {
			t.Fatal(err)
		}
	}
	for i, body := range c.bodies {
		if c.got[i].Header.Get("Content-Encoding") != "gzip" || c.got[i].URL.Path != "/t" {
			t.Errorf("request %d: %v %s", i, c.got[i].Header, c.got[i].URL.Path)
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		var req coltracepb.ExportTraceServiceRequest
		if err != nil || proto.Unmarshal(raw, &req) != nil || len(req.ResourceSpans[0].ScopeSpans[0].Spans) != 3 {
			t.Errorf("request %d: %v, %v", i, err, &req)
		}
	}
}

// TestExportRetries: 429, 502, 503 and 504 are retried when Retry-After
// says (the backoff is an hour: only Retry-After makes the test end), 400
// is not, and a Retry-After past the export's deadline ends it at once.
func TestExportRetries(t *testing.T) {
	for _, code := range []int{429, 502, 503, 504} {
		c, srv := newCollector(t, status(code, "Retry-After", "0"), status(code, "Retry-After", "0"), ok)
		x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
		if err := x.ExportSpans(context.Background(), someSpans()); err != nil || c.requests() != 3 {
			t.Errorf("%d: %v after %d requests", code, err, c.requests())
		}
	}
	t.Run("backoff", func(t *testing.T) {
		c, srv := newCollector(t, status(503), ok)
		x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
		x.retryBase = time.Millisecond
		if err := x.ExportSpans(context.Background(), someSpans()); err != nil || c.requests() != 2 {
			t.Errorf("%v after %d requests", err, c.requests())
		}
	})
	t.Run("400", func(t *testing.T) {
		c, srv := newCollector(t, status(400, "Retry-After", "0"), ok)
		x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
		err := x.ExportSpans(context.Background(), someSpans())
		if err == nil || c.requests() != 1 || !strings.Contains(err.Error(), "400 Bad Request: collector says no") {
			t.Errorf("%v after %d requests", err, c.requests())
		}
	})
	t.Run("Retry-After past the deadline", func(t *testing.T) {
		c, srv := newCollector(t, status(503, "Retry-After", "3600"), ok)
		x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := x.ExportSpans(ctx, someSpans())
		if err == nil || c.requests() != 1 || ctx.Err() != nil || !strings.Contains(err.Error(), "503") {
			t.Errorf("%v after %d requests (ctx %v)", err, c.requests(), ctx.Err())
		}
	})
}

// TestExportRetriesFailedConnection: a connection the collector drops is
// retried, except during the flush at exit.
func TestExportRetriesFailedConnection(t *testing.T) {
	drop := func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	c, srv := newCollector(t, drop, ok)
	x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
	x.retryBase = time.Millisecond
	if err := x.ExportSpans(context.Background(), someSpans()); err != nil || c.requests() != 2 {
		t.Errorf("%v after %d requests", err, c.requests())
	}

	c, srv = newCollector(t, drop, ok)
	x, _ = testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
	x.retryBase = time.Millisecond
	x.final.Store(true)
	if err := x.ExportSpans(context.Background(), someSpans()); err == nil || c.requests() != 1 {
		t.Errorf("final flush: %v after %d requests", err, c.requests())
	}
}

// TestExportHangingCollector: an export waits for a collector that does
// not answer only as long as its context, and Shutdown cancels it.
func TestExportHangingCollector(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	hang := func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	_, srv := newCollector(t, hang)
	defer close(release)
	x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})

	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	if err := x.ExportSpans(ctx, someSpans()); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := x.ExportSpans(ctx, someSpans()); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer in time") {
		t.Errorf("deadline: %v", err)
	}
	<-arrived

	go func() { <-arrived; _ = x.Shutdown(context.Background()) }()
	if err := x.ExportSpans(context.Background(), someSpans()); !errors.Is(err, errShutdown) {
		t.Errorf("shut down while exporting: %v", err)
	}
	if err := x.ExportSpans(context.Background(), someSpans()); !errors.Is(err, errShutdown) {
		t.Errorf("after Shutdown: %v", err)
	}
}

// TestExportTimeoutVariable: OTEL_EXPORTER_OTLP_TRACES_TIMEOUT bounds an
// export whose context has no deadline.
func TestExportTimeoutVariable(t *testing.T) {
	release := make(chan struct{})
	_, srv := newCollector(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
		"OTEL_EXPORTER_OTLP_TIMEOUT": "60000", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "20"})
	if x.cfg.timeout != 20*time.Millisecond {
		t.Fatalf("timeout %s", x.cfg.timeout)
	}
	if err := x.ExportSpans(context.Background(), someSpans()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v", err)
	}
}

func TestExportPartialSuccess(t *testing.T) {
	pb, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: "span too old"}})
	answer := func(contentType string, body []byte) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.Write(body)
		}
	}
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
		want   string
	}{
		{"protobuf", answer("application/x-protobuf", pb), "rejected 2 of 3 spans: span too old"},
		{"json", answer("application/json; charset=utf-8", []byte(`{"partialSuccess":{"rejectedSpans":"1","errorMessage":"quota"}}`)), "rejected 1 of 3 spans: quota"},
		{"json number", answer("application/json", []byte(`{"partialSuccess":{"rejectedSpans":3}}`)), "rejected 3 of 3 spans: (no message)"},
		{"empty protobuf", answer("application/x-protobuf", nil), ""},
		{"empty partial success", answer("application/json", []byte(`{"partialSuccess":{}}`)), ""},
		{"garbage", answer("application/x-protobuf", []byte{0xff, 0xff}), ""},
		{"text", answer("text/plain", []byte("ok")), ""},
	} {
		_, srv := newCollector(t, c.answer)
		x, handled := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://u:hunter2@" + strings.TrimPrefix(srv.URL, "http://")})
		if err := x.ExportSpans(context.Background(), someSpans()); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		switch {
		case c.want == "" && len(*handled) != 0:
			t.Errorf("%s: reported %v", c.name, *handled)
		case c.want != "" && (len(*handled) != 1 || !strings.Contains((*handled)[0].Error(), c.want)):
			t.Errorf("%s: reported %v, want %q", c.name, *handled, c.want)
		case c.want != "" && strings.Contains((*handled)[0].Error(), "hunter2"):
			t.Errorf("%s: the password is in %v", c.name, (*handled)[0])
		}
	}
}

// TestExportMessagesHideThePassword: neither an answer's error nor a
// failed connection's shows the endpoint's password, and an error body is
// cut.
func TestExportMessagesHideThePassword(t *testing.T) {
	huge := strings.Repeat("x", 10<<20)
	_, srv := newCollector(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, huge)
	})
	x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://user:hunter2@" + strings.TrimPrefix(srv.URL, "http://")})
	err := x.ExportSpans(context.Background(), someSpans())
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "user:xxxxx@") || len(err.Error()) > 1000 {
		t.Errorf("%.300v", err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(closed.URL, "http://")
	closed.Close()
	x, _ = testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://user:hunter2@" + addr})
	x.final.Store(true)
	if err := x.ExportSpans(context.Background(), someSpans()); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("%v", err)
	}
}

// writePEM writes blocks to a file in t's temporary directory.
func writePEM(t *testing.T, name string, blocks ...*pem.Block) string {
	var b bytes.Buffer
	for _, blk := range blocks {
		pem.Encode(&b, blk)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExportTLS: a collector whose certificate only a custom CA vouches
// for is reached with OTEL_EXPORTER_OTLP_CERTIFICATE (and refused
// without), and one that asks for a client certificate gets the one of
// OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE and _KEY.
func TestExportTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(ok))
	defer srv.Close()
	ca := writePEM(t, "ca.pem", &pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
	x.final.Store(true) // no retry of the refused certificate
	if err := x.ExportSpans(context.Background(), someSpans()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v", err)
	}
	x, _ = testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": ca,
		"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent"})
	if err := x.ExportSpans(context.Background(), someSpans()); err != nil {
		t.Errorf("with the CA: %v", err)
	}

	// A client certificate, self-signed, that the collector trusts.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "evalrun"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	certFile := writePEM(t, "client.pem", &pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyFile := writePEM(t, "client.key", &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	clientCA := x509.NewCertPool()
	cert, _ := x509.ParseCertificate(der)
	clientCA.AddCert(cert)
	var peers []string
	var mu sync.Mutex
	mtls := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peers = append(peers, r.TLS.PeerCertificates[0].Subject.CommonName)
		mu.Unlock()
	}))
	mtls.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCA}
	mtls.StartTLS()
	defer mtls.Close()
	mca := writePEM(t, "mca.pem", &pem.Block{Type: "CERTIFICATE", Bytes: mtls.Certificate().Raw})
	x, _ = testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": mtls.URL, "OTEL_EXPORTER_OTLP_CERTIFICATE": mca,
		"OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE": certFile, "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": keyFile})
	if err := x.ExportSpans(context.Background(), someSpans()); err != nil || len(peers) != 1 || peers[0] != "evalrun" {
		t.Errorf("mutual TLS: %v, peers %v", err, peers)
	}
}

// TestConfigErrors: a variable set wrong is an error naming it, never
// showing a header's value.
func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "x.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	base := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4318"}
	for _, c := range []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "api-key"}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "bad key=s3cret"}, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"},
		// A colon for the equals sign: the whole entry is the would-be key.
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-team=t,Authorization: Bearer s3cret"}, "entry 2"},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key: s3cret=="}, "entry 1"},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "k=%zzs3cret"}, "not URL-encoded"},
		// Decoded, a line break or other control character: net/http would
		// refuse every request, each export retried until its timeout.
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "k=a%0D%0AInjected:%20s3cret"}, "control character"},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "k=s3cret%00"}, "control character"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "-1"}, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, "gzip or none"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": filepath.Join(dir, "missing.pem")}, "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": notPEM}, "no PEM certificate"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": notPEM}, "set both or neither"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": notPEM, "OTEL_EXPORTER_OTLP_CLIENT_KEY": notPEM}, "OTEL_EXPORTER_OTLP_CLIENT_KEY"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://c"}, "not an http(s) URL"},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range c.set {
			env[k] = v
		}
		_, err := readConfig(func(k string) string { return env[k] }, os.ReadFile)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%v: %v, want an error saying %q", c.set, err, c.want)
		}
	}
	// Good values, and certificates ignored for an http endpoint.
	cfg, err := readConfig(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_COMPRESSION": "none",
			"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "GZIP", "OTEL_EXPORTER_OTLP_TIMEOUT": "0",
			"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent"}[k]
	}, os.ReadFile)
	if err != nil || !cfg.gzip || cfg.timeout != 0 || cfg.tls != nil || cfg.url != "http://c:4318/v1/traces" {
		t.Errorf("%+v, %v", cfg, err)
	}
	cfg, _ = readConfig(func(k string) string { return base[k] }, os.ReadFile)
	if cfg.timeout != DefaultExportTimeout || cfg.gzip {
		t.Errorf("defaults: %+v", cfg)
	}
}

// BenchmarkExport: ExportSpans of a batch of 512 spans shaped like W2's
// (encode and POST) to an httptest receiver that reads and discards the
// body. docs/benchmarks.md (*Tracing*) compares it with the official
// otlptracehttp exporter, measured on a scratch copy that still requires
// it (this module no longer does).
func BenchmarkExport(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	spans := benchSpans(512)
	cfg, err := readConfig(func(k string) string { return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}[k] }, os.ReadFile)
	if err != nil {
		b.Fatal(err)
	}
	x := newExporter(cfg, "bench")
	defer x.Shutdown(context.Background())
	b.ReportAllocs()
	for b.Loop() {
		if err := x.ExportSpans(context.Background(), spans); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(spans))/b.Elapsed().Seconds(), "spans/s")
}

// TestExportCollectorTextIsOneInertLine: what a collector says (a partial
// success's message, an error's body) reaches the user's terminal as one
// short line without control characters: no escape sequence to recolour
// or retitle it, no line break to forge another message, not 64 KB.
func TestExportCollectorTextIsOneInertLine(t *testing.T) {
	hostile := "\x1b[31mred\x1b[0m\x1b]0;title\x07\nevalrun: forged\r\n\x00" + strings.Repeat("A", 60<<10)
	pb, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: hostile}})
	check := func(name, msg string) {
		t.Helper()
		if strings.ContainsFunc(msg, func(r rune) bool { return r < 0x20 || r == 0x7f || (0x80 <= r && r < 0xa0) }) || len(msg) > 1000 || !strings.Contains(msg, "red") {
			t.Errorf("%s: %q", name, msg)
		}
	}
	_, srv := newCollector(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(pb)
	})
	x, handled := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
	if err := x.ExportSpans(context.Background(), someSpans()); err != nil || len(*handled) != 1 {
		t.Fatalf("%v, %v", err, *handled)
	}
	check("partial success", (*handled)[0].Error())

	_, srv = newCollector(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, hostile)
	})
	x, _ = testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
	err := x.ExportSpans(context.Background(), someSpans())
	if err == nil {
		t.Fatal("a 400 was taken")
	}
	check("error body", err.Error())
}

// TestExportPartialSuccessLongerThanWhatIsRead: a partial success whose
// message makes the answer longer than the 64 KB read is still reported
// (the count comes first; the message is cut), not taken for garbage.
func TestExportPartialSuccessLongerThanWhatIsRead(t *testing.T) {
	for _, n := range []int{maxResponseBody - 100, maxResponseBody, 1 << 20} {
		pb, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: "too old " + strings.Repeat("x", n)}})
		_, srv := newCollector(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(pb)
		})
		x, handled := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
		if err := x.ExportSpans(context.Background(), someSpans()); err != nil {
			t.Fatal(err)
		}
		if len(*handled) != 1 || !strings.Contains((*handled)[0].Error(), "rejected 2 of 3 spans: too old xxx") {
			t.Errorf("a message of %d bytes: reported %.200v", n, *handled)
		}
	}
}

// TestExportRedirectThatDropsTheBody: a 301, 302 or 303 would have the
// request repeated as a GET without its body: the spans are not delivered,
// and the export must say so rather than count the GET's 200 as done. A
// 307 or 308 to the same collector keeps the POST and is followed.
func TestExportRedirectThatDropsTheBody(t *testing.T) {
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther} {
		c, srv := newCollector(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/traces" {
				http.Redirect(w, r, "/elsewhere", code)
			}
		})
		x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
		err := x.ExportSpans(context.Background(), someSpans())
		if err == nil || !strings.Contains(err.Error(), http.StatusText(code)) {
			t.Errorf("%d: %v after %d requests", code, err, c.requests())
		}
	}
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		c, srv := newCollector(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/traces" {
				http.Redirect(w, r, "/v1/traces/", code)
			}
		})
		x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
		if err := x.ExportSpans(context.Background(), someSpans()); err != nil || c.requests() != 2 || c.got[1].Method != http.MethodPost || len(c.bodies[1]) == 0 {
			t.Errorf("%d: %v after %d requests", code, err, c.requests())
		}
	}
}

// TestExportRedirectToAnotherHostKeepsTheHeaders: a 307 to another host
// (or port, or scheme) is not followed: net/http would send it the
// OTEL_EXPORTER_OTLP_HEADERS (a vendor's API key in x-api-key is not one
// of the few headers it drops across hosts) and the spans.
func TestExportRedirectToAnotherHostKeepsTheHeaders(t *testing.T) {
	other, otherSrv := newCollector(t, ok)
	_, srv := newCollector(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherSrv.URL+"/v1/traces", http.StatusTemporaryRedirect)
	})
	x, _ := testExporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=s3cret"})
	err := x.ExportSpans(context.Background(), someSpans())
	if err == nil || !strings.Contains(err.Error(), "307") {
		t.Errorf("export: %v", err)
	}
	if n := other.requests(); n != 0 {
		t.Errorf("the other host got %d requests, x-api-key %q", n, other.got[0].Header.Get("X-Api-Key"))
	}
}
