package tracing_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/otlptest"
	"github.com/evalrun/evalrun/internal/tracing"
)

// callTarget is a target whose attempts are one call when one is true.
type callTarget struct {
	evalrun.TargetFunc
	one bool
}

func (c callTarget) AttemptCall() (string, string, bool) { return "chat", "m", c.one }

// wrapper hides its target's methods but Unwrap.
type wrapper struct{ t evalrun.Target }

func (w wrapper) Execute(ctx context.Context, it *evalrun.Item) (evalrun.Output, error) {
	return w.t.Execute(ctx, it)
}
func (w wrapper) Unwrap() evalrun.Target { return w.t }

// TestAttemptCall: the call found through wrappers names the attempt
// span; a model call made directly under it takes it over (no child, the
// tokens on it, not ended by the call), one made under a deeper span is a
// child of its own, and a target that makes several calls has none.
func TestAttemptCall(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	if c := tracing.AttemptCallOf(wrapper{callTarget{one: false}}); c != nil {
		t.Errorf("a target of several calls: %+v, want nil", c)
	}
	if c := tracing.AttemptCallOf(evalrun.TargetFunc(nil)); c != nil {
		t.Errorf("a plain target: %+v, want nil", c)
	}
	call := tracing.AttemptCallOf(wrapper{wrapper{callTarget{one: true}}})
	if call == nil {
		t.Fatal("the call of a wrapped call target was not found")
	}

	ctx, run := tp.Tracer("t").Start(context.Background(), "run")
	actx, attempt := tracing.StartAttempt(ctx, call, 2)
	cctx, mc := tracing.StartModelCall(actx, "chat", "m")
	if cctx != actx || !mc.Recording() {
		t.Error("a call directly under its attempt span started a span of its own")
	}
	in, out := int64(3), int64(4)
	used := evalrun.Usage{InputTokens: &in, OutputTokens: &out}
	tracing.EndModelCall(mc, used, errors.New("ignored: the engine records the attempt's error"))
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans ended by the call, want the attempt left to the engine", n)
	}
	// A call under a deeper span (a tool's) is a span of its own.
	tctx, tool := tracing.StartToolCall(actx, "lookup", "")
	_, inner := tracing.StartModelCall(tctx, "chat", "m")
	tracing.EndModelCall(inner, evalrun.Usage{}, nil)
	tool.End()
	attempt.End(used, nil) // the attempt's usage is its call's
	run.End()

	ended := rec.Ended()
	if len(ended) != 4 {
		t.Fatalf("%d spans, want the inner call, the tool, the attempt, the run", len(ended))
	}
	innerSpan, attemptSpan := ended[0], ended[2]
	if innerSpan.Name() != "chat m" || innerSpan.Parent().SpanID() != ended[1].SpanContext().SpanID() {
		t.Errorf("inner call %q parent %s, want chat m under the tool", innerSpan.Name(), innerSpan.Parent().SpanID())
	}
	a := otlptest.Attrs(attemptSpan)
	if attemptSpan.Name() != "chat m" || attemptSpan.SpanKind() != trace.SpanKindClient || attemptSpan.Parent().SpanID() != run.SpanContext().SpanID() ||
		a["evalrun.attempt"].AsInt64() != 2 || a["gen_ai.operation.name"].AsString() != "chat" || a["gen_ai.request.model"].AsString() != "m" ||
		a["gen_ai.usage.input_tokens"].AsInt64() != 3 || a["gen_ai.usage.output_tokens"].AsInt64() != 4 || a["evalrun.error.kind"].Type() != attribute.INVALID {
		t.Errorf("attempt span %q kind %s attributes %v", attemptSpan.Name(), attemptSpan.SpanKind(), a)
	}

	// Untraced: nothing, and the context unchanged.
	bg := context.Background()
	if c, s := tracing.StartAttempt(bg, call, 1); c != bg || s.Span().IsRecording() {
		t.Error("StartAttempt made a span outside a traced run")
	}
	if tracing.ScoreKey("exact_match") != "evalrun.score.exact_match" || tracing.ScoreKey("exact_match") != tracing.ScoreKey("exact_match") {
		t.Error("ScoreKey")
	}
}

// TestDescribeReusesNoAttributes: the attribute buffers DescribeItem and
// DescribeScore reuse from call to call leave nothing of one span's
// attributes on the next, whether it has more or fewer.
func TestDescribeReusesNoAttributes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("t")
	one := 1.0
	results := []*evalrun.ItemResult{
		{RunID: "r", ItemID: "a", CacheHit: true, ErrorKind: evalrun.ErrorTimeout, Error: "slow",
			Scores: []evalrun.ScorerResult{{Scorer: "x", Score: &one}, {Scorer: "y", Score: &one}}},
		{RunID: "r", ItemID: "b"},
	}
	scores := []*evalrun.ScorerResult{{Scorer: "x", Score: &one, Passed: true, Error: "e", ErrorKind: evalrun.ErrorPermanent}, {Scorer: "z"}}
	for i := range results {
		_, item := tr.Start(context.Background(), "item")
		tracing.DescribeItem(item, results[i])
		item.End()
		_, sc := tr.Start(context.Background(), "score")
		tracing.DescribeScore(sc, scores[i])
		sc.End()
	}
	ended := rec.Ended()
	if n := len(otlptest.Attrs(ended[0])); n != 10 {
		t.Errorf("first item: %d attributes: %v", n, otlptest.Attrs(ended[0]))
	}
	if n := len(otlptest.Attrs(ended[1])); n != 4 {
		t.Errorf("first score: %d attributes: %v", n, otlptest.Attrs(ended[1]))
	}
	second, secondScore := otlptest.Attrs(ended[2]), otlptest.Attrs(ended[3])
	if _, cached := second[tracing.CacheHit]; len(second) != 6 || second[tracing.ItemID].AsString() != "b" || cached {
		t.Errorf("second item: %v", second)
	}
	if len(secondScore) != 1 || secondScore[tracing.ScorerName].AsString() != "z" {
		t.Errorf("second score: %v", secondScore)
	}
}
