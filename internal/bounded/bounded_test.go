package bounded

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/evalrun/evalrun/internal/bounded/boundedtest"
)

// documents are JSON texts of every shape json.Indent handles.
var documents = []string{
	`1`, `"s"`, `null`, `true`, `{}`, `[]`, `[[]]`, `{"a":{}}`, `[{},[],{"b":[]}]`,
	`{"a":1,"b":[1,2,{"c":"d"}],"e":{"f":{"g":[true,false,null]}}}`,
	`{"q":"a \"quoted\" {not: [an, object]}, \\ backslash \\\" and \u00e9 é 日本"}`,
	` { "spaced" : [ 1 , 2 ] , "x" :	"y" } `,
	`[1.5e10,-0.25,"\\",""]`,
}

// TestIndentJSONMatchesIndent: below the depth cap, IndentJSON writes what
// json.Indent writes, with and without a prefix.
func TestIndentJSONMatchesIndent(t *testing.T) {
	for _, doc := range documents {
		for _, prefix := range []string{"", "    "} {
			var want bytes.Buffer
			if err := json.Indent(&want, []byte(strings.TrimSpace(doc)), prefix, "  "); err != nil {
				t.Fatalf("%s: %v", doc, err)
			}
			got := IndentJSON(nil, []byte(doc), prefix, "  ", IndentDepth)
			if string(got) != want.String() {
				t.Errorf("IndentJSON(%s, %q):\n%s\nwant:\n%s", doc, prefix, got, want.String())
			}
		}
	}
}

func TestIndentJSONDepthCap(t *testing.T) {
	tests := []struct {
		doc      string
		maxDepth int
		want     string
	}{
		{`{"a":{"b":[1,2]},"c":3}`, 1, "{\n  \"a\": {\"b\":[1,2]},\n  \"c\": 3\n}"},
		{`{"a":{"b":[1,2]},"c":3}`, 2, "{\n  \"a\": {\n    \"b\": [1,2]\n  },\n  \"c\": 3\n}"},
		{`[[[]],[{}]]`, 1, "[\n  [[]],\n  [{}]\n]"},
		{`{"a":{}}`, 0, `{"a":{}}`},
		{`{"s":"[{,:}]"}`, 0, `{"s":"[{,:}]"}`},
	}
	for _, tt := range tests {
		if got := string(IndentJSON(nil, []byte(tt.doc), "", "  ", tt.maxDepth)); got != tt.want {
			t.Errorf("IndentJSON(%s, depth %d):\n%s\nwant:\n%s", tt.doc, tt.maxDepth, got, tt.want)
		}
	}
}

// TestIndentJSONDeepValueStaysSmall: a value 10,000 levels deep indents to
// a few bytes more than its compact form (json.Indent: ~100 MB), and is
// still the same JSON value.
func TestIndentJSONDeepValueStaysSmall(t *testing.T) {
	src := boundedtest.Deep(10_000)
	got := IndentJSON(nil, src, "", "  ", IndentDepth)
	if limit := len(src) + 2*IndentDepth*(IndentDepth+2); len(got) > limit {
		t.Fatalf("indented %d bytes of compact JSON into %d bytes, want at most %d", len(src), len(got), limit)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, got); err != nil {
		t.Fatalf("indented text is not JSON: %v", err)
	}
	if !bytes.Equal(compact.Bytes(), src) {
		t.Fatal("indented text is not the same value")
	}
}

func TestCut(t *testing.T) {
	if got := Cut("short", 5); got != "short" {
		t.Errorf("Cut at its length = %q", got)
	}
	if got, want := Cut("abcdefgh", 3), "abc… (truncated, 8 bytes)"; got != want {
		t.Errorf("Cut = %q, want %q", got, want)
	}
	// é is two bytes: a cut between them backs off before it.
	got := Cut("aé"+strings.Repeat("x", 10), 2)
	if got != "a… (truncated, 13 bytes)" || !utf8.ValidString(got) {
		t.Errorf("Cut inside a character = %q", got)
	}
}

func TestLine(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"  one\ntwo\t three  ", 20, "one two three"},
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abcde…"},
		{"ab cd ef", 5, "ab c…"},
		{"日本語テキスト", 4, "日本語…"},
		{"x", 0, ""},
	}
	for _, tt := range tests {
		if got := Line(tt.s, tt.n); got != tt.want {
			t.Errorf("Line(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
