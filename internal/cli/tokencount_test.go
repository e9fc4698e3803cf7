package cli

import "testing"

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
