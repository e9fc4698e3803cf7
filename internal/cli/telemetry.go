package cli

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/redact"
	"github.com/evalrun/evalrun/internal/tracing"
	"github.com/evalrun/evalrun/otel"
)

// DefaultTraceFlushTimeout bounds how long evalrun waits at exit for its
// spans to reach the collector: an unreachable or hanging collector delays
// the exit by at most this much and changes nothing else.
const DefaultTraceFlushTimeout = 5 * time.Second

// startTracing installs the OpenTelemetry SDK when the OTEL_* variables ask
// for it (package otel) and returns the function that flushes and stops
// it, which Main calls on the way out (Ctrl-C included). A tracing setup
// that fails (grpc asked for, a bad endpoint) is said on stderr and the
// command runs untraced: tracing never stops an eval.
func (st *State) startTracing(ctx context.Context) (stop func()) {
	t, err := otel.Start(ctx, otel.Options{Getenv: st.Getenv, ServiceVersion: version()})
	scrub := st.otelScrubber()
	if err != nil {
		fmt.Fprintf(st.Stderr, "evalrun: tracing off: %s\n", scrub.String(err.Error()))
		return func() {}
	}
	if t == nil {
		return func() {}
	}
	return func() {
		timeout := cmp.Or(st.TraceFlushTimeout, DefaultTraceFlushTimeout)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		if err := t.Shutdown(sctx); err != nil {
			// Once, at the end: the run's result and exit code stand. The
			// endpoint is without its password, not without a secret in
			// its query (api_key=...): scrubbed too.
			fmt.Fprintf(st.Stderr, "evalrun: traces not exported: %s (collector at %s)\n", scrub.String(err.Error()), scrub.String(t.Endpoint()))
		}
	}
}

// otelScrubber knows the secrets of the OTEL_* variables an exporter error
// may show: the endpoints' passwords and query secrets, and the values of
// the headers (a vendor's API key).
func (st *State) otelScrubber() *redact.Scrubber {
	s := &redact.Scrubber{}
	for _, name := range []string{otel.EnvEndpoint, otel.EnvTracesEndpoint} {
		s.Add(redact.URLSecrets(st.Getenv(name))...)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		for _, kv := range strings.Split(st.Getenv(name), ",") {
			if _, v, ok := strings.Cut(kv, "="); ok && strings.TrimSpace(v) != "" {
				s.AddCredential(strings.TrimSpace(v))
				// The exporter sends the value URL-decoded: a collector's
				// answer would echo that form.
				if dv, err := url.PathUnescape(v); err == nil && strings.TrimSpace(dv) != strings.TrimSpace(v) {
					s.AddCredential(strings.TrimSpace(dv))
				}
			}
		}
	}
	return s
}

// traceRun starts the span of a run this process enqueues for workers and
// waits for (--distributed): its jobs carry the span's context, so that
// the workers' item spans are its children. The returned function ends it.
// engine.Run makes the span of a run executed here.
func traceRun(ctx context.Context, rec *evalrun.Run) (context.Context, func(*evalrun.Summary, error)) {
	ctx, span := tracing.StartRun(ctx, tracing.SpanRun)
	tracing.DescribeRun(span, rec)
	return ctx, func(sum *evalrun.Summary, err error) { tracing.EndRun(span, sum, err) }
}

// traceExperiment starts the span of an experiment whose variants' runs
// are enqueued for workers together (one transaction, one trace context):
// the workers' item spans are its children, told apart by their
// evalrun.run.id. The returned function ends it.
func traceExperiment(ctx context.Context, id string) (context.Context, func()) {
	ctx, span := tracing.StartRun(ctx, tracing.SpanExperiment)
	if span.IsRecording() {
		span.SetAttributes(tracing.Experiment.String(id))
	}
	return ctx, func() { span.End() }
}
