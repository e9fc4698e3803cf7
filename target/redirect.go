package target

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// SameOriginRedirects returns a copy of hc (sharing its transport) that
// follows redirects within base's origin only: a request body (prompts,
// items, outputs) goes nowhere the suite did not name. A redirect to
// another origin ends the request with refused's error; after that check,
// hc's own CheckRedirect (or the standard limit of 10) applies.
func SameOriginRedirects(hc *http.Client, base *url.URL, refused func(to *url.URL) error) *http.Client {
	c := *hc
	next := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !SameOrigin(req.URL, base) {
			return refused(req.URL)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// SameOrigin reports whether a and b have the same scheme, host and port
// (a missing port is the scheme's default).
func SameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}
