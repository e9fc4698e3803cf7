package otel

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// decode encodes spans with a fresh encoder and decodes the result with
// the official generated types.
func decode(t testing.TB, e *encoder, spans []sdktrace.ReadOnlySpan) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	b, _ := e.encode(spans)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		t.Fatalf("the official types do not decode the request: %v", err)
	}
	return &req
}

func str(v string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}
}
func integer(v int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}
}
func boolean(v bool) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v}}
}
func double(v float64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}
}
func array(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}
func kv(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

var (
	traceID1 = trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	traceID2 = trace.TraceID{0xf0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0xff}
)

func spanID(b byte) trace.SpanID { return trace.SpanID{b, 0, 0, 0, 0, 0, 0, b} }

// TestEncodeEveryField: a span stub with every field the official exporter
// sends decodes, with the official types, to exactly the message written
// out here by hand (enums from the generated constants: OTLP's status
// codes are the reverse of the API's).
func TestEncodeEveryField(t *testing.T) {
	ts, err := trace.ParseTraceState("vendor=v1,other=x")
	if err != nil {
		t.Fatal(err)
	}
	lts, _ := trace.ParseTraceState("linked=1")
	start := time.Unix(1_700_000_000, 123_456_789)
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "evalrun"), attribute.Int("pid", 42))
	scope := instrumentation.Scope{Name: "github.com/evalrun/evalrun", Version: "v1.2.3", SchemaURL: "https://example.com/scope",
		Attributes: attribute.NewSet(attribute.Bool("scoped", true))}
	stub := tracetest.SpanStub{
		Name: "chat gpt-4o",
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID1, SpanID: spanID(2),
			TraceFlags: trace.FlagsSampled, TraceState: ts}),
		Parent:    trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID1, SpanID: spanID(1), TraceFlags: trace.FlagsSampled, Remote: true}),
		SpanKind:  trace.SpanKindClient,
		StartTime: start,
		EndTime:   start.Add(1500 * time.Millisecond),
		Attributes: []attribute.KeyValue{
			attribute.String("s", "é\x00"), attribute.String("empty", ""),
			attribute.Bool("t", true), attribute.Bool("f", false),
			attribute.Int64("i", -7), attribute.Int64("zero", 0), attribute.Int64("max", math.MaxInt64),
			attribute.Float64("pi", 3.25), attribute.Float64("negzero", math.Copysign(0, -1)),
			attribute.StringSlice("ss", []string{"a", ""}), attribute.BoolSlice("bs", []bool{true, false}),
			attribute.Int64Slice("is", []int64{-1, 0, 1 << 40}), attribute.Float64Slice("fs", []float64{0.5, -2}),
			attribute.StringSlice("none", nil),
		},
		Events: []sdktrace.Event{
			{Name: "retry", Time: start.Add(time.Millisecond), Attributes: []attribute.KeyValue{attribute.Int("n", 2)}, DroppedAttributeCount: 3},
			{Name: "bare", Time: start.Add(2 * time.Millisecond)},
		},
		Links: []sdktrace.Link{
			{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID2, SpanID: spanID(9), TraceState: lts, Remote: true, TraceFlags: trace.FlagsSampled}),
				Attributes: []attribute.KeyValue{attribute.String("why", "follows")}, DroppedAttributeCount: 1},
			{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID2, SpanID: spanID(8)})},
		},
		Status:               sdktrace.Status{Code: codes.Error, Description: "boom"},
		DroppedAttributes:    4,
		DroppedEvents:        5,
		DroppedLinks:         6,
		Resource:             res,
		InstrumentationScope: scope,
	}
	want := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("pid", integer(42)), kv("service.name", str("evalrun"))}},
		SchemaUrl: "https://opentelemetry.io/schemas/1.26.0",
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "github.com/evalrun/evalrun", Version: "v1.2.3",
				Attributes: []*commonpb.KeyValue{kv("scoped", boolean(true))}},
			SchemaUrl: "https://example.com/scope",
			Spans: []*tracepb.Span{{
				TraceId:           traceID1[:],
				SpanId:            []byte{2, 0, 0, 0, 0, 0, 0, 2},
				TraceState:        "vendor=v1,other=x",
				ParentSpanId:      []byte{1, 0, 0, 0, 0, 0, 0, 1},
				Flags:             0x01 | 0x100 | 0x200, // sampled, has is-remote, parent is remote
				Name:              "chat gpt-4o",
				Kind:              tracepb.Span_SPAN_KIND_CLIENT,
				StartTimeUnixNano: 1_700_000_000_123_456_789,
				EndTimeUnixNano:   1_700_000_001_623_456_789,
				Attributes: []*commonpb.KeyValue{
					kv("s", str("é\x00")), kv("empty", str("")),
					kv("t", boolean(true)), kv("f", boolean(false)),
					kv("i", integer(-7)), kv("zero", integer(0)), kv("max", integer(math.MaxInt64)),
					kv("pi", double(3.25)), kv("negzero", double(math.Copysign(0, -1))),
					kv("ss", array(str("a"), str(""))), kv("bs", array(boolean(true), boolean(false))),
					kv("is", array(integer(-1), integer(0), integer(1<<40))), kv("fs", array(double(0.5), double(-2))),
					kv("none", array()),
				},
				DroppedAttributesCount: 4,
				Events: []*tracepb.Span_Event{
					{TimeUnixNano: 1_700_000_000_124_456_789, Name: "retry", Attributes: []*commonpb.KeyValue{kv("n", integer(2))}, DroppedAttributesCount: 3},
					{TimeUnixNano: 1_700_000_000_125_456_789, Name: "bare"},
				},
				DroppedEventsCount: 5,
				Links: []*tracepb.Span_Link{
					{TraceId: traceID2[:], SpanId: []byte{9, 0, 0, 0, 0, 0, 0, 9}, TraceState: "linked=1",
						Attributes: []*commonpb.KeyValue{kv("why", str("follows"))}, DroppedAttributesCount: 1, Flags: 0x01 | 0x100 | 0x200},
					{TraceId: traceID2[:], SpanId: []byte{8, 0, 0, 0, 0, 0, 0, 8}, Flags: 0x100},
				},
				DroppedLinksCount: 6,
				Status:            &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "boom"},
			}},
		}},
	}}}
	got := decode(t, &encoder{}, tracetest.SpanStubs{stub}.Snapshots())
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Errorf("decoded request (-want +got):\n%s", d)
	}
}

