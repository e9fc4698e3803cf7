package otel

import (
	"math"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// The field numbers of the OTLP protobuf messages evalrun writes, from
// opentelemetry-proto (go.opentelemetry.io/proto/otlp v1.11.0:
// collector/trace/v1, trace/v1, common/v1, resource/v1). The encoding test
// decodes what encoder writes with those generated types and compares
// every field.
const (
	// ExportTraceServiceRequest
	fRequestResourceSpans protowire.Number = 1

	// ResourceSpans
	fResourceSpansResource   protowire.Number = 1
	fResourceSpansScopeSpans protowire.Number = 2
	fResourceSpansSchemaURL  protowire.Number = 3

	// Resource
	fResourceAttributes protowire.Number = 1

	// ScopeSpans
	fScopeSpansScope     protowire.Number = 1
	fScopeSpansSpans     protowire.Number = 2
	fScopeSpansSchemaURL protowire.Number = 3

	// InstrumentationScope
	fScopeName       protowire.Number = 1
	fScopeVersion    protowire.Number = 2
	fScopeAttributes protowire.Number = 3

	// Span
	fSpanTraceID           protowire.Number = 1
	fSpanSpanID            protowire.Number = 2
	fSpanTraceState        protowire.Number = 3
	fSpanParentSpanID      protowire.Number = 4
	fSpanName              protowire.Number = 5
	fSpanKind              protowire.Number = 6
	fSpanStartTime         protowire.Number = 7 // fixed64
	fSpanEndTime           protowire.Number = 8 // fixed64
	fSpanAttributes        protowire.Number = 9
	fSpanDroppedAttributes protowire.Number = 10
	fSpanEvents            protowire.Number = 11
	fSpanDroppedEvents     protowire.Number = 12
	fSpanLinks             protowire.Number = 13
	fSpanDroppedLinks      protowire.Number = 14
	fSpanStatus            protowire.Number = 15
	fSpanFlags             protowire.Number = 16 // fixed32

	// Span.Event
	fEventTime              protowire.Number = 1 // fixed64
	fEventName              protowire.Number = 2
	fEventAttributes        protowire.Number = 3
	fEventDroppedAttributes protowire.Number = 4

	// Span.Link
	fLinkTraceID           protowire.Number = 1
	fLinkSpanID            protowire.Number = 2
	fLinkTraceState        protowire.Number = 3
	fLinkAttributes        protowire.Number = 4
	fLinkDroppedAttributes protowire.Number = 5
	fLinkFlags             protowire.Number = 6 // fixed32

	// Status
	fStatusMessage protowire.Number = 2
	fStatusCode    protowire.Number = 3

	// KeyValue, KeyValueList, ArrayValue
	fKeyValueKey   protowire.Number = 1
	fKeyValueValue protowire.Number = 2
	fListValues    protowire.Number = 1 // KeyValueList.values and ArrayValue.values

	// AnyValue (a oneof: a value is written even when it is zero)
	fAnyString protowire.Number = 1
	fAnyBool   protowire.Number = 2
	fAnyInt    protowire.Number = 3
	fAnyDouble protowire.Number = 4 // fixed64
	fAnyArray  protowire.Number = 5
	fAnyKVList protowire.Number = 6
	fAnyBytes  protowire.Number = 7

	// ExportTraceServiceResponse and ExportTracePartialSuccess
	fResponsePartialSuccess protowire.Number = 1
	fPartialRejectedSpans   protowire.Number = 1
	fPartialErrorMessage    protowire.Number = 2
)

// OTLP's enums where they differ from the API's, or might one day.
const (
	// Status.StatusCode: the API has Error = 1, Ok = 2; OTLP the reverse.
	statusCodeOK    = 1
	statusCodeError = 2

	// SpanFlags: the span's (or link's) context says whether its parent
	// (the linked context) is remote, as the official exporter does.
	spanFlagsContextHasIsRemote = 0x100
	spanFlagsContextIsRemote    = 0x200
)

// spanKind maps the API's span kind to OTLP's Span.SpanKind. The
// numbers happen to be the same today; the switch keeps it right if either
// changes and sends an unknown kind as UNSPECIFIED (0).
func spanKind(k trace.SpanKind) uint64 {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	default:
		return 0
	}
}

// encoder writes an ExportTraceServiceRequest straight from the SDK's
// spans with protowire: no intermediate protobuf structs, no reflection.
// Its buffers are kept from one export to the next, so a steady stream of
// batches allocates nothing here. Not safe for concurrent use.
type encoder struct {
	buf    []byte
	groups []spanGroup
	// keys holds attribute keys found valid UTF-8, by a cheap hash: the
	// same few keys come back in every span, and checking them again was
	// a fifth of encoding an attribute. A key is found again by ==, which
	// is one pointer comparison for the same string (the attribute keys
	// are constants); keeping it here keeps its bytes alive, so another
	// string can never take its address.
	keys [64]string
}

