package tracing

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/evalrun/evalrun"
)

// Instrumentation is the instrumentation scope of evalrun's spans.
const Instrumentation = "github.com/evalrun/evalrun"

// Tracer returns evalrun's tracer from the global provider. It is not kept
// for good: a program (or a test) that installs a provider after another
// was shut down must get spans from the new one; it is kept while the
// global provider stays the same, since an SDK provider's lookup takes a
// lock that every item's spans would contend for.
func Tracer() trace.Tracer {
	tp := otel.GetTracerProvider()
	if c := cached.Load(); c != nil && c.tp == tp {
		return c.tracer
	}
	c := &cachedTracer{tp: tp, tracer: tp.Tracer(Instrumentation)}
	cached.Store(c)
	return c.tracer
}

// cachedTracer is the tracer of one provider.
type cachedTracer struct {
	tp     trace.TracerProvider
	tracer trace.Tracer
}

var cached atomic.Pointer[cachedTracer]

// The span kinds as start options, made once: an option built per span
// is an allocation per span.
var (
	internalKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	clientKind   = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
)

func kindOption(kind trace.SpanKind) []trace.SpanStartOption {
	if kind == trace.SpanKindClient {
		return clientKind
	}
	return internalKind
}

// noSpan is the span returned when nothing is traced: a no-op that
// allocates nothing.
var noSpan = trace.SpanFromContext(context.Background())

// Active reports whether ctx is inside a traced run: it carries a valid
// span context (the run's span, a child of it, or a distributed run's
// context restored from its job).
func Active(ctx context.Context) bool {
	return trace.SpanContextFromContext(ctx).IsValid()
}

// Start starts a span named name, a child of ctx's span, when ctx is
// inside a traced run ([Active]); otherwise it returns ctx unchanged and a
// no-op span, at no cost.
func Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if !Active(ctx) {
		return ctx, noSpan
	}
	return Tracer().Start(ctx, name, kindOption(kind)...)
}

// Inject writes the trace context of ctx's span into h (traceparent, with
// the W3C propagator the otel package installs) when ctx is inside a traced
// run. With tracing off it writes nothing and costs one context lookup. The
// global propagator is used, not a fixed one, so that a program embedding
// evalrun with its own propagators (B3, baggage) gets its headers.
func Inject(ctx context.Context, h http.Header) {
	if !Active(ctx) {
		return
	}
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
}

// w3c is the format of a job's trace_parent: fixed, whatever the global
// propagator, since the coordinator and the workers must agree on it.
var w3c propagation.TraceContext