// TestEncodeEnumsAndFlags: every span kind and status code maps to OTLP's
// number, and the flags say whether the parent is remote, local or absent.
func TestEncodeEnumsAndFlags(t *testing.T) {
	kinds := map[trace.SpanKind]tracepb.Span_SpanKind{
		trace.SpanKindUnspecified: tracepb.Span_SPAN_KIND_UNSPECIFIED,
		trace.SpanKindInternal:    tracepb.Span_SPAN_KIND_INTERNAL,
		trace.SpanKindServer:      tracepb.Span_SPAN_KIND_SERVER,
		trace.SpanKindClient:      tracepb.Span_SPAN_KIND_CLIENT,
		trace.SpanKindProducer:    tracepb.Span_SPAN_KIND_PRODUCER,
		trace.SpanKindConsumer:    tracepb.Span_SPAN_KIND_CONSUMER,
		trace.SpanKind(99):        tracepb.Span_SPAN_KIND_UNSPECIFIED,
	}
	statuses := []struct {
		in   codes.Code
		want tracepb.Status_StatusCode
	}{{codes.Unset, tracepb.Status_STATUS_CODE_UNSET}, {codes.Ok, tracepb.Status_STATUS_CODE_OK}, {codes.Error, tracepb.Status_STATUS_CODE_ERROR}}
	parents := []struct {
		parent trace.SpanContext
		flags  uint32
	}{
		{trace.SpanContext{}, 0x100},
		{trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID1, SpanID: spanID(1)}), 0x100},
		{trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID1, SpanID: spanID(1), Remote: true}), 0x300},
	}
	e := &encoder{}
	for kind, wantKind := range kinds {
		for _, st := range statuses {
			for _, p := range parents {
				for _, tf := range []trace.TraceFlags{0, trace.FlagsSampled} {
					stub := tracetest.SpanStub{
						Name:        "s",
						SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID1, SpanID: spanID(2), TraceFlags: tf}),
						Parent:      p.parent, SpanKind: kind, Status: sdktrace.Status{Code: st.in},
					}
					s := decode(t, e, tracetest.SpanStubs{stub}.Snapshots()).ResourceSpans[0].ScopeSpans[0].Spans[0]
					if s.Kind != wantKind || s.Status.GetCode() != st.want || s.Flags != p.flags|uint32(tf) {
						t.Errorf("kind %v status %v parent %v flags %v: got kind %v status %v flags %#x, want %v %v %#x",
							kind, st.in, p.parent, tf, s.Kind, s.Status.GetCode(), s.Flags, wantKind, st.want, p.flags|uint32(tf))
					}
					if p.parent.IsValid() != (len(s.ParentSpanId) == 8) {
						t.Errorf("parent %v: parent_span_id %x", p.parent, s.ParentSpanId)
					}
				}
			}
		}
	}
}

