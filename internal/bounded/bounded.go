// Package bounded bounds what evalrun shows of a value, whatever its size or
// depth: JSON indented only down to a fixed depth ([IndentJSON]), text cut
// with a visible marker ([Cut], [Line]). The reports and the web viewer
// use it wherever an item's input, expected output or output (or a
// message) is written for people. [ReadFile] bounds what is read of a
// file a configuration names.
//
// The bound matters for hostile values: indenting a value nested 10,000
// deep puts 2 × depth spaces before each of its 20,000 lines, so the
// indented text grows with the square of the depth (a 20 KB line becomes
// hundreds of megabytes). With the depth cap the indented form is at most
// a constant factor larger than the compact one.
package bounded

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// IndentDepth is the nesting depth, counted from the document's root, down
// to which [IndentJSON] breaks lines; deeper containers are written compact
// on one line. The reports and API answers nest item values three levels
// down, which leaves their first dozen levels indented.
const IndentDepth = 16

// IndentJSON appends to dst the JSON text src indented like json.Indent
// (each element on its own line, prefixed by prefix and one indent per
// level; "key": value; empty containers as {} and []), except that a
// container nested deeper than maxDepth levels is written compact on its
// parent's line, so that every line's indentation is at most maxDepth
// indents. Whitespace between tokens is dropped. src is not validated: a
// truncated document is indented as far as it goes.
func IndentJSON(dst, src []byte, prefix, indent string, maxDepth int) []byte {
	newline := func(depth int) {
		dst = append(dst, '\n')
		dst = append(dst, prefix...)
		for range depth {
			dst = append(dst, indent...)
		}
	}
	nest := 0           // open containers
	needIndent := false // an indented container was opened: a newline comes before its first element
	inString, escaped := false, false
	for _, c := range src {
		if inString {
			dst = append(dst, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		if needIndent && c != '}' && c != ']' {
			needIndent = false
			newline(nest)
		}
		flat := nest > maxDepth // inside a container written compact
		switch c {
		case '"':
			inString = true
			dst = append(dst, c)
		case '{', '[':
			nest++
			// An empty container stays {} or []: the newline waits for
			// the first element.
			needIndent = nest <= maxDepth
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			if !flat {
				newline(nest)
			}
		case ':':
			dst = append(dst, c)
			if !flat {
				dst = append(dst, ' ')
			}
		case '}', ']':
			switch {
			case needIndent:
				needIndent = false
			case !flat && nest > 0:
				newline(nest - 1)
			}
			nest = max(nest-1, 0)
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// MarshalIndent encodes v as a json.Encoder does (escaping <, > and &
// when escapeHTML), indented by [IndentJSON] after prefix with two spaces
// a level down to maxDepth levels, without a final newline. Unlike
// json.Encoder.SetIndent, which re-reads the whole document and refuses
// one nested more than 10,000 levels (a deep item value inside a report),
// it indents whatever the encoder wrote.
func MarshalIndent(v any, prefix string, maxDepth int, escapeHTML bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return IndentJSON(nil, bytes.TrimSuffix(buf.Bytes(), []byte("\n")), prefix, "  ", maxDepth), nil
}

// Cut returns s when it has at most limit bytes, and otherwise its
// [Prefix] of limit bytes followed by the marker "… (truncated, N bytes)",
// N being the length of s.
func Cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return Prefix(s, limit) + Marker(len(s))
}

// Marker is the mark of a value cut short: "… (truncated, N bytes)",
// N being the size of the whole value.
func Marker(size int) string {
	return "… (truncated, " + strconv.Itoa(size) + " bytes)"
}

// Prefix returns the first limit bytes of s, fewer when that would split a
// UTF-8 character (s itself when it is not longer).
func Prefix[T ~string | ~[]byte](s T, limit int) T {
	if len(s) <= limit {
		return s
	}
	for i := limit; i > max(limit-utf8.UTFMax, 0); i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:limit] // invalid UTF-8: cut anywhere
}

// Line returns s on one line, its words (as strings.Fields splits them)
// joined by single spaces, cut to n runes with "…" as the last one when it
// is longer. It reads only as much of s as it needs.
func Line(s string, n int) string {
	if n <= 0 {
		return ""
	}
	out := make([]rune, 0, min(n+1, len(s)))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = len(out) > 0
			continue
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		if out = append(out, r); len(out) > n {
			return string(out[:n-1]) + "…"
		}
	}
	return string(out)
}