// TraceParent returns the W3C traceparent of ctx's span ("" when ctx is
// not inside a traced run), for a distributed run's jobs.
func TraceParent(ctx context.Context) string {
	if !Active(ctx) {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"]
}

// WithTraceParent returns ctx carrying the remote span context of
// traceparent (from [TraceParent]), so that the spans started under it
// continue that trace; ctx itself when traceparent is empty or invalid.
func WithTraceParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// Attribute keys of evalrun's spans (docs/observability.md lists them).
const (
	RunID          = attribute.Key("evalrun.run.id")
	RunName        = attribute.Key("evalrun.run.name")
	RunStatus      = attribute.Key("evalrun.run.status")
	RunTotal       = attribute.Key("evalrun.run.total")
	RunSucceeded   = attribute.Key("evalrun.run.succeeded")
	RunFailed      = attribute.Key("evalrun.run.failed")
	RunSkipped     = attribute.Key("evalrun.run.skipped")
	Dataset        = attribute.Key("evalrun.dataset.name")
	DatasetVersion = attribute.Key("evalrun.dataset.version")
	TargetKind     = attribute.Key("evalrun.target.kind")
	TargetName     = attribute.Key("evalrun.target.name")
	Experiment     = attribute.Key("evalrun.experiment.id")
	Variant        = attribute.Key("evalrun.variant")

	ItemID       = attribute.Key("evalrun.item.id")
	ItemIndex    = attribute.Key("evalrun.item.index")
	ItemRepeat   = attribute.Key("evalrun.item.repeat")
	ItemStatus   = attribute.Key("evalrun.item.status")
	ItemAttempts = attribute.Key("evalrun.item.attempts")
	CacheHit     = attribute.Key("evalrun.item.cache_hit")
	ErrorKind    = attribute.Key("evalrun.error.kind")
	Attempt      = attribute.Key("evalrun.attempt")
	StatusCode   = attribute.Key("http.response.status_code")
	ScorerName   = attribute.Key("evalrun.scorer.name")
	Score        = attribute.Key("evalrun.score")
	ScorePassed  = attribute.Key("evalrun.score.passed")
	// ScorePrefix + a scorer's name is an item span's attribute holding
	// that scorer's score.
	ScorePrefix = "evalrun.score."

	// The GenAI semantic conventions of model calls and tool calls.
	GenAIOperation    = attribute.Key("gen_ai.operation.name")
	GenAIProvider     = attribute.Key("gen_ai.provider.name")
	GenAISystem       = attribute.Key("gen_ai.system") // the older name of gen_ai.provider.name
	GenAIRequestModel = attribute.Key("gen_ai.request.model")
	GenAIInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	GenAIOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	GenAIToolName     = attribute.Key("gen_ai.tool.name")
	GenAIToolCallID   = attribute.Key("gen_ai.tool.call.id")
	ErrorType         = attribute.Key("error.type")
)

// Names of evalrun's own spans. A model call's span is named
// "OPERATION MODEL" and a tool call's "execute_tool NAME", as the GenAI
// conventions ask.
const (
	SpanRun        = "evalrun.run"
	SpanExperiment = "evalrun.experiment"
	SpanItem       = "evalrun.item"
	SpanAttempt    = "evalrun.attempt"
	SpanScore      = "evalrun.score"
)

// StartRun starts the span of a run, a root span unless ctx carries one;
// unlike [Start] it always starts one (a no-op without a provider), since
// it is what makes a run traced. Describe it with [DescribeRun] once its
// record exists and end it with [EndRun].
func StartRun(ctx context.Context, name string) (context.Context, trace.Span) {
	return Tracer().Start(ctx, name, internalKind...)
}

// DescribeRun sets the attributes of a run's record on its span.
func DescribeRun(span trace.Span, rec *evalrun.Run) {
	if !span.IsRecording() || rec == nil {
		return
	}
	span.SetAttributes(RunID.String(rec.ID), RunTotal.Int(rec.Total))
	if rec.Name != "" {
		span.SetAttributes(RunName.String(rec.Name))
	}
	if rec.Dataset != "" {
		span.SetAttributes(Dataset.String(rec.Dataset), DatasetVersion.Int(rec.DatasetVersion))
	}
	if rec.Target.Kind != "" {
		span.SetAttributes(TargetKind.String(rec.Target.Kind), TargetName.String(rec.Target.Name))
	}
	if rec.Experiment != "" {
		span.SetAttributes(Experiment.String(rec.Experiment), Variant.String(rec.Variant))
	}
}

// EndRun records a run's outcome on its span and ends it; sum nil means
// the run did not start (err says why).
func EndRun(span trace.Span, sum *evalrun.Summary, err error) {
	if span.IsRecording() {
		switch {
		case sum == nil:
			if err != nil {
				span.SetStatus(codes.Error, err.Error())
			}
		default:
			span.SetAttributes(RunStatus.String(string(sum.Status)), RunSucceeded.Int(sum.Succeeded),
				RunFailed.Int(sum.Failed), RunSkipped.Int(sum.Skipped))
			if sum.Status == evalrun.RunFailed {
				msg := "run failed"
				if sum.Err != nil {
					msg = sum.Err.Error()
				}
				span.SetStatus(codes.Error, msg)
			}
		}
	}
	span.End()
}

// DescribeItem sets an item result's attributes on its span: ids,
// position, status, error kind and one evalrun.score.NAME per score. A
// failed item's span has status Error.
func DescribeItem(span trace.Span, res *evalrun.ItemResult) {
	if !span.IsRecording() {
		return
	}
	status := "succeeded"
	switch {
	case res.ErrorKind == evalrun.ErrorCanceled:
		status = "canceled"
	case res.Failed():
		status = "failed"
	}
	buf := getAttrs()
	defer putAttrs(buf)
	attrs := append(*buf, RunID.String(res.RunID), ItemID.String(res.ItemID), ItemIndex.Int(res.Index),
		ItemRepeat.Int(res.Repeat), ItemStatus.String(status), ItemAttempts.Int(res.Attempts))
	if res.CacheHit {
		attrs = append(attrs, CacheHit.Bool(true))
	}
	if res.ErrorKind != "" {
		attrs = append(attrs, ErrorKind.String(string(res.ErrorKind)))
	}
	for _, s := range res.Scores {
		if s.Score != nil {
			attrs = append(attrs, ScoreKey(s.Scorer).Float64(*s.Score))
		}
	}
	span.SetAttributes(attrs...)
	*buf = attrs
	if res.Failed() {
		span.SetStatus(codes.Error, res.Error)
	}
}

// attrBufs holds slices for the attributes of one SetAttributes call on
// the hot path (an item's, a scorer's), reused from item to item: the
// variadic slice of a call through the trace.Span interface escapes, so
// each call allocated its own (~0.6 KB per item, garbage at once). The
// SDK copies the attributes it is given into the span, so the slice is
// free again when SetAttributes returns.
var attrBufs = sync.Pool{New: func() any { s := make([]attribute.KeyValue, 0, 16); return &s }}

func getAttrs() *[]attribute.KeyValue { return attrBufs.Get().(*[]attribute.KeyValue) }

// putAttrs clears the slice (it must not keep attribute values alive)
// and gives it back.
func putAttrs(p *[]attribute.KeyValue) {
	clear((*p)[:cap(*p)])
	*p = (*p)[:0]
	attrBufs.Put(p)
}

// DescribeScore sets the attributes of a scorer's span from its result,
// in one SetAttributes call (each call grows the span's attribute slice
// again), and its status when the scorer failed.
func DescribeScore(span trace.Span, r *evalrun.ScorerResult) {
	if !span.IsRecording() {
		return
	}
	buf := getAttrs()
	defer putAttrs(buf)
	attrs := append(*buf, ScorerName.String(r.Scorer))
	if r.Score != nil {
		attrs = append(attrs, Score.Float64(*r.Score), ScorePassed.Bool(r.Passed))
	}
	if r.Error != "" {
		attrs = append(attrs, ErrorKind.String(string(r.ErrorKind)))
	}
	span.SetAttributes(attrs...)
	*buf = attrs
	if r.Error != "" {
		span.SetStatus(codes.Error, r.Error)
	}
}

// scoreKeys holds the evalrun.score.NAME key of every scorer name met:
// made once, not concatenated for every item.
var scoreKeys sync.Map // string → attribute.Key

// ScoreKey returns the item span's attribute key of scorer name's score,
// evalrun.score.NAME.
func ScoreKey(name string) attribute.Key {
	if k, ok := scoreKeys.Load(name); ok {
		return k.(attribute.Key)
	}
	k := attribute.Key(ScorePrefix + name)
	scoreKeys.Store(name, k)
	return k
}

// failAttrs appends the attributes of a failure with err: its error kind
// and HTTP status when it has one.
func failAttrs(attrs []attribute.KeyValue, err error) []attribute.KeyValue {
	kind := evalrun.KindOf(err)
	attrs = append(attrs, ErrorKind.String(string(kind)), ErrorType.String(string(kind)))
	var e *evalrun.Error
	if errors.As(err, &e) && e.StatusCode != 0 {
		attrs = append(attrs, StatusCode.Int(e.StatusCode))
	}
	return attrs
}

// tokenAttrs appends the GenAI token counts u has.
func tokenAttrs(attrs []attribute.KeyValue, u evalrun.Usage) []attribute.KeyValue {
	if u.InputTokens != nil {
		attrs = append(attrs, GenAIInputTokens.Int64(*u.InputTokens))
	}
	if u.OutputTokens != nil {
		attrs = append(attrs, GenAIOutputTokens.Int64(*u.OutputTokens))
	}
	return attrs
}

// ModelCall is the span of one model call, from [StartModelCall]: a child
// span of its own, or the attempt span the call is (see [CallTarget]).
type ModelCall struct {
	span trace.Span
	// attempt: span is the engine's attempt span, described as this call
	// when it started; the engine records its error and ends it.
	attempt bool
}

// Recording reports whether the call's span records (the run is traced).
func (c ModelCall) Recording() bool { return c.span.IsRecording() }

// StartModelCall starts the span of a call to a model (operation "chat" or
// "embeddings") with the GenAI attributes known before the call, when ctx
// is inside a traced run. End it with [EndModelCall].
//
// When ctx's span is the attempt span the engine started as this call (the
// target is a [CallTarget]: its attempt is exactly this one call), no child
// is made: the attempt span already is the call's span, with its name and
// attributes, and ctx is returned as it is.
func StartModelCall(ctx context.Context, operation, model string) (context.Context, ModelCall) {
	if !Active(ctx) {
		return ctx, ModelCall{span: noSpan}
	}
	if s, ok := ctx.Value(attemptCallKey{}).(trace.Span); ok && s == trace.SpanFromContext(ctx) {
		return ctx, ModelCall{span: s, attempt: true}
	}
	ctx, span := Tracer().Start(ctx, operation+" "+model, clientKind...)
	buf := getAttrs()
	*buf = callAttrs(*buf, operation, model)
	span.SetAttributes(*buf...)
	putAttrs(buf)
	return ctx, ModelCall{span: span}
}

// callAttrs appends the GenAI attributes of a call to model known before
// it is made.
func callAttrs(attrs []attribute.KeyValue, operation, model string) []attribute.KeyValue {
	return append(attrs, GenAIOperation.String(operation), GenAIProvider.String("openai"), GenAISystem.String("openai"),
		GenAIRequestModel.String(model))
}

// EndModelCall records the tokens a model call used (and its error) and
// ends its span. On an attempt span that is the call it does nothing: the
// engine records the attempt's usage, which is the call's, its outcome,
// and ends it ([AttemptSpan.End]).
func EndModelCall(c ModelCall, u evalrun.Usage, err error) {
	if c.attempt {
		return
	}
	span := c.span
	if span.IsRecording() {
		buf := getAttrs()
		*buf = tokenAttrs(*buf, u)
		if err != nil {
			*buf = failAttrs(*buf, err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.SetAttributes(*buf...)
		putAttrs(buf)
	}
	span.End()
}

// CallTarget is implemented by a target whose every attempt may be exactly
// one model call (the openai chat target without tools). The engine then
// makes the attempt's span that call's span, named and described per the
// GenAI conventions ("chat MODEL", kind client, gen_ai.* attributes) with
// the attempt's own attributes, instead of an attempt span with the call's
// span as its only child: one span fewer per item.
type CallTarget interface {
	// AttemptCall returns the operation ("chat") and model of the one
	// call each attempt makes; ok is false when an attempt may make
	// several (an agent's turns), which keep their own spans.
	AttemptCall() (operation, model string, ok bool)
}

// Call is how a pipeline starts its attempt spans: as plain attempts
// (nil) or as the one model call of a [CallTarget], with its name made
// once.
type Call struct {
	name, operation, model string
}

// AttemptCallOf returns the Call of t's attempts when t (or the target it
// wraps, through Unwrap() evalrun.Target methods) is a [CallTarget] whose
// attempts are one call; nil otherwise.
func AttemptCallOf(t evalrun.Target) *Call {
	for t != nil {
		if ct, ok := t.(CallTarget); ok {
			op, model, one := ct.AttemptCall()
			if !one {
				return nil
			}
			return &Call{name: op + " " + model, operation: op, model: model}
		}
		w, ok := t.(interface{ Unwrap() evalrun.Target })
		if !ok {
			return nil
		}
		t = w.Unwrap()
	}
	return nil
}

// attemptCallKey is the context key of an attempt span that is a model
// call, for [StartModelCall] to recognise.
type attemptCallKey struct{}

// AttemptSpan is the span of one target attempt, from [StartAttempt]; end
// it with [AttemptSpan.End].
type AttemptSpan struct {
	span trace.Span
	call *Call
	n    int
}

// StartAttempt starts the span of target attempt n (1 for the first call)
// when ctx is inside a traced run: "evalrun.attempt", or with call non-nil
// the span of that model call (see [CallTarget]), which the target's
// [StartModelCall] then takes as its own.
func StartAttempt(ctx context.Context, call *Call, n int) (context.Context, AttemptSpan) {
	if !Active(ctx) {
		return ctx, AttemptSpan{span: noSpan}
	}
	var span trace.Span
	if call == nil {
		ctx, span = Tracer().Start(ctx, SpanAttempt, internalKind...)
	} else {
		ctx, span = Tracer().Start(ctx, call.name, clientKind...)
		ctx = context.WithValue(ctx, attemptCallKey{}, span)
	}
	return ctx, AttemptSpan{span: span, call: call, n: n}
}

// Span returns the attempt's span (a no-op outside a traced run).
func (a AttemptSpan) Span() trace.Span { return a.span }

// End records the attempt's attributes and ends its span: its number, for
// the attempt that is a model call the GenAI attributes and the tokens of
// u (the attempt's usage is that call's), and err's when it failed. They
// are set in one SetAttributes call when the attempt ends, not partly at
// its start: each call grows the span's attribute slice again (a
// reallocation and a copy per item).
func (a AttemptSpan) End(u evalrun.Usage, err error) {
	span := a.span
	if span.IsRecording() {
		buf := getAttrs()
		attrs := *buf
		if a.call != nil {
			attrs = tokenAttrs(callAttrs(attrs, a.call.operation, a.call.model), u)
		}
		attrs = append(attrs, Attempt.Int(a.n))
		if err != nil {
			attrs = failAttrs(attrs, err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.SetAttributes(attrs...)
		*buf = attrs
		putAttrs(buf)
	}
	span.End()
}

// StartToolCall starts the span of an agent's tool call answered by the
// tool's run target, when ctx is inside a traced run.
func StartToolCall(ctx context.Context, name, callID string) (context.Context, trace.Span) {
	if !Active(ctx) {
		return ctx, noSpan
	}
	ctx, span := Tracer().Start(ctx, "execute_tool "+name, internalKind...)
	span.SetAttributes(GenAIOperation.String("execute_tool"), GenAIToolName.String(name))
	if callID != "" {
		span.SetAttributes(GenAIToolCallID.String(callID))
	}
	return ctx, span
}
