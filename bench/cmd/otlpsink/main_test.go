package main

import (
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestCountMatchesDecode: counting on the wire finds the spans a full
// decode finds, across resources and scopes, with other fields around.
func TestCountMatchesDecode(t *testing.T) {
	span := func(name string) *tracepb.Span {
		return &tracepb.Span{Name: name, TraceId: make([]byte, 16), SpanId: make([]byte, 8),
			Attributes: []*commonpb.KeyValue{{Key: "k", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 7}}}}}
	}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{Resource: &resourcepb.Resource{}, SchemaUrl: "s", ScopeSpans: []*tracepb.ScopeSpans{
			{Scope: &commonpb.InstrumentationScope{Name: "a"}, Spans: []*tracepb.Span{span("1"), span("2")}},
			{Spans: []*tracepb.Span{span("3")}, SchemaUrl: "x"},
		}},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{span("4"), span("5"), span("6")}}}},
	}}
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	n, err := count(body)
	if err != nil || n != 6 {
		t.Errorf("count = %d, %v; want 6", n, err)
	}
	if d, err := decoded(body); err != nil || d != n {
		t.Errorf("decoded = %d, %v; want %d", d, err, n)
	}
	if _, err := count(body[:len(body)-3]); err == nil {
		t.Error("a truncated request counted without error")
	}
}
