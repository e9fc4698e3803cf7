package evalrun

import (
	"encoding/json"
	"strings"
	"testing"
)

// unquoteCommon must decode exactly as json.Unmarshal does whenever it
// answers, and answer for the strings outputs usually are.
func TestUnquoteCommonMatchesUnmarshal(t *testing.T) {
	answers := []string{`""`, `"plain"`, `"a\nb\tc\r\"q\" \\ \/ \b\f"`, `"caf\u00e9 \u00E9 é 日本"`,
		`"\ud83d\ude00 😀"`, `"x\u0000y"`, "\"\x7f\"", `"` + strings.Repeat("x", 5000) + `\n"`, `"\ufffd"`}
	for _, in := range answers {
		got, ok := unquoteCommon([]byte(in))
		var want string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("json.Unmarshal(%q): %v", in, err)
		}
		if !ok || got != want {
			t.Errorf("unquoteCommon(%q) = %q, %v; want %q, true", in, got, ok, want)
		}
	}
	// Left to json.Unmarshal (which replaces bad surrogates and invalid
	// UTF-8 with U+FFFD, or fails).
	declines := []string{`"`, `"a`, `"a\"`, `"a"b"`, "\"a\nb\"", "\"\xff\"", "\"\xed\xa0\x80\"",
		`"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, `"\u12"`, `"\u12G4"`, `"\x"`, `"a\`}
	for _, in := range declines {
		if got, ok := unquoteCommon([]byte(in)); ok {
			t.Errorf("unquoteCommon(%q) = %q, true; want it left to json.Unmarshal", in, got)
		}
	}
	if got := Text(json.RawMessage(`"\ud83d"`)); got != "\ufffd" {
		t.Errorf("Text of a lone surrogate = %q, want U+FFFD as json.Unmarshal gives", got)
	}
}

func FuzzUnquoteCommon(f *testing.F) {
	for _, s := range []string{`"a\nb"`, `"\ud83d\ude00"`, `"é"`, `"\u00"`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, ok := unquoteCommon(in)
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal(in, &want); err != nil || got != want {
			t.Fatalf("unquoteCommon(%q) = %q; json.Unmarshal gives %q, %v", in, got, want, err)
		}
	})
}
