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
//
// A target whose attempt is exactly one model call ([CallTarget]: the
// openai chat target without tools) has its attempt span started by the
// engine as that call's span ([StartAttempt]); the target's
// [StartModelCall] recognises it and makes no child. Spans are what a
// traced run pays for (the SDK's export of each costs more than making
// it), so a span that only repeats its parent is not made.
package tracing