// TestEncodeGroupsResourcesAndScopes: a batch mixing resources and scopes
// (and a nil span) comes out as one ResourceSpans per resource, one
// ScopeSpans per scope inside it, each span once and in batch order, the
// scope without a name without an InstrumentationScope message, as the
// official exporter does.
func TestEncodeGroupsResourcesAndScopes(t *testing.T) {
	resA := resource.NewSchemaless(attribute.String("service.name", "a"))
	resA2 := resource.NewSchemaless(attribute.String("service.name", "a")) // equal attributes, another pointer
	resB := resource.NewWithAttributes("https://schema/b", attribute.String("service.name", "b"))
	s1 := instrumentation.Scope{Name: "one"}
	s2 := instrumentation.Scope{Name: "two", Version: "2"}
	var stubs tracetest.SpanStubs
	plan := []struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}{{resA, s1}, {resB, s1}, {resA, s2}, {resA2, s1}, {resB, instrumentation.Scope{}}, {nil, s1}, {resA, s2}}
	for i, p := range plan {
		stubs = append(stubs, tracetest.SpanStub{Name: string(rune('a' + i)), Resource: p.res, InstrumentationScope: p.scope,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID1, SpanID: spanID(byte(i + 1))})})
	}
	spans := stubs.Snapshots()
	spans = append(spans[:3], append([]sdktrace.ReadOnlySpan{nil}, spans[3:]...)...)
	e := &encoder{}
	for range 2 { // the second time with the buffers of the first
		got := decode(t, e, spans)
		type flat struct{ Resource, SchemaURL, Scope, Spans string }
		var gotFlat []flat
		for _, rs := range got.ResourceSpans {
			res := "none"
			if rs.Resource != nil {
				res = ""
				for _, a := range rs.Resource.Attributes {
					res += a.Key + "=" + a.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				names := ""
				for _, s := range ss.Spans {
					names += s.Name
				}
				scope := "nil"
				if ss.Scope != nil {
					scope = ss.Scope.Name + "@" + ss.Scope.Version
				}
				gotFlat = append(gotFlat, flat{res, rs.SchemaUrl, scope, names})
			}
		}
		want := []flat{
			{"service.name=a", "", "one@", "ad"},
			{"service.name=a", "", "two@2", "cg"},
			{"service.name=b", "https://schema/b", "one@", "b"},
			{"service.name=b", "https://schema/b", "nil", "e"},
			// A nil resource: no Resource message, as from the official exporter.
			{"none", "", "one@", "f"},
		}
		if d := cmp.Diff(want, gotFlat); d != "" {
			t.Errorf("groups (-want +got):\n%s", d)
		}
	}
	if b, n := e.encode(nil); len(b) != 0 || n != 0 {
		t.Errorf("no spans: %d bytes, %d spans", len(b), n)
	}
}

