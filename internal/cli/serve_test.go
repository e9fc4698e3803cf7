package cli

import (
	"context"
	"strings"
	"testing"
)

// TestServeRefusesWeakTokens: a blank, short or whitespace-padded token
// (from --token or EVALRUN_TOKEN) is refused before listening, exit 2,
// with a message that says what to do and does not print the token.
func TestServeRefusesWeakTokens(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		env   string
		wants []string
	}{
		{"one character", []string{"--token", "x"}, "", []string{"--token: web: the token is too short", "1 of at least 16 characters", "openssl rand -hex 16"}},
		{"blank", []string{"--token", "                    "}, "", []string{"a space or a control character", "openssl rand -hex 16"}},
		{"env with a newline", nil, "0123456789abcdef0123\n", []string{"EVALRUN_TOKEN: web: the token has a line break", "openssl rand -hex 16"}},
		{"env blank", nil, "   ", []string{"a space", "openssl rand -hex 16"}},
		{"no token", nil, "", []string{"without a token", "--token or EVALRUN_TOKEN", "--addr 127.0.0.1:PORT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			if tc.env != "" {
				b.env = append(b.env, "EVALRUN_TOKEN="+tc.env)
			}
			code, _, stderr := b.main(context.Background(), nil, append([]string{"serve", "--addr", "0.0.0.0:0"}, tc.args...)...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitUsage, stderr)
			}
			for _, w := range tc.wants {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "listening") || strings.Contains(stderr, "http://") {
				t.Errorf("the viewer started:\n%s", stderr)
			}
			if strings.Contains(stderr, "0123456789abcdef0123") {
				t.Errorf("stderr shows the token:\n%s", stderr)
			}
		})
	}
}
