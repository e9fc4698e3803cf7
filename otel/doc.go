// Package otel sets up the OpenTelemetry SDK for evalrun: a tracer
// provider exporting over OTLP/HTTP (the official Go SDK,
// go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp),
// configured by the standard OTEL_* environment variables, and its bounded
// shutdown. It is the only package that imports the SDK; the rest of
// evalrun makes its spans with the OpenTelemetry API (internal/tracing)
// against whatever provider is installed. docs/observability.md describes
// the spans and the variables.
//
// Tracing is on only when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set: otherwise [Start] creates no
// exporter and installs nothing, and evalrun's spans are no-ops.
package otel