// validKey returns validUTF8(k), remembering the keys that are valid.
func (e *encoder) validKey(k string) string {
	if k == "" {
		return k
	}
	slot := &e.keys[(len(k)*31+int(k[len(k)-1]))&(len(e.keys)-1)]
	if *slot == k {
		return k
	}
	v := validUTF8(k)
	if v == k { // valid: validUTF8 returned k itself
		*slot = k
	}
	return v
}

// spanGroup is the spans of one resource and instrumentation scope, in
// the order the batch has them (their indices in it).
type spanGroup struct {
	res   *resource.Resource
	rkey  attribute.Distinct
	scope instrumentation.Scope
	spans []int
}

// encode returns the request for spans (nil spans skipped), valid until
// the next call, and the number of spans in it. It groups spans per
// resource (by attribute set, as the official exporter does) and, inside
// a resource, per scope, each group in order of first appearance.
func (e *encoder) encode(spans []sdktrace.ReadOnlySpan) ([]byte, int) {
	n := e.group(spans)
	e.buf = e.buf[:0]
	for gi := 0; gi < len(e.groups); {
		// A ResourceSpans: this group and the next ones of the same resource
		// (group put them together).
		g := &e.groups[gi]
		rs := e.begin(fRequestResourceSpans)
		if g.res != nil {
			r := e.begin(fResourceSpansResource)
			for it := g.res.Iter(); it.Next(); {
				a := it.Attribute()
				e.keyValue(fResourceAttributes, &a)
			}
			e.end(r)
		}
		for ; gi < len(e.groups) && e.groups[gi].rkey == g.rkey; gi++ {
			e.scopeSpans(&e.groups[gi], spans)
		}
		e.str(fResourceSpansSchemaURL, g.res.SchemaURL())
		e.end(rs)
	}
	return e.buf, n
}

// group fills e.groups with the batch's spans, groups of one resource
// next to each other, and returns how many spans there are.
func (e *encoder) group(spans []sdktrace.ReadOnlySpan) int {
	for i := range e.groups {
		e.groups[i].spans = e.groups[i].spans[:0]
		e.groups[i].res, e.groups[i].scope = nil, instrumentation.Scope{}
	}
	used := 0
	n := 0
	var lastRes *resource.Resource
	var lastKey attribute.Distinct
	for i, s := range spans {
		if s == nil {
			continue
		}
		res, scope := s.Resource(), s.InstrumentationScope()
		// A batch has one resource almost always: compare pointers first,
		// and make the resource's key only when the pointer changes.
		if n == 0 || res != lastRes {
			lastRes, lastKey = res, res.Equivalent()
		}
		n++
		gi := -1
		lastOfRes := -1
		for j := range used {
			if e.groups[j].rkey == lastKey {
				lastOfRes = j
				if e.groups[j].scope == scope {
					gi = j
					break
				}
			}
		}
		if gi < 0 {
			if used == len(e.groups) {
				e.groups = append(e.groups, spanGroup{})
			}
			gi = used
			used++
			if lastOfRes >= 0 && lastOfRes+1 < gi {
				// Keep a resource's groups adjacent: move the new one right
				// after its resource's last.
				g := e.groups[gi]
				copy(e.groups[lastOfRes+2:gi+1], e.groups[lastOfRes+1:gi])
				gi = lastOfRes + 1
				e.groups[gi] = g
			}
			e.groups[gi].res, e.groups[gi].rkey, e.groups[gi].scope = res, lastKey, scope
		}
		e.groups[gi].spans = append(e.groups[gi].spans, i)
	}
	e.groups = e.groups[:used]
	return n
}

func (e *encoder) scopeSpans(g *spanGroup, spans []sdktrace.ReadOnlySpan) {
	ss := e.begin(fResourceSpansScopeSpans)
	if g.scope != (instrumentation.Scope{}) {
		sc := e.begin(fScopeSpansScope)
		e.str(fScopeName, g.scope.Name)
		e.str(fScopeVersion, g.scope.Version)
		for it := g.scope.Attributes.Iter(); it.Next(); {
			a := it.Attribute()
			e.keyValue(fScopeAttributes, &a)
		}
		e.end(sc)
	}
	for _, i := range g.spans {
		e.span(spans[i])
	}
	e.str(fScopeSpansSchemaURL, g.scope.SchemaURL)
	e.end(ss)
}

