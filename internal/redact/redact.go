// Package redact is evalrun's one secret scrubber: a [Scrubber] holds the
// secrets a suite knows (every value expanded from the environment, every
// literal password, token or key written in it) and replaces each of them
// with [Mask] in any text that leaves the process — errors recorded into
// results, target names, messages on standard output and error.
//
// [URL] and [SensitiveName] redact by position instead, for text whose
// secrets are not known beforehand (a URL written in a suite file).
package redact

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Mask replaces a secret.
const Mask = "[redacted]"

// MinLen is the length in bytes below which a value is not scrubbed as
// free text: replacing "1", "true" or "gpt-4" everywhere would garble every
// message while hiding nothing a guess could not find. Real keys and tokens
// are far longer. Short secrets in positions [URL] knows (a URL's password,
// a secret-named query parameter) are still redacted there, and suite
// messages never echo a value expanded from the environment, whatever its
// length.
const MinLen = 6

// Scrubber replaces known secrets in text. The zero value scrubs nothing;
// a nil *Scrubber is valid and scrubs nothing. It is safe for concurrent
// use.
type Scrubber struct {
	mu      sync.Mutex
	secrets map[string]bool
	rep     *strings.Replacer // built on first use after a change
}

// Add records secrets. A value shorter than [MinLen] once trimmed is
// ignored (see MinLen). Each secret is also recorded in the encodings it
// may take in a message: JSON-escaped, URL-escaped and base64-encoded.
func (s *Scrubber) Add(secrets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range secrets {
		v = strings.TrimSpace(v)
		if len(v) < MinLen {
			continue
		}
		for _, form := range encodings(v) {
			if s.secrets == nil {
				s.secrets = make(map[string]bool)
			}
			if !s.secrets[form] {
				s.secrets[form] = true
				s.rep = nil
			}
		}
	}
}

// AddCredential records the value of an authorization header or another
// secret-named setting, and for "Scheme CREDENTIAL" ("Bearer sk-...",
// "Basic dXNlcjpw...") the credential alone, which a server may echo
// without its scheme.
func (s *Scrubber) AddCredential(v string) {
	s.Add(v)
	if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
		s.Add(cred)
	}
}

// encodings returns v and the forms it takes inside JSON strings and URLs,
// and base64'd (padded or not, standard or URL-safe): servers echo a
// rejected Authorization header encoded in their error bodies.
func encodings(v string) []string {
	forms := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(v)))
	}
	for _, html := range []bool{true, false} { // encoding/json escapes <, > and & by default
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(v) == nil {
			quoted := strings.TrimSuffix(b.String(), "\n")
			forms = append(forms, quoted[1:len(quoted)-1])
		}
	}
	slices.Sort(forms)
	return slices.Compact(forms)
}

// Len returns how many secrets (encodings included) s knows.
func (s *Scrubber) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.secrets)
}

// replacer returns the replacer of the current secrets, or nil for none.
func (s *Scrubber) replacer() *strings.Replacer {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rep == nil && len(s.secrets) > 0 {
		list := make([]string, 0, len(s.secrets))
		for v := range s.secrets {
			list = append(list, v)
		}
		// Longest first: where one secret contains another, the whole of
		// it is replaced (strings.Replacer tries its pairs in order).
		slices.SortFunc(list, func(a, b string) int { return len(b) - len(a) })
		pairs := make([]string, 0, 2*len(list))
		for _, v := range list {
			pairs = append(pairs, v, Mask)
		}
		s.rep = strings.NewReplacer(pairs...)
	}
	return s.rep
}

// String returns text with every known secret replaced by [Mask].
func (s *Scrubber) String(text string) string {
	r := s.replacer()
	if r == nil || text == "" {
		return text
	}
	return r.Replace(text)
}

// Error returns err with a scrubbed message. The result wraps err, so
// errors.Is and errors.As (an *evalrun.Error's kind, status and usage) see
// what they saw; err itself is returned when its message holds no secret.
func (s *Scrubber) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := s.String(msg)
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, err: err}
}

// scrubbedError is an error whose message had secrets replaced.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// Writer returns w with every write scrubbed. A write is scrubbed as a
// whole, so a secret split across two writes is not recognised: it is a
// last line of defence behind the sources' own scrubbing, for messages
// written with one Fprintf each.
func (s *Scrubber) Writer(w io.Writer) io.Writer {
	if sw, ok := w.(*writer); ok && sw.s == s {
		return w
	}
	return &writer{w: w, s: s}
}