// TestEncodeSDKSpans: spans the SDK itself made (a root, a child with
// events, an error, a link, attributes set along the way) decode to their
// ReadOnlySpan's every field.
func TestEncodeSDKSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	res := resource.NewSchemaless(attribute.String("service.name", "evalrun"), attribute.String("service.version", "v9"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := tp.Tracer("github.com/evalrun/evalrun/engine", trace.WithInstrumentationVersion("v1"))
	ctx, run := tr.Start(context.Background(), "evalrun.run", trace.WithAttributes(attribute.String("evalrun.run.id", "r1")))
	_, item := tr.Start(ctx, "evalrun.item", trace.WithLinks(trace.Link{SpanContext: run.SpanContext(), Attributes: []attribute.KeyValue{attribute.Int("k", 1)}}))
	item.SetAttributes(attribute.Float64("evalrun.score.exact_match", 1), attribute.Bool("evalrun.item.cache_hit", false))
	item.AddEvent("retry", trace.WithAttributes(attribute.StringSlice("why", []string{"429"})))
	item.SetStatus(codes.Error, "failed")
	item.End()
	_, call := tr.Start(ctx, "chat m", trace.WithSpanKind(trace.SpanKindClient))
	call.SetStatus(codes.Ok, "")
	call.End() // under 128 bytes: its length takes one byte
	_, big := tr.Start(ctx, "big")
	big.SetAttributes(attribute.String("output", strings.Repeat("x", 20000)))
	big.End() // 16,384 bytes or more: its length takes three
	run.End()
	ended := rec.Ended()
	got := decode(t, &encoder{}, ended)
	if len(got.ResourceSpans) != 1 || len(got.ResourceSpans[0].ScopeSpans) != 1 {
		t.Fatalf("want one resource and scope: %v", got)
	}
	ss := got.ResourceSpans[0].ScopeSpans[0]
	if ss.Scope.GetName() != "github.com/evalrun/evalrun/engine" || ss.Scope.GetVersion() != "v1" || len(ss.Spans) != len(ended) {
		t.Fatalf("scope %v, %d spans", ss.Scope, len(ss.Spans))
	}
	for i, ro := range ended {
		if d := cmp.Diff(officialSpan(ro), ss.Spans[i], protocmp.Transform()); d != "" {
			t.Errorf("span %s (-want +got):\n%s", ro.Name(), d)
		}
	}
}

// officialSpan is the span as the official exporter's transform builds
// it (go.opentelemetry.io/otel/exporters/otlp/otlptrace internal
// tracetransform, v1.47.0), link trace state added.
func officialSpan(ro sdktrace.ReadOnlySpan) *tracepb.Span {
	flags := func(sc trace.SpanContext, remote bool) uint32 {
		f := uint32(sc.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
		if remote {
			f |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
		return f
	}
	sc := ro.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	s := &tracepb.Span{
		TraceId: tid[:], SpanId: sid[:], TraceState: sc.TraceState().String(), Name: ro.Name(),
		Kind:              tracepb.Span_SpanKind(ro.SpanKind()),
		StartTimeUnixNano: uint64(ro.StartTime().UnixNano()), EndTimeUnixNano: uint64(ro.EndTime().UnixNano()),
		Attributes:             keyValues(ro.Attributes()),
		DroppedAttributesCount: uint32(ro.DroppedAttributes()), DroppedEventsCount: uint32(ro.DroppedEvents()), DroppedLinksCount: uint32(ro.DroppedLinks()),
		Flags:  flags(sc, ro.Parent().IsRemote()),
		Status: &tracepb.Status{Message: ro.Status().Description},
	}
	switch ro.Status().Code {
	case codes.Ok:
		s.Status.Code = tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		s.Status.Code = tracepb.Status_STATUS_CODE_ERROR
	}
	if p := ro.Parent().SpanID(); p.IsValid() {
		s.ParentSpanId = p[:]
	}
	for _, ev := range ro.Events() {
		s.Events = append(s.Events, &tracepb.Span_Event{Name: ev.Name, TimeUnixNano: uint64(ev.Time.UnixNano()),
			Attributes: keyValues(ev.Attributes), DroppedAttributesCount: uint32(ev.DroppedAttributeCount)})
	}
	for _, l := range ro.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		s.Links = append(s.Links, &tracepb.Span_Link{TraceId: ltid[:], SpanId: lsid[:], TraceState: l.SpanContext.TraceState().String(),
			Attributes: keyValues(l.Attributes), DroppedAttributesCount: uint32(l.DroppedAttributeCount), Flags: flags(l.SpanContext, l.SpanContext.IsRemote())})
	}
	return s
}

func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for _, a := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(a.Key), Value: anyValue(a.Value)})
	}
	return out
}