func (e *encoder) span(s sdktrace.ReadOnlySpan) {
	sp := e.beginWide(fScopeSpansSpans)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	e.bytes(fSpanTraceID, tid[:])
	e.bytes(fSpanSpanID, sid[:])
	if ts := sc.TraceState(); ts.Len() > 0 {
		e.str(fSpanTraceState, ts.String())
	}
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		e.bytes(fSpanParentSpanID, psid[:])
	}
	e.str(fSpanName, s.Name())
	e.uint(fSpanKind, spanKind(s.SpanKind()))
	e.fixed64(fSpanStartTime, unixNano(s.StartTime().UnixNano()))
	e.fixed64(fSpanEndTime, unixNano(s.EndTime().UnixNano()))
	attrs := s.Attributes()
	for i := range attrs {
		e.keyValue(fSpanAttributes, &attrs[i])
	}
	e.uint(fSpanDroppedAttributes, count(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		m := e.begin(fSpanEvents)
		e.fixed64(fEventTime, unixNano(ev.Time.UnixNano()))
		e.str(fEventName, ev.Name)
		for i := range ev.Attributes {
			e.keyValue(fEventAttributes, &ev.Attributes[i])
		}
		e.uint(fEventDroppedAttributes, count(ev.DroppedAttributeCount))
		e.end(m)
	}
	e.uint(fSpanDroppedEvents, count(s.DroppedEvents()))
	for _, l := range s.Links() {
		m := e.begin(fSpanLinks)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		e.bytes(fLinkTraceID, ltid[:])
		e.bytes(fLinkSpanID, lsid[:])
		if ts := l.SpanContext.TraceState(); ts.Len() > 0 {
			e.str(fLinkTraceState, ts.String())
		}
		for i := range l.Attributes {
			e.keyValue(fLinkAttributes, &l.Attributes[i])
		}
		e.uint(fLinkDroppedAttributes, count(l.DroppedAttributeCount))
		e.fixed32(fLinkFlags, flags(l.SpanContext.TraceFlags(), l.SpanContext.IsRemote()))
		e.end(m)
	}
	e.uint(fSpanDroppedLinks, count(s.DroppedLinks()))
	// The official exporter always sends a status, empty when unset.
	st := s.Status()
	m := e.begin(fSpanStatus)
	e.str(fStatusMessage, st.Description)
	switch st.Code {
	case codes.Ok:
		e.uint(fStatusCode, statusCodeOK)
	case codes.Error:
		e.uint(fStatusCode, statusCodeError)
	}
	e.end(m)
	e.fixed32(fSpanFlags, flags(sc.TraceFlags(), parent.IsRemote()))
	e.end(sp)
}

// flags is OTLP's flags field: the W3C trace flags in the low byte, and
// whether the parent (or linked) context is remote.
func flags(tf trace.TraceFlags, remote bool) uint32 {
	f := uint32(tf) | spanFlagsContextHasIsRemote
	if remote {
		f |= spanFlagsContextIsRemote
	}
	return f
}

// unixNano clamps a time before 1970 (or the zero time) to 0, as the
// official exporter does.
func unixNano(n int64) uint64 { return uint64(max(0, n)) }

// count clamps a dropped count to OTLP's uint32.
func count(n int) uint64 { return uint64(min(max(0, n), math.MaxUint32)) }

// keyValue writes kv as a KeyValue message in field num. A scalar value
// (nearly all of evalrun's) is written with its lengths computed first;
// the others through begin and end.
func (e *encoder) keyValue(num protowire.Number, kv *attribute.KeyValue) {
	var size int // the AnyValue's: one tag byte and the value
	var str string
	switch v := kv.Value; v.Type() {
	case attribute.STRING:
		str = validUTF8(v.AsString())
		size = 1 + protowire.SizeBytes(len(str))
	case attribute.INT64:
		size = 1 + protowire.SizeVarint(uint64(v.AsInt64()))
	case attribute.BOOL:
		size = 2
	case attribute.FLOAT64:
		size = 9
	default:
		e.compositeKeyValue(num, kv)
		return
	}
	key := e.validKey(string(kv.Key))
	e.buf = appendTag(e.buf, num, protowire.BytesType)
	e.buf = appendVarint(e.buf, uint64(1+protowire.SizeBytes(len(key))+1+protowire.SizeBytes(size)))
	e.buf = appendTag(e.buf, fKeyValueKey, protowire.BytesType)
	e.buf = appendString(e.buf, key)
	e.buf = appendTag(e.buf, fKeyValueValue, protowire.BytesType)
	e.buf = appendVarint(e.buf, uint64(size))
	switch v := kv.Value; v.Type() {
	case attribute.STRING:
		e.buf = appendTag(e.buf, fAnyString, protowire.BytesType)
		e.buf = appendString(e.buf, str)
	case attribute.INT64:
		e.buf = appendTag(e.buf, fAnyInt, protowire.VarintType)
		e.buf = appendVarint(e.buf, uint64(v.AsInt64()))
	case attribute.BOOL:
		e.buf = appendTag(e.buf, fAnyBool, protowire.VarintType)
		e.buf = appendVarint(e.buf, protowire.EncodeBool(v.AsBool()))
	case attribute.FLOAT64:
		e.buf = appendTag(e.buf, fAnyDouble, protowire.Fixed64Type)
		e.buf = protowire.AppendFixed64(e.buf, math.Float64bits(v.AsFloat64()))
	}
}

