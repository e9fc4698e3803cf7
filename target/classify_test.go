package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

func TestParseRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-3", 0},
		{"5", 5 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"1.5", 1500 * time.Millisecond},
		{"99999", time.Hour},
		{"NaN", 0},
		{"soon", 0},
		{fixedNow.Add(45 * time.Second).Format(http.TimeFormat), 45 * time.Second},
		{fixedNow.Add(-time.Minute).Format(http.TimeFormat), 0},
		{fixedNow.Add(48 * time.Hour).Format(http.TimeFormat), time.Hour},
		{fixedNow.Add(10 * time.Second).Format(time.RFC850), 10 * time.Second},
	} {
		if got := ParseRetryAfter(tc.in, fixedNow); got != tc.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestClassifyStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		header http.Header
		kind   evalrun.ErrorKind
		after  time.Duration
	}{
		{400, nil, evalrun.ErrorPermanent, 0},
		{401, nil, evalrun.ErrorPermanent, 0},
		{404, http.Header{"Retry-After": {"3"}}, evalrun.ErrorPermanent, 3 * time.Second},
		{408, nil, evalrun.ErrorTransient, 0},
		{429, http.Header{"Retry-After": {"3"}}, evalrun.ErrorTransient, 3 * time.Second},
		{429, http.Header{"Retry-After-Ms": {"250"}}, evalrun.ErrorTransient, 250 * time.Millisecond},
		{500, nil, evalrun.ErrorTransient, 0},
		{503, http.Header{"Retry-After": {fixedNow.Add(time.Minute).Format(http.TimeFormat)}}, evalrun.ErrorTransient, time.Minute},
		{302, nil, evalrun.ErrorPermanent, 0},
	} {
		err := ClassifyStatus(tc.status, tc.header, fixedNow, nil)
		e := wantKind(t, err, tc.kind)
		if e.StatusCode != tc.status || e.RetryAfter != tc.after {
			t.Errorf("ClassifyStatus(%d): status %d, RetryAfter %v; want %d, %v", tc.status, e.StatusCode, e.RetryAfter, tc.status, tc.after)
		}
	}
	cause := errors.New("body says no")
	if err := ClassifyStatus(500, nil, fixedNow, cause); !errors.Is(err, cause) {
		t.Errorf("ClassifyStatus does not wrap its cause")
	}
}

func TestClassifyTransport(t *testing.T) {
	urlErr := func(err error) error { return &url.Error{Op: "Post", URL: "http://x", Err: err} }
	opErr := func(op string, err error) error {
		return &net.OpError{Op: op, Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: err}}
	}
	already := &evalrun.Error{Kind: evalrun.ErrorTripwire, Err: errors.New("x")}
	for _, tc := range []struct {
		name string
		err  error
		kind evalrun.ErrorKind
	}{
		{"refused", urlErr(opErr("dial", syscall.ECONNREFUSED)), evalrun.ErrorTransient},
		{"reset", urlErr(opErr("read", syscall.ECONNRESET)), evalrun.ErrorTransient},
		{"broken pipe", urlErr(opErr("write", syscall.EPIPE)), evalrun.ErrorTransient},
		{"eof", urlErr(io.EOF), evalrun.ErrorTransient},
		{"unexpected eof", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), evalrun.ErrorTransient},
		{"deadline", urlErr(context.DeadlineExceeded), evalrun.ErrorTransient},
		{"canceled", urlErr(context.Canceled), evalrun.ErrorCanceled},
		{"dns not found", urlErr(&net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}), evalrun.ErrorPermanent},
		{"dns timeout", urlErr(&net.DNSError{Err: "timeout", Name: "x", IsTimeout: true}), evalrun.ErrorTransient},
		{"too large", fmt.Errorf("x: %w", ErrResponseTooLarge), evalrun.ErrorPermanent},
		{"unknown", errors.New("weird"), evalrun.ErrorPermanent},
		{"already classified", fmt.Errorf("wrapped: %w", already), evalrun.ErrorTripwire},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ClassifyTransport(tc.err)
			wantKind(t, err, tc.kind)
			if !errors.Is(err, tc.err) {
				t.Errorf("classified error does not wrap the original")
			}
		})
	}
	if ClassifyTransport(nil) != nil {
		t.Errorf("ClassifyTransport(nil) != nil")
	}
}

func TestClassifyHTTP(t *testing.T) {
	if err := ClassifyHTTP(&http.Response{StatusCode: 204}, nil, fixedNow); err != nil {
		t.Errorf("2xx: %v", err)
	}
	err := ClassifyHTTP(&http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"2"}}}, nil, fixedNow)
	if e := wantKind(t, err, evalrun.ErrorTransient); e.RetryAfter != 2*time.Second {
		t.Errorf("RetryAfter = %v", e.RetryAfter)
	}
	wantKind(t, ClassifyHTTP(nil, io.ErrUnexpectedEOF, fixedNow), evalrun.ErrorTransient)
}

func TestCheckUTF8(t *testing.T) {
	if err := CheckUTF8([]byte("héllo")); err != nil {
		t.Errorf("valid UTF-8 rejected: %v", err)
	}
	err := CheckUTF8([]byte("ab\xffc"))
	wantKind(t, err, evalrun.ErrorPermanent)
	if !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("error does not wrap ErrInvalidUTF8")
	}
}

func TestReadLimited(t *testing.T) {
	b, err := ReadLimited(io.LimitReader(zeros{}, 10), 10)
	if err != nil || len(b) != 10 {
		t.Errorf("exactly the cap: %d bytes, %v", len(b), err)
	}
	if _, err := ReadLimited(io.LimitReader(zeros{}, 11), 10); !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("over the cap: %v, want ErrResponseTooLarge", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