// anyValue is the official transform's Value.
func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return boolean(v.AsBool())
	case attribute.INT64:
		return integer(v.AsInt64())
	case attribute.FLOAT64:
		return double(v.AsFloat64())
	case attribute.STRING:
		return str(v.AsString())
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		var vs []*commonpb.AnyValue
		for _, b := range v.AsBoolSlice() {
			vs = append(vs, boolean(b))
		}
		return array(vs...)
	case attribute.INT64SLICE:
		var vs []*commonpb.AnyValue
		for _, n := range v.AsInt64Slice() {
			vs = append(vs, integer(n))
		}
		return array(vs...)
	case attribute.FLOAT64SLICE:
		var vs []*commonpb.AnyValue
		for _, f := range v.AsFloat64Slice() {
			vs = append(vs, double(f))
		}
		return array(vs...)
	case attribute.STRINGSLICE:
		var vs []*commonpb.AnyValue
		for _, s := range v.AsStringSlice() {
			vs = append(vs, str(s))
		}
		return array(vs...)
	case attribute.SLICE:
		var vs []*commonpb.AnyValue
		for _, el := range v.AsSlice() {
			vs = append(vs, anyValue(el))
		}
		return array(vs...)
	case attribute.MAP:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: keyValues(v.AsMap())}}}
	case attribute.EMPTY:
		return &commonpb.AnyValue{}
	default:
		return str("INVALID")
	}
}

// FuzzAttributeValues: attribute values of every type, made of arbitrary
// strings, numbers and bytes, decode to what they were.
func FuzzAttributeValues(f *testing.F) {
	f.Add("", false, int64(0), 0.0, []byte(nil))
	f.Add("é\x00\xff", true, int64(math.MinInt64), math.Inf(-1), []byte{0, 1, 2})
	f.Add(string(make([]byte, 300)), true, int64(math.MaxInt64), math.NaN(), make([]byte, 200))
	f.Fuzz(func(t *testing.T, s string, b bool, i int64, fl float64, bs []byte) {
		attrs := []attribute.KeyValue{
			attribute.String(s, s), attribute.Bool("b", b), attribute.Int64("i", i), attribute.Float64("f", fl),
			attribute.StringSlice("ss", []string{s, s + s}), attribute.BoolSlice("bs", []bool{b, !b}),
			attribute.Int64Slice("is", []int64{i, -i, i / 3}), attribute.Float64Slice("fs", []float64{fl, -fl}),
			attribute.ByteSlice("bytes", bs),
			attribute.Slice("slice", attribute.StringValue(s), attribute.Int64Value(i), attribute.SliceValue(attribute.BoolValue(b))),
			attribute.Map("map", attribute.String(s, s), attribute.Float64("f", fl), attribute.Map("inner", attribute.Int64("i", i))),
			{Key: "empty"},
		}
		stub := tracetest.SpanStub{Name: s, Attributes: attrs,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID1, SpanID: spanID(1)})}
		got := decode(t, &encoder{}, tracetest.SpanStubs{stub}.Snapshots()).ResourceSpans[0].ScopeSpans[0].Spans[0]
		// NaN != NaN: compare floats by their bits.
		eqFloat := cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })
		if d := cmp.Diff(keyValues(attrs), got.Attributes, protocmp.Transform(), eqFloat, validStrings); d != "" || got.Name != strings.ToValidUTF8(s, "\uFFFD") {
			t.Errorf("attributes (-want +got):\n%s", d)
		}
	})
}

