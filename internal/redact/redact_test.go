package redact

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
)

type kindError struct{ kind string }

func (e *kindError) Error() string { return "kind " + e.kind }

func TestScrubberString(t *testing.T) {
	var s Scrubber
	s.Add("sk-live-0123456789", "1", "true", "  ", "abcde", "abcdef", "a+b/c&d=e\"f")
	for _, tc := range []struct{ in, want string }{
		{"key sk-live-0123456789 here", "key [redacted] here"},
		{"1 true abcde", "1 true abcde"}, // under MinLen: kept
		{"abcdefg", "[redacted]g"},
		{`{"auth": "a+b/c&d=e\"f"}`, `{"auth": "[redacted]"}`},     // JSON-escaped
		{"?k=" + url.QueryEscape("a+b/c&d=e\"f"), "?k=[redacted]"}, // query-escaped
		{"no secret", "no secret"},
	} {
		if got := s.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAddCredential(t *testing.T) {
	var s Scrubber
	s.AddCredential("Bearer tok-123456")
	if got := s.String("Authorization: Bearer tok-123456 / echoed tok-123456"); got != "Authorization: [redacted] / echoed [redacted]" {
		t.Errorf("got %q", got)
	}
}

// A server that echoes the Authorization header base64-encoded (in an
// error body, a debug field) does not leak it: the header's value and its
// credential are known in base64 too, padded or not, standard or URL-safe.
func TestAddCredentialBase64Echo(t *testing.T) {
	var s Scrubber
	s.AddCredential("Bearer Zq9SECRETvalue77")
	for _, echoed := range []string{
		base64.StdEncoding.EncodeToString([]byte("Bearer Zq9SECRETvalue77")),
		base64.URLEncoding.EncodeToString([]byte("Bearer Zq9SECRETvalue77")),
		base64.RawStdEncoding.EncodeToString([]byte("Zq9SECRETvalue77")),
		base64.RawURLEncoding.EncodeToString([]byte("Zq9SECRETvalue77")),
	} {
		got := s.String("token " + echoed + " rejected")
		if strings.Contains(got, strings.TrimRight(echoed, "=")) || !strings.Contains(got, Mask) {
			t.Errorf("String(token %s) = %q: the base64 echo is not redacted", echoed, got)
		}
	}
}

// Where one secret contains another, the longer is replaced whole.
func TestScrubberLongestFirst(t *testing.T) {
	var s Scrubber
	s.Add("token1", "token1-extended")
	if got := s.String("x token1-extended y token1"); got != "x [redacted] y [redacted]" {
		t.Errorf("got %q", got)
	}
}

func TestScrubberZeroAndNil(t *testing.T) {
	var nilScrubber *Scrubber
	if nilScrubber.String("secret-value") != "secret-value" || nilScrubber.Len() != 0 {
		t.Error("a nil scrubber changed text")
	}
	err := errors.New("secret-value")
	if nilScrubber.Error(err) != err {
		t.Error("a nil scrubber wrapped an error")
	}
}

func TestScrubberError(t *testing.T) {
	var s Scrubber
	s.Add("hunter2-secret")
	inner := &kindError{kind: "transient"}
	err := fmt.Errorf("call with hunter2-secret: %w", inner)
	got := s.Error(err)
	if got.Error() != "call with [redacted]: kind transient" {
		t.Errorf("Error() = %q", got)
	}
	var ke *kindError
	if !errors.As(got, &ke) || ke != inner || !errors.Is(got, inner) {
		t.Error("the scrubbed error lost its chain")
	}
	clean := errors.New("nothing to hide")
	if s.Error(clean) != clean {
		t.Error("an error without a secret was wrapped")
	}
	if s.Error(nil) != nil {
		t.Error("nil became an error")
	}
}

func TestScrubberWriter(t *testing.T) {
	var s Scrubber
	var buf bytes.Buffer
	w := s.Writer(&buf)
	s.Add("added-after-wrapping") // the writer sees secrets added later
	n, err := fmt.Fprintf(w, "x added-after-wrapping y\n")
	if err != nil || n != len("x added-after-wrapping y\n") || buf.String() != "x [redacted] y\n" {
		t.Errorf("wrote %d %v %q", n, err, buf.String())
	}
	if s.Writer(w) != w {
		t.Error("wrapping twice with the same scrubber nests")
	}
}

func TestScrubberConcurrent(t *testing.T) {
	var s Scrubber
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Add(fmt.Sprintf("secret-%d-xyz", i))
			_ = s.String("secret-0-xyz")
		}()
	}
	wg.Wait()
	if got := s.String("secret-0-xyz secret-7-xyz"); got != "[redacted] [redacted]" {
		t.Errorf("got %q", got)
	}
}

func TestSensitiveName(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "X-Api-Key": true, "api_key": true, "apikey": true, "access_token": true,
		"client_secret": true, "password": true, "Cookie": true, "X-Amz-Signature": true, "X-Amz-Credential": true,
		"key": true, "sig": true, "pwd": true, "pass": true, "jwt": true,
		"Content-Type": false, "model": false, "q": false, "keyword": false, "monkey": false, "page": false,
		"max_tokens": false, "tokens_per_minute": false, "input_tokens": false, "maxTokens": false, "x-auth-token": true, "refresh_token": true,
	} {
		if SensitiveName(name) != want {
			t.Errorf("SensitiveName(%q) = %v, want %v", name, !want, want)
		}
	}
}

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://u:pw@h/x", "http://u:[redacted]@h/x"},
		{"http://u:p%40ss@h/x", "http://u:[redacted]@h/x"},
		{"https://h/x?api_key=abc&q=abcdef&token=t0k#frag", "https://h/x?api_key=[redacted]&q=abcdef&token=[redacted]#frag"},
		{"https://h/x?key=k1&sig=s2&keyword=visible", "https://h/x?key=[redacted]&sig=[redacted]&keyword=visible"},
		{"https://h/x?api_key=${KEY}", "https://h/x?api_key=${KEY}"}, // a reference: shown as written
		{"http://u@h/x", "http://u@h/x"},
		{"not a url key=abc", "not a url key=abc"},
		{"http://h/pw?pass=pw", "http://h/pw?pass=[redacted]"}, // only where it stands as the value
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestURLSecrets(t *testing.T) {
	got := URLSecrets("https://bob:p%40ss@h/x?access_token=tok&x=1&password=${P}")
	basic := "Ym9iOnBAc3M=" // base64("bob:p@ss"), as a client sends it
	if strings.Join(got, ",") != "p%40ss,"+basic+",tok" {
		t.Errorf("URLSecrets = %q", got)
	}
	if URLSecrets("plain text") != nil {
		t.Error("secrets found in plain text")
	}
}
