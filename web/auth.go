package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
)

// CookieName is the name of the cookie that carries the proof of the token
// after a first visit with ?token=.
const CookieName = "evalrun_token"

// authenticator checks the token of every request, or, without a token,
// that the request is addressed to a loopback host.
type authenticator struct {
	token  []byte
	digest [32]byte // sha256(token): compared in constant time
	cookie string   // HMAC of a fixed label under the token: not the token itself
}

func newAuthenticator(token string) *authenticator {
	a := &authenticator{}
	if token == "" {
		return a
	}
	a.token = []byte(token)
	a.digest = sha256.Sum256(a.token)
	m := hmac.New(sha256.New, a.token)
	m.Write([]byte("evalrun web viewer session"))
	a.cookie = hex.EncodeToString(m.Sum(nil))
	return a
}

// matches compares a presented token with the configured one in constant
// time (digests of equal length, whatever the presented length).
func (a *authenticator) matches(presented string) bool {
	d := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(d[:], a.digest[:]) == 1
}

// check authorizes r, writing the refusal (or the redirect of the cookie
// flow) itself when it returns false.
func (a *authenticator) check(w http.ResponseWriter, r *http.Request) bool {
	if a.token == nil {
		// No token: loopback only. A page of another site that rebinds its
		// name to 127.0.0.1 sends its own name as Host and is refused.
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if !isLoopbackHost(strings.Trim(host, "[]")) {
			http.Error(w, "host not allowed: without a token the viewer answers only to localhost / 127.0.0.1 / [::1]", http.StatusForbidden)
			return false
		}
		return true
	}
	if q := r.URL.Query(); q.Has("token") {
		if !a.matches(q.Get("token")) {
			unauthorized(w)
			return false
		}
		http.SetCookie(w, &http.Cookie{
			Name: CookieName, Value: a.cookie, Path: "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
		})
		q.Del("token")
		http.Redirect(w, r, localURL(r.URL.EscapedPath(), q.Encode()), http.StatusSeeOther)
		return false
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, tok, ok := strings.Cut(auth, " ")
		if ok && strings.EqualFold(scheme, "Bearer") && a.matches(strings.TrimSpace(tok)) {
			return true
		}
		unauthorized(w)
		return false
	}
	if c, err := r.Cookie(CookieName); err == nil &&
		subtle.ConstantTimeCompare([]byte(c.Value), []byte(a.cookie)) == 1 {
		return true
	}
	unauthorized(w)
	return false
}

// localURL returns a reference to path?query on the viewer's own origin.
// A request's path may start with `//` or `/\` ("//evil.example/?token=…"),
// which a browser reads as another host: leading slashes and backslashes
// are folded into one "/", so a redirect never leaves the viewer.
func localURL(escapedPath, rawQuery string) string {
	u := "/" + strings.TrimLeft(escapedPath, "/\\")
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	return u
}

// MinTokenLength is the length a token must have at least ([CheckToken]).
const MinTokenLength = 16

// CheckToken refuses a token that is too weak or cannot be sent intact: one
// shorter than [MinTokenLength] or of fewer than 8 different characters, or with a character other than printable
// ASCII (a space, a trailing newline from a file, a control character),
// which a URL or an Authorization header would mangle. The error, which
// never quotes the token, says how to make one; it wraps
// [evalrun.ErrInvalid].
func CheckToken(token string) error {
	const how = "generate one with: openssl rand -hex 16"
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c > '~' {
			what := "a space or a control character"
			switch {
			case c == '\n' || c == '\r':
				what = "a line break (a trailing newline read from a file?)"
			case c > '~':
				what = "a character that is not printable ASCII"
			}
			return invalidf("web: the token has %s at byte %d: use printable ASCII without spaces; %s", what, i+1, how)
		}
	}
	if len(token) < MinTokenLength {
		return invalidf("web: the token is too short to keep the viewer safe from guessing (%d of at least %d characters); %s",
			len(token), MinTokenLength, how)
	}
	// Length alone does not make a token hard to guess: "aaaa…" and
	// "passwordpassword" are long. A random one (openssl rand -hex 16)
	// has 13 or more different characters.
	distinct := map[byte]bool{}
	for i := 0; i < len(token); i++ {
		distinct[token[i]] = true
	}
	if len(distinct) < minTokenDistinct {
		return invalidf("web: the token repeats too few characters to keep the viewer safe from guessing (%d different, at least %d); %s",
			len(distinct), minTokenDistinct, how)
	}
	return nil
}

// minTokenDistinct is how many different characters a token must have.
const minTokenDistinct = 8

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="evalrun"`)
	http.Error(w, "unauthorized: open the viewer's URL with ?token=<token> once, or send Authorization: Bearer <token>", http.StatusUnauthorized)
}