// compositeKeyValue writes kv, whose value is a slice, a map, bytes or
// empty, as a KeyValue message in field num.
func (e *encoder) compositeKeyValue(num protowire.Number, kv *attribute.KeyValue) {
	m := e.begin(num)
	// A KeyValue's key is written even when empty: OTLP has it required.
	e.buf = appendTag(e.buf, fKeyValueKey, protowire.BytesType)
	e.buf = appendString(e.buf, validUTF8(string(kv.Key)))
	v := e.begin(fKeyValueValue)
	e.anyValue(kv.Value)
	e.end(v)
	e.end(m)
}

// anyValue writes the fields of v's AnyValue (the caller writes its tag
// and length), mapping each attribute.Type as the official exporter does.
func (e *encoder) anyValue(v attribute.Value) {
	switch v.Type() {
	case attribute.BOOL:
		e.buf = appendTag(e.buf, fAnyBool, protowire.VarintType)
		e.buf = appendVarint(e.buf, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		e.buf = appendTag(e.buf, fAnyInt, protowire.VarintType)
		e.buf = appendVarint(e.buf, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		e.buf = appendTag(e.buf, fAnyDouble, protowire.Fixed64Type)
		e.buf = protowire.AppendFixed64(e.buf, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		e.buf = appendTag(e.buf, fAnyString, protowire.BytesType)
		e.buf = appendString(e.buf, validUTF8(v.AsString()))
	case attribute.BYTESLICE:
		e.buf = appendTag(e.buf, fAnyBytes, protowire.BytesType)
		e.buf = appendBytes(e.buf, v.AsByteSlice())
	case attribute.BOOLSLICE:
		a := e.begin(fAnyArray)
		for _, b := range v.AsBoolSlice() {
			e.buf = appendTag(e.buf, fListValues, protowire.BytesType)
			e.buf = append(e.buf, 2) // AnyValue{bool_value}: tag and a 1-byte varint
			e.buf = appendTag(e.buf, fAnyBool, protowire.VarintType)
			e.buf = appendVarint(e.buf, protowire.EncodeBool(b))
		}
		e.end(a)
	case attribute.INT64SLICE:
		a := e.begin(fAnyArray)
		for _, n := range v.AsInt64Slice() {
			e.buf = appendTag(e.buf, fListValues, protowire.BytesType)
			e.buf = appendVarint(e.buf, uint64(1+protowire.SizeVarint(uint64(n))))
			e.buf = appendTag(e.buf, fAnyInt, protowire.VarintType)
			e.buf = appendVarint(e.buf, uint64(n))
		}
		e.end(a)
	case attribute.FLOAT64SLICE:
		a := e.begin(fAnyArray)
		for _, f := range v.AsFloat64Slice() {
			e.buf = appendTag(e.buf, fListValues, protowire.BytesType)
			e.buf = append(e.buf, 9) // AnyValue{double_value}: tag and 8 bytes
			e.buf = appendTag(e.buf, fAnyDouble, protowire.Fixed64Type)
			e.buf = protowire.AppendFixed64(e.buf, math.Float64bits(f))
		}
		e.end(a)
	case attribute.STRINGSLICE:
		a := e.begin(fAnyArray)
		for _, s := range v.AsStringSlice() {
			m := e.begin(fListValues)
			e.buf = appendTag(e.buf, fAnyString, protowire.BytesType)
			e.buf = appendString(e.buf, validUTF8(s))
			e.end(m)
		}
		e.end(a)
	case attribute.SLICE:
		a := e.begin(fAnyArray)
		for _, el := range v.AsSlice() {
			m := e.begin(fListValues)
			e.anyValue(el)
			e.end(m)
		}
		e.end(a)
	case attribute.MAP:
		a := e.begin(fAnyKVList)
		kvs := v.AsMap()
		for i := range kvs {
			e.keyValue(fListValues, &kvs[i])
		}
		e.end(a)
	case attribute.EMPTY:
		// An empty AnyValue: the attribute is there, without a value.
	default:
		e.buf = appendTag(e.buf, fAnyString, protowire.BytesType)
		e.buf = appendString(e.buf, "INVALID")
	}
}

// message is where an embedded message's length goes: at, in reserved
// bytes that begin (or beginWide) left for it and end fills in.
type message struct{ at, reserved int }

// begin writes the tag of an embedded message in field num and reserves
// one byte for its length, which end fills in.
func (e *encoder) begin(num protowire.Number) message {
	e.buf = appendTag(e.buf, num, protowire.BytesType)
	e.buf = append(e.buf, 0)
	return message{len(e.buf) - 1, 1}
}

// beginWide is begin for a message that is most likely 128 to 16,383
// bytes long (a span: ~300), whose length takes two bytes: it reserves
// them, so that end moves no bytes in that case.
func (e *encoder) beginWide(num protowire.Number) message {
	e.buf = appendTag(e.buf, num, protowire.BytesType)
	e.buf = append(e.buf, 0, 0)
	return message{len(e.buf) - 2, 2}
}

// end writes the length of message m. When the length's varint does not
// take the bytes reserved for it, the message's bytes move to make it fit
// (a message of 128 bytes or more begun with begin: once per message; the
// few large ones once each).
func (e *encoder) end(m message) {
	n := len(e.buf) - m.at - m.reserved
	size := protowire.SizeVarint(uint64(n))
	switch {
	case size == 2 && m.reserved == 2:
		// A span's length, written here: appendVarint inlines only
		// the one-byte case.
		e.buf[m.at], e.buf[m.at+1] = byte(n)|0x80, byte(n>>7)
		return
	case size > m.reserved:
		e.buf = append(e.buf, make([]byte, size-m.reserved)...)
		copy(e.buf[m.at+size:], e.buf[m.at+m.reserved:m.at+m.reserved+n])
	case size < m.reserved:
		copy(e.buf[m.at+size:], e.buf[m.at+m.reserved:])
		e.buf = e.buf[:len(e.buf)-(m.reserved-size)]
	}
	appendVarint(e.buf[:m.at], uint64(n))
}

// appendTag is protowire.AppendTag, inlined with appendVarint's one-byte
// case: every field number written is below 16.
func appendTag(b []byte, num protowire.Number, typ protowire.Type) []byte {
	return appendVarint(b, uint64(num)<<3|uint64(typ&7))
}

// appendVarint is protowire.AppendVarint with the one-byte case inlined
// (most lengths, enums and counts written).
func appendVarint(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return protowire.AppendVarint(b, v)
}

func appendString(b []byte, s string) []byte {
	return append(appendVarint(b, uint64(len(s))), s...)
}

func appendBytes(b []byte, v []byte) []byte {
	return append(appendVarint(b, uint64(len(v))), v...)
}

// str writes a string field, omitted when empty (proto3).
func (e *encoder) str(num protowire.Number, s string) {
	if s == "" {
		return
	}
	e.buf = appendTag(e.buf, num, protowire.BytesType)
	e.buf = appendString(e.buf, validUTF8(s))
}

// validUTF8 returns s with each invalid UTF-8 sequence replaced by U+FFFD.
// Protobuf strings must be UTF-8: a collector decoding with the official
// types rejects a whole request for one bad string (and the official
// exporter's proto.Marshal refuses to send it at all), while an attribute
// can well carry bytes from a dataset or a model's answer.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func (e *encoder) bytes(num protowire.Number, b []byte) {
	e.buf = appendTag(e.buf, num, protowire.BytesType)
	e.buf = appendBytes(e.buf, b)
}

// uint writes a varint field, omitted when zero (proto3).
func (e *encoder) uint(num protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	e.buf = appendTag(e.buf, num, protowire.VarintType)
	e.buf = appendVarint(e.buf, v)
}

func (e *encoder) fixed64(num protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	e.buf = appendTag(e.buf, num, protowire.Fixed64Type)
	e.buf = protowire.AppendFixed64(e.buf, v)
}

func (e *encoder) fixed32(num protowire.Number, v uint32) {
	if v == 0 {
		return
	}
	e.buf = appendTag(e.buf, num, protowire.Fixed32Type)
	e.buf = protowire.AppendFixed32(e.buf, v)
}
