package evalrun

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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
		if s, ok := unquoteCommon(v); ok {
			return s
		}
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

// unquoteCommon decodes the JSON string v (quotes included) as
// json.Unmarshal does, for the strings outputs almost always are: valid
// UTF-8 with the usual escapes. It reports false for anything else (no
// closing quote, a control character, invalid UTF-8, a bad or lone
// surrogate escape, trailing bytes), which Text leaves to json.Unmarshal.
// Scorers call Text on every output: json.Unmarshal validates the whole
// value with its scanner first, which was ~15 % of the CPU of a run with
// 10 KB outputs and a contains scorer (docs/benchmarks.md, "Scale: memory").
func unquoteCommon(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	in := v[1 : len(v)-1]
	var b strings.Builder
	plain := 0 // in[:plain] is copied to b (or, without escapes, is the text)
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case c == '"' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			i += size
			continue
		case c != '\\':
			i++
			continue
		}
		if b.Cap() == 0 {
			b.Grow(len(in))
		}
		b.Write(in[plain:i])
		if i+1 >= len(in) {
			return "", false
		}
		switch e := in[i+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := hex4(in[i+2:])
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				r2, ok := hex4(in[min(i+8, len(in)):])
				if !ok || in[i+6] != '\\' || in[i+7] != 'u' {
					return "", false
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			b.WriteRune(r)
			i += 4
		default:
			return "", false
		}
		i += 2
		plain = i
	}
	if b.Cap() == 0 {
		return string(in), true
	}
	b.Write(in[plain:])
	return b.String(), true
}

// hex4 decodes the 4 hex digits that start b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
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
