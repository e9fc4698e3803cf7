package web

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// Bad parameters and addresses say what is wanted, without a bare
// ": invalid" at the end, and still match evalrun.ErrInvalid (400, exit 2).
func TestBadInputMessages(t *testing.T) {
	_, err := ParseItemQuery(url.Values{"size": {"abc"}})
	if err == nil || !errors.Is(err, evalrun.ErrInvalid) || err.Error() != `bad size="abc": want a whole number from 1 to 500` {
		t.Errorf("size=abc: %v", err)
	}
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1", `--addr "127.0.0.1": want HOST:PORT, e.g. 127.0.0.1:8080`},
		{"0.0.0.0:8080", "or use --addr 127.0.0.1:PORT"},
		// A port out of range is bad usage (exit 2), not a listen failure
		// blamed on another server.
		{"127.0.0.1:99999", `--addr "127.0.0.1:99999": the port must be a number from 0 to 65535`},
		{"127.0.0.1:-1", `--addr "127.0.0.1:-1": the port must be a number from 0 to 65535`},
		{"localhost:http-alt-nope", `the port must be a number from 0 to 65535`},
	} {
		err := CheckAddr(tc.addr, "")
		if err == nil || !errors.Is(err, evalrun.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.HasSuffix(err.Error(), "invalid") {
			t.Errorf("CheckAddr(%q) = %v, want it to contain %q", tc.addr, err, tc.want)
		}
	}
}
