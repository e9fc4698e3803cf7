// Package tracing is how evalrun's packages make OpenTelemetry spans and
// propagate W3C trace context. It uses only the OpenTelemetry API
// (go.opentelemetry.io/otel and its trace package) against the global
// tracer provider and propagator: the SDK and its exporter are set up by
// package otel (github.com/evalrun/evalrun/otel), by the CLI when the
// OTEL_* variables ask for it, or by a program using evalrun as a library
// with its own provider.
//
// The rule of every span below the run's is [Start]'s: a span is started
// only when ctx carries a valid span context, that is inside a traced run.
// Without a provider installed the run's span is a no-op without a valid
// context, so an item pays one context lookup per would-be span and
// allocates nothing (engine.BenchmarkProcess, engine.BenchmarkPipelineTracing).
package tracing
