// Package otel sets up the OpenTelemetry SDK for evalrun: the official Go
// SDK's tracer provider (go.opentelemetry.io/otel/sdk/trace, its spans
// and sampler, and the resource of sdk/resource), batching ended spans
// with a span processor of evalrun's own (batcher.go, in the place of the
// SDK's batch span processor, with its OTEL_BSP_* settings) and exporting
// them over OTLP/HTTP with an exporter of evalrun's own, configured by the
// standard OTEL_* environment variables, and its bounded shutdown. It is the only
// package that imports the SDK; the rest of evalrun makes its spans with
// the OpenTelemetry API (internal/tracing) against whatever provider is
// installed. docs/observability.md describes the spans and the variables.
//
// The exporter is an sdktrace.SpanExporter that writes the OTLP
// ExportTraceServiceRequest straight from the SDK's spans with
// google.golang.org/protobuf/encoding/protowire (encode.go) and posts it
// as the official otlptracehttp exporter does (exporter.go): the same
// OTEL_EXPORTER_OTLP_* variables, retries, partial success. It replaces
// otlptracehttp, whose generated OTLP collector package links gRPC,
// grpc-gateway and genproto into evalrun (105 packages, a third of a cold
// build) and whose transform to protobuf structs and reflection-based
// marshalling was a third of tracing's CPU (docs/benchmarks.md,
// *Tracing*). The tests decode what it sends with the official generated
// types.
//
// Tracing is on only when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set: otherwise [Start] creates no
// exporter and installs nothing, and evalrun's spans are no-ops.
package otel