type writer struct {
	w io.Writer
	s *Scrubber
}

// Write writes p scrubbed and reports len(p) written when all of the
// scrubbed text was, since the caller's count is of its own bytes.
func (w *writer) Write(p []byte) (int, error) {
	text := w.s.String(string(p))
	if _, err := io.WriteString(w.w, text); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap returns the writer w writes to (for terminal checks and the like).
func (w *writer) Unwrap() io.Writer { return w.w }

// sensitive matches the names of headers, variables, keys and query
// parameters whose values are secrets.
var sensitive = regexp.MustCompile(`(?i)(auth|token|secret|passw|api[-_]?key|cookie|credential|private|signature)`)

// sensitiveWords are short query parameter names that hold secrets but
// are too common as parts of other names to match anywhere in one.
var sensitiveWords = []string{"key", "sig", "pwd", "pass", "jwt"}

// SensitiveName reports whether a value named name (a header, an
// environment variable, a suite key, a URL query parameter) is a secret:
// its name contains auth, token, secret, passw, api_key, cookie,
// credential, private or signature, or is key, sig, pwd, pass or jwt.
//
// A name that counts tokens (max_tokens, tokens_per_minute, input_tokens)
// is not a secret: "token" there is a unit, and its value a number.
func SensitiveName(name string) bool {
	if tokenCount.MatchString(name) {
		return false
	}
	return sensitive.MatchString(name) || slices.Contains(sensitiveWords, strings.ToLower(name))
}

// tokenCount matches the names of token counts and limits.
var tokenCount = regexp.MustCompile(`(?i)(^|[-_])(max[-_]?tokens?|tokens)($|[-_])`)

// URL returns raw with the secrets its structure shows replaced by
// [Mask]: the password of its user information and the value of every
// query parameter with a [SensitiveName]. Text that is not an absolute URL
// is returned unchanged.
func URL(raw string) string {
	for _, s := range URLSecrets(raw) {
		raw = replaceInURL(raw, s)
	}
	return raw
}

// replaceInURL replaces secret in raw where it stands as a password or a
// query value: after ":" and before "@", or after "=" and before "&", "#"
// or the end.
func replaceInURL(raw, secret string) string {
	var b strings.Builder
	rest := raw
	for {
		i := strings.Index(rest, secret)
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		before := rest[:i]
		after := rest[i+len(secret):]
		delimited := (strings.HasSuffix(before, ":") && strings.HasPrefix(after, "@")) ||
			(strings.HasSuffix(before, "=") && (after == "" || strings.ContainsAny(after[:1], "&#;")))
		b.WriteString(before)
		if delimited {
			b.WriteString(Mask)
		} else {
			b.WriteString(secret)
		}
		rest = after
	}
}

// URLSecrets returns the secrets raw's structure shows, as written in it:
// the password of its user information (and the Basic credentials made
// of it) and the values of its query parameters with a [SensitiveName]. It returns nil for text that is not
// an absolute URL, and ignores values that are ${VAR} references (their
// values are known from the environment).
func URLSecrets(raw string) []string {
	if !strings.Contains(raw, "://") {
		return nil
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" {
		return nil
	}
	var out []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			// An HTTP client sends them as "Authorization: Basic
			// base64(user:password)", which a server may echo.
			basic := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + p))
			out = append(out, rawPassword(raw, p), basic)
		}
	}
	for _, part := range strings.FieldsFunc(u.RawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		k, v, ok := strings.Cut(part, "=")
		if !ok || v == "" {
			continue
		}
		if name, err := url.QueryUnescape(k); err == nil && SensitiveName(name) {
			out = append(out, v)
		}
	}
	// A value holding a ${VAR} reference is shown as written: its secret
	// part comes from the environment, whose values the Scrubber knows.
	return slices.DeleteFunc(out, func(v string) bool { return strings.Contains(v, "${") })
}

// rawPassword returns the password of raw's user information as written
// (percent-encoded or not); decoded is its decoded form, returned when
// raw's authority cannot be cut as url.Parse cut it.
func rawPassword(raw, decoded string) string {
	_, rest, _ := strings.Cut(raw, "://")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	i := strings.LastIndex(rest, "@")
	if i < 0 {
		return decoded
	}
	if _, p, ok := strings.Cut(rest[:i], ":"); ok && p != "" {
		return p
	}
	return decoded
}
