package otel

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The variables that turn tracing on and pick the wire protocol.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// DefaultServiceName is the service.name of evalrun's spans unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names another.
const DefaultServiceName = "evalrun"

// ErrUnsupportedProtocol is the error of [Start] when the OTEL_* variables
// ask for a protocol other than OTLP over HTTP (grpc): nothing is exported
// rather than HTTP sent to a gRPC port.
var ErrUnsupportedProtocol = errors.New("unsupported OTLP protocol")

// Enabled reports whether the environment read through getenv asks for
// traces: OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// is set (and not blank).
func Enabled(getenv func(string) string) bool {
	return strings.TrimSpace(getenv(EnvEndpoint)) != "" || strings.TrimSpace(getenv(EnvTracesEndpoint)) != ""
}

// Options configure [Start].
type Options struct {
	// Getenv reads the exporter's and the batcher's variables,
	// OTEL_EXPORTER_OTLP_* and OTEL_BSP_*: whether tracing is on, the
	// protocol, the endpoint, headers, timeout, compression and TLS
	// files, the queue, batch size and delays (nil: os.Getenv). The SDK
	// reads the others (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
	// OTEL_TRACES_SAMPLER…) from the process environment itself, as it
	// documents.
	Getenv func(string) string
	// ServiceVersion is the service.version of the spans' resource.
	ServiceVersion string
}

// Tracing is an installed tracer provider exporting over OTLP/HTTP. Its
// methods are safe for concurrent use.
type Tracing struct {
	tp       *sdktrace.TracerProvider
	exp      *exporter
	endpoint string

	// The globals it replaced, put back by Shutdown.
	prevTP      trace.TracerProvider
	prevProp    propagation.TextMapPropagator
	prevHandler otel.ErrorHandler

	mu       sync.Mutex
	firstErr error // the first export error the SDK reported
	stopped  bool
}

// Start installs, as the global tracer provider and propagator, a provider
// exporting spans in batches to the OTLP/HTTP endpoint of the OTEL_*
// variables and the W3C trace context propagator. It returns nil and no
// error when the variables do not ask for tracing ([Enabled]): nothing is
// created. An error (the protocol is grpc, an endpoint does not parse, a
// header list, timeout, compression or certificate file is wrong) means
// tracing is off; the caller should say so and carry on.
//
// Errors the SDK meets while exporting in the background are kept, not
// printed: [Tracing.Shutdown] returns the first.
func Start(ctx context.Context, o Options) (*Tracing, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if !Enabled(getenv) {
		return nil, nil
	}
	proto := strings.TrimSpace(getenv(EnvTracesProtocol))
	name := EnvTracesProtocol
	if proto == "" {
		proto, name = strings.TrimSpace(getenv(EnvProtocol)), EnvProtocol
	}
	switch proto {
	case "", "http/protobuf", "http/json":
	default:
		return nil, fmt.Errorf("%w: %s is %q: evalrun exports traces over OTLP/HTTP only (http/protobuf or http/json); "+
			"set it to http/protobuf and point the endpoint at the collector's OTLP/HTTP port (4318)", ErrUnsupportedProtocol, name, proto)
	}
	cfg, err := readConfig(getenv, readPEMFile)
	if err != nil {
		return nil, err
	}
	bcfg, err := readBatchConfig(getenv)
	if err != nil {
		return nil, err
	}
	exp := newExporter(cfg, o.ServiceVersion)
	attrs := []attribute.KeyValue{attribute.String("service.name", DefaultServiceName)}
	if o.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", o.ServiceVersion))
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the defaults.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && res == nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("OTEL resource: %w", err)
	}
	t := &Tracing{
		exp:         exp,
		endpoint:    cfg.shown,
		prevTP:      otel.GetTracerProvider(),
		prevProp:    otel.GetTextMapPropagator(),
		prevHandler: otel.GetErrorHandler(),
	}
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newSpanBatcher(exp, bcfg)), sdktrace.WithResource(res))
	otel.SetTracerProvider(t.tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	otel.SetErrorHandler(otel.ErrorHandlerFunc(t.record))
	return t, nil
}

// record keeps the first error the SDK reports (a failed export).
func (t *Tracing) record(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.firstErr == nil && err != nil {
		t.firstErr = err
	}
}

// Endpoint returns the URL spans are sent to, as the SDK derives it from the
// variables (the traces endpoint as it is, else the endpoint with
// /v1/traces), its password removed: for messages.
func (t *Tracing) Endpoint() string { return t.endpoint }

// Endpoint returns the traces URL the OTEL_* variables read through getenv
// name (see [Tracing.Endpoint]), or an error when the one set does not
// parse as a URL.
func Endpoint(getenv func(string) string) (string, error) {
	u, err := endpointURL(getenv)
	if err != nil {
		return "", err
	}
	return u.Redacted(), nil
}

// endpointURL is the traces URL, password included: the traces endpoint as
// it is, else the endpoint with /v1/traces.
func endpointURL(getenv func(string) string) (*url.URL, error) {
	name := EnvTracesEndpoint
	raw := strings.TrimSpace(getenv(name))
	signal := false
	if raw == "" {
		name, raw, signal = EnvEndpoint, strings.TrimSpace(getenv(EnvEndpoint)), true
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%s=%q is not an http(s) URL (e.g. http://localhost:4318)", name, redacted(raw))
	}
	if signal {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		if u.RawPath != "" {
			u.RawPath = strings.TrimSuffix(u.RawPath, "/") + "/v1/traces"
		}
	}
	return u, nil
}

// redacted returns raw with the password of a URL removed.
func redacted(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

// Shutdown exports the spans not exported yet and stops the provider,
// within ctx: a collector that does not answer delays the caller until ctx
// ends, never longer (the CLI gives it 5 s). It puts back the global
// provider, propagator and error handler Start replaced. It returns why
// spans were not all exported, nil when they were: the first error met
// during the run, else the shutdown's own. Calling it again returns nil.
func (t *Tracing) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return nil
	}
	t.stopped = true
	t.mu.Unlock()
	t.exp.final.Store(true)
	err := t.tp.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = errors.New("the collector did not answer in time")
	}
	otel.SetTracerProvider(t.prevTP)
	otel.SetTextMapPropagator(t.prevProp)
	otel.SetErrorHandler(t.prevHandler)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.firstErr != nil {
		if errors.Is(t.firstErr, context.DeadlineExceeded) {
			return errors.New("the collector did not answer in time")
		}
		return t.firstErr
	}
	return err
}
