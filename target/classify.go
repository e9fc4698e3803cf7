package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/utf8check"
)

// DefaultMaxResponseBytes is the default cap on a response body: 10 MB.
const DefaultMaxResponseBytes int64 = 10 << 20

// Sentinel errors, matched with errors.Is.
var (
	// ErrResponseTooLarge: a response body exceeded its size cap. It is a
	// permanent error: the same request would give the same body.
	ErrResponseTooLarge = errors.New("response too large")
	// ErrInvalidUTF8: an output is not valid UTF-8 (see the package
	// documentation). It is a permanent error.
	ErrInvalidUTF8 = errors.New("output is not valid UTF-8")
	// ErrMalformedResponse: a 2xx response could not be used (invalid JSON,
	// a missing field, the output path not found). It is a permanent
	// error: a malformed success is never retried.
	ErrMalformedResponse = errors.New("malformed response")
)

// ClassifyHTTP classifies the outcome of one HTTP exchange: a transport
// error (err != nil, see [ClassifyTransport]) or a non-2xx response (see
// [ClassifyStatus]; the body is not read). It returns nil for a 2xx
// response without error. now is the time Retry-After dates are measured
// from; tests inject it.
func ClassifyHTTP(resp *http.Response, err error, now time.Time) error {
	if err != nil {
		return ClassifyTransport(err)
	}
	if resp == nil || (resp.StatusCode >= 200 && resp.StatusCode < 300) {
		return nil
	}
	return ClassifyStatus(resp.StatusCode, resp.Header, now, nil)
}

// ClassifyTransport classifies an error that happened before a complete
// response was read. It returns err unchanged when it already carries an
// *[evalrun.Error], and nil for nil. Otherwise the result is an
// *evalrun.Error wrapping err, of kind:
//
//   - canceled for context.Canceled (the caller gave up);
//   - transient for context.DeadlineExceeded and any network timeout (one
//     attempt's timeout), connection refused, reset or aborted, a broken
//     pipe, an (unexpected) EOF, and other dial errors;
//   - permanent for [ErrResponseTooLarge], [ErrInvalidUTF8], a DNS error
//     that is neither temporary nor a timeout, and anything else.
func ClassifyTransport(err error) error {
	if err == nil {
		return nil
	}
	var ee *evalrun.Error
	if errors.As(err, &ee) {
		return err
	}
	return &evalrun.Error{Kind: transportKind(err), Err: err}
}

func transportKind(err error) evalrun.ErrorKind {
	switch {
	case errors.Is(err, ErrResponseTooLarge), errors.Is(err, ErrInvalidUTF8), errors.Is(err, ErrMalformedResponse):
		return evalrun.ErrorPermanent
	case errors.Is(err, context.Canceled):
		return evalrun.ErrorCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return evalrun.ErrorTransient
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, net.ErrClosed), errors.Is(err, http.ErrServerClosed):
		return evalrun.ErrorTransient
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsTimeout || dns.IsTemporary {
			return evalrun.ErrorTransient
		}
		return evalrun.ErrorPermanent
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return evalrun.ErrorTransient
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return evalrun.ErrorTransient
	}
	return evalrun.ErrorPermanent
}

// ClassifyStatus classifies a non-2xx HTTP status: 408, 429 and 5xx are
// transient, anything else permanent. The result is an *[evalrun.Error]
// with StatusCode set and RetryAfter taken from the Retry-After header
// (seconds or an HTTP date, see [ParseRetryAfter]) or, failing that, from a
// Retry-After-Ms header. It wraps cause when given, and otherwise an error
// naming the status.
func ClassifyStatus(status int, header http.Header, now time.Time, cause error) error {
	kind := evalrun.ErrorPermanent
	if status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500 {
		kind = evalrun.ErrorTransient
	}
	if cause == nil {
		text := http.StatusText(status)
		if text == "" {
			text = "unexpected status"
		}
		cause = errors.New(strings.ToLower(text))
	}
	e := &evalrun.Error{Kind: kind, StatusCode: status, Err: cause}
	if header != nil {
		e.RetryAfter = ParseRetryAfter(header.Get("Retry-After"), now)
		if e.RetryAfter == 0 {
			if ms, err := strconv.ParseFloat(strings.TrimSpace(header.Get("Retry-After-Ms")), 64); err == nil && ms > 0 {
				e.RetryAfter = time.Duration(ms * float64(time.Millisecond))
			}
		}
	}
	return e
}

// maxRetryAfter caps what a server may ask for, so a bogus header cannot
// stall a run for days.
const maxRetryAfter = time.Hour

// ParseRetryAfter parses a Retry-After header value: a number of seconds
// ("120", fractions allowed) or an HTTP date, measured from now. It returns
// 0 for an empty, invalid, negative or past value, and caps the wait at one
// hour.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || secs != secs {
			return 0
		}
		if secs >= maxRetryAfter.Seconds() {
			return maxRetryAfter
		}
		d = time.Duration(secs * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	if d <= 0 {
		return 0
	}
	return min(d, maxRetryAfter)
}

// ReadLimited reads r to the end, failing with an error wrapping
// [ErrResponseTooLarge] when it holds more than max bytes (max <= 0 means
// [DefaultMaxResponseBytes]). Read errors are returned wrapped.
func ReadLimited(r io.Reader, max int64) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxResponseBytes
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, max)
	}
	return b, nil
}

// CheckUTF8 returns nil when b is valid UTF-8, and otherwise a permanent
// *[evalrun.Error] wrapping [ErrInvalidUTF8] with the offset of the first
// invalid byte.
func CheckUTF8(b []byte) error {
	off := utf8check.FirstInvalid(b)
	if off < 0 {
		return nil
	}
	return &evalrun.Error{Kind: evalrun.ErrorPermanent, Err: fmt.Errorf("%w: invalid byte 0x%02x at offset %d", ErrInvalidUTF8, b[off], off)}
}
