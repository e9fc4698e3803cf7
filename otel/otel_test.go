package otel_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/evalrun/evalrun/internal/otlptest"
	evalotel "github.com/evalrun/evalrun/otel"
)

func getenv(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestStartWithoutVariablesCreatesNothing(t *testing.T) {
	before := otel.GetTracerProvider()
	tr, err := evalotel.Start(context.Background(), evalotel.Options{Getenv: getenv(map[string]string{"OTEL_SERVICE_NAME": "x"})})
	if tr != nil || err != nil {
		t.Fatalf("Start = %v, %v; want nothing", tr, err)
	}
	if otel.GetTracerProvider() != before {
		t.Error("the global tracer provider changed")
	}
}

func TestStartRefusesGRPC(t *testing.T) {
	for _, env := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://localhost:4317", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
	} {
		tr, err := evalotel.Start(context.Background(), evalotel.Options{Getenv: getenv(env)})
		if tr != nil || !errors.Is(err, evalotel.ErrUnsupportedProtocol) {
			t.Errorf("%v: Start = %v, %v", env, tr, err)
		}
	}
}

// TestStartRefusesBadExporterSettings: a variable of the exporter set
// wrong turns tracing off with an error naming it; nothing is installed.
func TestStartRefusesBadExporterSettings(t *testing.T) {
	before := otel.GetTracerProvider()
	tr, err := evalotel.Start(context.Background(), evalotel.Options{Getenv: getenv(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "brotli"})})
	if tr != nil || err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION") {
		t.Errorf("Start = %v, %v", tr, err)
	}
	if otel.GetTracerProvider() != before {
		t.Error("the global tracer provider changed")
	}
}

// TestStartRefusesAnEndlessCertificateFile: a certificate variable naming
// a huge file (or /dev/zero, endless) is refused after a bounded read,
// not read whole into memory (/dev/zero: until the process died).
func TestStartRefusesAnEndlessCertificateFile(t *testing.T) {
	huge := filepath.Join(t.TempDir(), "huge.pem")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: no disk used.
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, key := range []string{"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"} {
		tr, err := evalotel.Start(context.Background(), evalotel.Options{Getenv: getenv(map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "https://localhost:4318", key: huge, "OTEL_EXPORTER_OTLP_CLIENT_KEY": huge})})
		if tr != nil || err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("%s: Start = %v, %v", key, tr, err)
		}
	}
}

// TestShutdownReportsRejectedSpans: a collector's partial success reaches
// the error Shutdown returns.
func TestShutdownReportsRejectedSpans(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"partialSuccess":{"rejectedSpans":"1","errorMessage":"too big"}}`)
	}))
	defer srv.Close()
	tr, err := evalotel.Start(context.Background(), evalotel.Options{Getenv: getenv(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})})
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("t").Start(context.Background(), "s")
	span.End()
	if err := tr.Shutdown(context.Background()); err == nil || !strings.Contains(err.Error(), "rejected 1 of 1 spans: too big") {
		t.Errorf("Shutdown: %v", err)
	}
}

func TestEndpoint(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "http://c:4318/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://u:secret@c/otlp/"}, "https://u:xxxxx@c/otlp/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b/t"}, "http://b/t"},
	} {
		if got, err := evalotel.Endpoint(getenv(c.env)); err != nil || got != c.want {
			t.Errorf("%v: %q, %v; want %q", c.env, got, err, c.want)
		}
	}
	if _, err := evalotel.Endpoint(getenv(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"})); err == nil {
		t.Error("an endpoint without scheme was accepted")
	}
}

func TestStartExportsAndShutdownRestores(t *testing.T) {
	recv := otlptest.New(t)
	t.Setenv("OTEL_SERVICE_NAME", "my-evals") // the SDK's resource reads the process environment
	before := otel.GetTracerProvider()
	tr, err := evalotel.Start(context.Background(), evalotel.Options{Getenv: getenv(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.URL})})
	if err != nil || tr == nil {
		t.Fatalf("Start = %v, %v", tr, err)
	}
	if _, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); !ok {
		t.Fatalf("installed provider %T", otel.GetTracerProvider())
	}
	_, span := otel.Tracer("t").Start(context.Background(), "s")
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if spans := recv.Spans(); len(spans) != 1 || spans[0].Name != "s" || spans[0].Service != "my-evals" {
		t.Errorf("received %+v", spans)
	}
	if otel.GetTracerProvider() != before {
		t.Error("Shutdown did not put the previous provider back")
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// Start is called once at the start of a program that runs evals, and
// Shutdown with a deadline at its end, so that a collector that does not
// answer delays the exit by at most that much.
func ExampleStart() {
	ctx := context.Background()
	tr, err := evalotel.Start(ctx, evalotel.Options{Getenv: os.Getenv})
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracing off:", err)
	}
	if tr != nil {
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := tr.Shutdown(sctx); err != nil {
				fmt.Fprintf(os.Stderr, "traces not exported: %v (collector at %s)\n", err, tr.Endpoint())
			}
		}()
	}
	// ... engine.Run(ctx, store, spec): its spans go to the collector.
}

// TestShutdownDoesNotRetryAFailedConnection: the flush at exit says at
// once that the collector cannot be reached rather than retry until its
// deadline: one connection, dropped, one attempt.
func TestShutdownDoesNotRetryAFailedConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	tr, err := evalotel.Start(context.Background(), evalotel.Options{Getenv: getenv(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + l.Addr().String()})})
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("t").Start(context.Background(), "s")
	span.End()
	if err := tr.Shutdown(context.Background()); err == nil || strings.Contains(err.Error(), "in time") {
		t.Errorf("Shutdown: %v, want the failed connection", err)
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}
