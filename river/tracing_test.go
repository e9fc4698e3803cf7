package river

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/target"
)

// TestWorkerSpansContinueTheRunsTrace: a run enqueued under a span carries
// its context in every job, and the worker's item spans are its children,
// in its trace.
func TestWorkerSpansContinueTheRunsTrace(t *testing.T) {
	b := setup(t, 0)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	items := b.importItems(t, "traced", []string{"a", "b", "c"})
	cfg := runConfig{URL: b.target.srv.URL}
	raw, _ := json.Marshal(cfg)
	tgt, err := target.NewHTTP(target.HTTPConfig{URL: cfg.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	ctx, runSpan := tp.Tracer("test").Start(t.Context(), "evalrun.run")
	run, err := b.coord.Enqueue(ctx, engine.Spec{
		Run:   &evalrun.Run{Name: "traced", Dataset: "traced", DatasetVersion: 1, Target: evalrun.TargetInfo{Kind: "http"}, Config: raw},
		Items: items, Target: tgt, Scorers: []evalrun.Scorer{exactScorer{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.startWorker(t, &testBuilder{store: b.store}, 2)
	wctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if s, err := b.coord.Wait(wctx, run.ID, WaitOptions{}); err != nil || s.Succeeded != 3 {
		t.Fatalf("Wait = %+v, %v", s, err)
	}
	runSpan.End()

	var itemSpans int
	for _, s := range rec.Ended() {
		if s.Name() != "evalrun.item" {
			continue
		}
		itemSpans++
		if s.SpanContext().TraceID() != runSpan.SpanContext().TraceID() || s.Parent().SpanID() != runSpan.SpanContext().SpanID() {
			t.Errorf("item span in trace %s under %s, want the run's trace %s under its span %s",
				s.SpanContext().TraceID(), s.Parent().SpanID(), runSpan.SpanContext().TraceID(), runSpan.SpanContext().SpanID())
		}
	}
	if itemSpans != 3 {
		t.Errorf("%d item spans, want 3", itemSpans)
	}
}
