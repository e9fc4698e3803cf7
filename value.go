package evalrun

import (
	"bytes"
	"encoding/json"
)

// Text returns the form of a JSON value that people compare: the text of a
// JSON string, and the compact JSON of anything else (numbers, objects,
// arrays, booleans, null). An empty value gives "". Invalid JSON is returned
// as it is, so it can still be compared and shown.
func Text(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return ""
	}
	if v[0] == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			return s
		}
		return string(v)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return string(v)
	}
	return buf.String()
}

// Canonical returns v in canonical JSON: object keys sorted, no
// insignificant space, every number written as the float64 it denotes (so 1,
// 1.0 and 1e0 are alike). Two values that mean the same JSON have the same
// canonical form. It fails when v is not valid JSON.
func Canonical(v json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	// encoding/json sorts map keys and writes json.Number verbatim.
	return json.Marshal(normalizeNumbers(x))
}

// normalizeNumbers rewrites json.Number values so that 1, 1.0 and 1e0 are
// written alike.
func normalizeNumbers(x any) any {
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalizeNumbers(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = normalizeNumbers(e)
		}
		return v
	case json.Number:
		if f, err := v.Float64(); err == nil {
			return f
		}
		return v
	}
	return x
}

// EqualValues reports whether a and b are equal the way scorers compare:
// when either is a JSON string, their texts (see [Text]) are compared, so the
// string "q1" equals q1 read from a JSON path; otherwise their canonical JSON
// is compared, so key order and spacing do not matter.
func EqualValues(a, b json.RawMessage) bool {
	ta, tb := bytes.TrimSpace(a), bytes.TrimSpace(b)
	if (len(ta) > 0 && ta[0] == '"') || (len(tb) > 0 && tb[0] == '"') || len(ta) == 0 || len(tb) == 0 {
		return Text(a) == Text(b)
	}
	ca, err1 := Canonical(a)
	cb, err2 := Canonical(b)
	if err1 != nil || err2 != nil {
		return Text(a) == Text(b)
	}
	return bytes.Equal(ca, cb)
}

// JSON marshals v into a raw JSON value. A value that cannot be marshalled
// (a channel, a NaN) gives the JSON string of its error, so a Go target's
// output is never silently lost; use json.Marshal to see the error.
func JSON(v any) json.RawMessage {
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal("evalrun: unmarshallable value: " + err.Error())
	}
	return b
}

// String returns the JSON string value of s.
func String(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
