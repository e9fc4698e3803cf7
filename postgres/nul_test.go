package postgres

import "testing"

func TestPGTextRoundTrip(t *testing.T) {
	for _, s := range []string{"", "plain", "a\x00b", "\x00", "\uFFFF", "\uFFFFlead", "x\uFFFF0y", "\uFFFF\x00\uFFFF1", "é\x00\x00"} {
		enc := pgText(s)
		if got := fromPGText(enc); got != s {
			t.Errorf("fromPGText(pgText(%q)) = %q", s, got)
		}
		for i := 0; i < len(enc); i++ {
			if enc[i] == 0 {
				t.Errorf("pgText(%q) = %q holds NUL", s, enc)
			}
		}
	}
	if pgText("plain") != "plain" || pgText("x\uFFFF0y") != "x\uFFFF0y" {
		t.Error("an ordinary string must be stored unchanged")
	}
}
