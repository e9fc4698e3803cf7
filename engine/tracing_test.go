package engine_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/internal/otlptest"
	evalotel "github.com/evalrun/evalrun/otel"
)

// recordSpans installs a tracer provider recording every span (ended
// spans, synchronously: no goroutine) for the test.
func recordSpans(t *testing.T) *tracetest.SpanRecorder {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})
	return rec
}

func TestRunSpans(t *testing.T) {
	rec := recordSpans(t)
	// Item q1 fails once transiently, then for good; the others succeed.
	calls := 0
	target := evalrun.TargetFunc(func(ctx context.Context, it *evalrun.Item) (evalrun.Output, error) {
		if !trace.SpanContextFromContext(ctx).IsValid() {
			return evalrun.Output{}, errors.New("the target's ctx carries no span: no traceparent could be sent")
		}
		if it.ID == "q1" {
			calls++
			if calls == 1 {
				return evalrun.Output{}, evalrun.Transient(errors.New("503"))
			}
			return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorPermanent, StatusCode: 400, Err: errors.New("bad request")}
		}
		return evalrun.Output{Value: it.Input}, nil
	})
	sum, err := engine.Run(context.Background(), nil, engine.Spec{
		Items: items(3), Target: target, Scorers: []evalrun.Scorer{exact},
		Options: engine.Options{Concurrency: 1, MaxRetries: 2, RetryDelay: 1},
	})
	if err != nil || sum.Succeeded != 2 || sum.Failed != 1 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	if len(byName["evalrun.run"]) != 1 || len(byName["evalrun.item"]) != 3 || len(byName["evalrun.attempt"]) != 4 || len(byName["evalrun.score"]) != 2 {
		t.Fatalf("spans: %d run, %d item, %d attempt, %d score; want 1, 3, 4 (q1 twice), 2 (failed items are not scored)",
			len(byName["evalrun.run"]), len(byName["evalrun.item"]), len(byName["evalrun.attempt"]), len(byName["evalrun.score"]))
	}
	run := byName["evalrun.run"][0]
	if a := otlptest.Attrs(run); a["evalrun.run.id"].AsString() != sum.RunID || a["evalrun.run.status"].AsString() != "completed" ||
		a["evalrun.run.failed"].AsInt64() != 1 || run.Parent().IsValid() {
		t.Errorf("run span attributes %v, parent %v", a, run.Parent())
	}
	items := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, it := range byName["evalrun.item"] {
		items[it.SpanContext().SpanID()] = it
		a := otlptest.Attrs(it)
		if it.Parent().SpanID() != run.SpanContext().SpanID() || a["evalrun.run.id"].AsString() != sum.RunID {
			t.Errorf("item %s: parent %v, run id %q", a["evalrun.item.id"].AsString(), it.Parent().SpanID(), a["evalrun.run.id"].AsString())
		}
		switch a["evalrun.item.id"].AsString() {
		case "q1":
			if a["evalrun.item.status"].AsString() != "failed" || a["evalrun.error.kind"].AsString() != "permanent" ||
				a["evalrun.item.attempts"].AsInt64() != 2 || a["evalrun.item.index"].AsInt64() != 1 || it.Status().Code != codes.Error {
				t.Errorf("failed item span: %v, status %v", a, it.Status())
			}
		default:
			if a["evalrun.item.status"].AsString() != "succeeded" || a["evalrun.score.exact"].AsFloat64() != 1 || it.Status().Code == codes.Error {
				t.Errorf("item span: %v, status %v", a, it.Status())
			}
		}
	}
	var failedAttempts int
	for _, s := range append(byName["evalrun.attempt"], byName["evalrun.score"]...) {
		if _, ok := items[s.Parent().SpanID()]; !ok {
			t.Errorf("%s span's parent is not an item span", s.Name())
		}
		if s.Status().Code == codes.Error {
			failedAttempts++
			if a := otlptest.Attrs(s); a["evalrun.error.kind"].AsString() == "" {
				t.Errorf("a failed attempt without its error kind: %v", a)
			}
		}
	}
	if failedAttempts != 2 {
		t.Errorf("%d failed attempt spans, want 2 (q1's)", failedAttempts)
	}
	for _, res := range sum.Results {
		if res.TraceID != run.SpanContext().TraceID().String() {
			t.Errorf("item %s: trace_id %q, want the run's trace %s", res.ItemID, res.TraceID, run.SpanContext().TraceID())
		}
	}
}

// TestNoSpansWithoutProvider: with the API's default provider nothing is
// traced: no span context reaches the target, and results name no trace.
func TestNoSpansWithoutProvider(t *testing.T) {
	target := evalrun.TargetFunc(func(ctx context.Context, it *evalrun.Item) (evalrun.Output, error) {
		if trace.SpanContextFromContext(ctx).IsValid() || trace.SpanFromContext(ctx).IsRecording() {
			return evalrun.Output{}, errors.New("a span reached the target with tracing off")
		}
		return evalrun.Output{Value: it.Input}, nil
	})
	sum, err := engine.Run(context.Background(), nil, engine.Spec{Items: items(2), Target: target, Scorers: []evalrun.Scorer{exact}})
	if err != nil || sum.Succeeded != 2 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	for _, res := range sum.Results {
		if res.TraceID != "" {
			t.Errorf("trace_id %q with tracing off", res.TraceID)
		}
	}
}

// BenchmarkPipelineTracing is BenchmarkPipeline (concurrency 20) with
// tracing off (no provider installed: the cost of the instrumentation
// itself, to compare with BenchmarkPipeline before it existed) and on (an
// SDK provider batching to an exporter that discards: the cost of making
// the spans, without the OTLP encoding and transport).
func BenchmarkPipelineTracing(b *testing.B) {
	run := func(b *testing.B) {
		its := items(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		s, err := engine.Run(context.Background(), nil, engine.Spec{
			Items: its, Target: echo, Scorers: []evalrun.Scorer{exact},
			Options: engine.Options{Concurrency: 20, DiscardResults: true},
		})
		b.StopTimer()
		if err != nil || s.Succeeded != b.N {
			b.Fatalf("err %v summary %+v", err, s)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
	}
	b.Run("off", run)
	b.Run("on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		prev := otel.GetTracerProvider()
		otel.SetTracerProvider(tp)
		defer func() {
			otel.SetTracerProvider(prev)
			_ = tp.Shutdown(context.Background())
		}()
		run(b)
	})
	// otlp: what the CLI installs (evalrun/otel: span batcher, the
	// OTLP/HTTP exporter's transform, protobuf encoding and POSTs) to a
	// local receiver that reads and drops the requests.
	b.Run("otlp", func(b *testing.B) {
		sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
		}))
		defer sink.Close()
		b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
		tr, err := evalotel.Start(context.Background(), evalotel.Options{Getenv: os.Getenv})
		if err != nil || tr == nil {
			b.Fatalf("otel.Start: %v", err)
		}
		defer func() {
			if err := tr.Shutdown(context.Background()); err != nil {
				b.Error(err)
			}
		}()
		run(b)
	})
}
