package cli

import (
	"context"
	"net"
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

// A port taken by another server is named as the likely cause; any other
// failure to listen (an address not on this machine) is not blamed on it.
func TestServeListenFailureHint(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	const token = "0123456789abcdef0123"
	for _, tc := range []struct {
		addr       string
		hinted     bool
		wantInText string
	}{
		{taken.Addr().String(), true, "address already in use"},
		{"192.0.2.1:8080", false, "192.0.2.1:8080"}, // TEST-NET-1: no interface has it
	} {
		b := setup(t)
		code, _, stderr := b.main(context.Background(), nil, "serve", "--addr", tc.addr, "--token", token)
		if code == 0 || !strings.Contains(stderr, tc.wantInText) {
			t.Errorf("serve --addr %s: exit %d\n%s", tc.addr, code, stderr)
		}
		if got := strings.Contains(stderr, "another server"); got != tc.hinted {
			t.Errorf("serve --addr %s: blames another server: %v, want %v\n%s", tc.addr, got, tc.hinted, stderr)
		}
	}
}
