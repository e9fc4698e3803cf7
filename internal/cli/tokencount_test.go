package cli

import (
	"strings"
	"testing"
	"unicode/utf8"

	tokencodec "github.com/tiktoken-go/tokenizer/codec"
)

// TestTokenCounterEncodings: GPT-4 and GPT-3.5 are counted in cl100k_base,
// current and unknown models in o200k_base, and the two encodings count
// differently (so the choice is visible in the estimate).
func TestTokenCounterEncodings(t *testing.T) {
	for model, want := range map[string]string{
		"gpt-4":                  "cl100k_base",
		"gpt-4-0613":             "cl100k_base",
		"gpt-3.5-turbo":          "cl100k_base",
		"gpt-35-turbo":           "cl100k_base", // Azure's name for gpt-3.5-turbo, tiktoken's too
		"gpt-35-turbo-16k":       "cl100k_base",
		"ft:gpt-3.5-turbo:acme":  "cl100k_base",
		"text-embedding-3-small": "cl100k_base",
		"gpt-4o":                 "o200k_base",
		"gpt-4o-mini":            "o200k_base",
		"gpt-4.1":                "o200k_base",
		"gpt-5":                  "o200k_base",
		"o3-mini":                "o200k_base",
		"llama3:8b":              "o200k_base",
		"":                       "o200k_base",
	} {
		if got, _ := tokenCounter(model); got != want {
			t.Errorf("tokenCounter(%q) = %s, want %s", model, got, want)
		}
	}
	// A text whose token counts differ between the two vocabularies.
	text := "Ceci est un texte en français, avec des accents: é è à ç — et des emojis 🎉🎉."
	_, cl := tokenCounter("gpt-4")
	_, o2 := tokenCounter("gpt-4o")
	if a, b := cl(text), o2(text); a == b || a <= 0 || b <= 0 {
		t.Fatalf("cl100k %d tokens, o200k %d: want two different positive counts", a, b)
	}
}

// TestCountInChunks: a 1 MB prompt of " \n" repeated kept dry-run busy for
// minutes (the tokenizer's pre-split regexp backtracks over a whitespace
// run: 64 KB took 3.2 s, growing with the square of the length), deaf to
// Ctrl-C. The text is counted in pieces of at most maxTokenChunk bytes,
// cut before a word where there is one, so ordinary text counts the same.
func TestCountInChunks(t *testing.T) {
	longest := 0
	rec := func(s string) int64 { longest = max(longest, len(s)); return int64(len(s)) }
	hostile := strings.Repeat(" \n", 300_000)
	if n := countInChunks(rec, hostile); n != int64(len(hostile)) || longest > maxTokenChunk {
		t.Fatalf("counted %d of %d bytes, longest piece %d (want at most %d)", n, len(hostile), longest, maxTokenChunk)
	}
	runes := strings.Repeat("é漢🎉", 20_000) // no cut point but rune boundaries
	var pieces []string
	countInChunks(func(s string) int64 { pieces = append(pieces, s); return 0 }, runes)
	for _, p := range pieces {
		if !utf8.ValidString(p) || len(p) > maxTokenChunk {
			t.Fatalf("a piece of %d bytes, valid UTF-8 %v", len(p), utf8.ValidString(p))
		}
	}
	if strings.Join(pieces, "") != runes {
		t.Fatal("the pieces do not make the text")
	}
	_, count := tokenCounter("gpt-4o")
	text := strings.Repeat("The quick brown fox, jumping over 12 lazy dogs; it's fine.\n", 2_000)
	whole, err := tokencodec.NewO200kBase().Count(text)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := count(text), int64(whole); got != want {
		t.Fatalf("ordinary text: %d tokens in pieces, %d whole", got, want)
	}
}