// validStrings compares strings as the encoder sends them: invalid UTF-8
// replaced by U+FFFD (protobuf strings must be UTF-8).
var validStrings = cmp.Transformer("validUTF8", func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") })

// BenchmarkEncode: the encoder alone, a batch of 512 spans like W2's
// (3 attributes to 8 each).
func BenchmarkEncode(b *testing.B) {
	spans := benchSpans(512)
	e := &encoder{}
	b.ReportAllocs()
	var size int
	for b.Loop() {
		buf, _ := e.encode(spans)
		size = len(buf)
	}
	b.ReportMetric(float64(b.N*len(spans))/b.Elapsed().Seconds(), "spans/s")
	b.ReportMetric(float64(size), "bytes/batch")
}

// benchSpans returns n ended spans of one resource and scope, shaped like
// evalrun's item, model call and scorer spans.
func benchSpans(n int) []sdktrace.ReadOnlySpan {
	rec := tracetest.NewSpanRecorder()
	res := resource.NewSchemaless(attribute.String("service.name", "evalrun"), attribute.String("service.version", "dev"),
		attribute.String("telemetry.sdk.language", "go"), attribute.String("telemetry.sdk.name", "opentelemetry"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	tr := tp.Tracer("github.com/evalrun/evalrun")
	ctx, run := tr.Start(context.Background(), "evalrun.run")
	for i := 0; i < n; i += 3 {
		ictx, item := tr.Start(ctx, "evalrun.item")
		_, call := tr.Start(ictx, "chat gpt-4o-mini", trace.WithSpanKind(trace.SpanKindClient))
		call.SetAttributes(attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", "openai"),
			attribute.String("gen_ai.system", "openai"), attribute.String("gen_ai.request.model", "gpt-4o-mini"),
			attribute.Int("evalrun.attempt", 1), attribute.Int("gen_ai.usage.input_tokens", 12), attribute.Int("gen_ai.usage.output_tokens", 3))
		call.End()
		_, sc := tr.Start(ictx, "evalrun.score")
		sc.SetAttributes(attribute.String("evalrun.scorer.name", "exact_match"), attribute.Float64("evalrun.score", 1), attribute.Bool("evalrun.score.passed", true))
		sc.End()
		item.SetAttributes(attribute.String("evalrun.run.id", "01JXYZ"), attribute.String("evalrun.item.id", "item-000123"),
			attribute.Int("evalrun.item.index", i), attribute.Int("evalrun.item.repeat", 0), attribute.String("evalrun.item.status", "succeeded"),
			attribute.Int("evalrun.item.attempts", 1), attribute.Bool("evalrun.item.cache_hit", false), attribute.Float64("evalrun.score.exact_match", 1))
		item.End()
	}
	run.End()
	return rec.Ended()[:n]
}

// TestValidKeyCache: a key found valid is remembered, an invalid one is
// replaced every time (never remembered), also when it shares the valid
// key's slot.
func TestValidKeyCache(t *testing.T) {
	var e encoder
	// Same length, last bytes 'd' (0x64) and 0xa4 (a lone continuation
	// byte): the same slot.
	valid, invalid := "evalrun.item.id", "evalrun.item.i\xa4"
	for range 2 {
		if got := e.validKey(valid); got != valid {
			t.Errorf("validKey(%q) = %q", valid, got)
		}
		if got := e.validKey(invalid); got != "evalrun.item.i\uFFFD" {
			t.Errorf("validKey(%q) = %q, want it replaced", invalid, got)
		}
	}
	if got := e.validKey(""); got != "" {
		t.Errorf("validKey(\"\") = %q", got)
	}
}
