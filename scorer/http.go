package scorer

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/redact"
	"github.com/evalrun/evalrun/internal/tracing"
	"github.com/evalrun/evalrun/retry"
	"github.com/evalrun/evalrun/target"
)

// HTTPOptions configure [NewHTTP].
type HTTPOptions struct {
	// Name defaults to "http".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
	// URL is the grading service's endpoint, http or https; required.
	URL string
	// Method defaults to POST.
	Method string
	// Headers are sent with every request (Content-Type and Accept default
	// to application/json).
	Headers map[string]string
	// Timeout bounds one attempt; 0 means [DefaultTimeout].
	Timeout time.Duration
	// Retry is applied to transient errors (transport errors, timeouts,
	// 408, 429 and 5xx, honouring Retry-After); the zero value tries once.
	Retry retry.Policy
	// Client sends the requests; nil means a client of the scorer's own.
	// Redirects are followed within the URL's origin only, whatever the
	// client.
	Client *http.Client
	// Clock is what Retry-After dates are measured from; nil means
	// evalrun.SystemClock.
	Clock evalrun.Clock
}

// HTTP scores with a grading service: it sends the JSON object an
// [Exec] scorer gets as the request body and reads a number in [0,1] or
// {"score": x, "reason": "..."} from a 2xx response.
//
// Errors are classified as the http target's: transport errors, an
// attempt's timeout, 408, 429 and 5xx are transient and retried under the
// Retry policy (waiting at least a Retry-After); another status is
// permanent; a body over [MaxAnswerBytes] or not a valid answer is an
// error of kind invalid_output, never retried. A redirect to another
// origin is refused (the item's data goes nowhere the suite did not
// name). Safe for concurrent use.
type HTTP struct {
	base
	url     string
	method  string
	header  http.Header
	timeout time.Duration
	retry   retry.Policy
	client  *http.Client
	ownsCli bool
	clock   evalrun.Clock
	scrub   *redact.Scrubber
}

var (
	_ evalrun.Scorer      = (*HTTP)(nil)
	_ evalrun.Thresholder = (*HTTP)(nil)
	_ evalrun.Closer      = (*HTTP)(nil)
)

// NewHTTP returns an http scorer, or a *[ConfigError] for a bad URL,
// method, header or timeout.
func NewHTTP(opts HTTPOptions) (*HTTP, error) {
	b, err := newBase(KindHTTP, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	// The http target's checks, for the keys the two share.
	if err := (&target.HTTPConfig{URL: opts.URL, Method: opts.Method, Headers: opts.Headers}).Validate(); err != nil {
		var ce *target.ConfigError
		if errors.As(err, &ce) {
			return nil, b.configError(ce.Key, ce.Err)
		}
		return nil, b.configError("url", err)
	}
	if opts.Timeout < 0 {
		return nil, b.configError("timeout", fmt.Errorf("%v is negative", opts.Timeout))
	}
	u, _ := url.Parse(opts.URL) // checked by Validate
	s := &HTTP{base: b, url: opts.URL, method: cmp.Or(strings.ToUpper(opts.Method), http.MethodPost),
		header: make(http.Header, len(opts.Headers)+2), timeout: cmp.Or(opts.Timeout, DefaultTimeout),
		retry: opts.Retry, client: opts.Client, clock: opts.Clock, scrub: &redact.Scrubber{}}
	for k, v := range opts.Headers {
		s.header.Set(k, v)
		if redact.SensitiveName(k) {
			s.scrub.AddCredential(v)
		}
	}
	s.scrub.Add(redact.URLSecrets(opts.URL)...)
	if s.header.Get("Content-Type") == "" {
		s.header.Set("Content-Type", "application/json")
	}
	if s.header.Get("Accept") == "" {
		s.header.Set("Accept", "application/json")
	}
	if s.client == nil {
		s.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		s.ownsCli = true
	}
	s.client = target.SameOriginRedirects(s.client, u, func(to *url.URL) error {
		return evalrun.Permanent(fmt.Errorf("refusing a redirect to %s://%s, another origin than url's", to.Scheme, to.Host))
	})
	if s.clock == nil {
		s.clock = evalrun.SystemClock
	}
	return s, nil
}

func buildHTTP(c Config, b base, d Deps) (evalrun.Scorer, error) {
	p, err := c.retryPolicy(d)
	if err != nil {
		return nil, err
	}
	timeout, err := c.timeout(b)
	if err != nil {
		return nil, err
	}
	return NewHTTP(HTTPOptions{Name: b.name, Threshold: &b.threshold, URL: c.URL, Method: c.Method,
		Headers: c.Headers, Timeout: timeout, Retry: p})
}

// Score posts in to the service, retrying transient failures.
func (s *HTTP) Score(ctx context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	body, err := encodeRequest(in)
	if err != nil {
		return evalrun.Score{}, evalrun.Permanent(fmt.Errorf("http scorer %q: encode request: %w", s.name, err))
	}
	var answer []byte
	attempts, err := retry.Do(ctx, s.retry, func(ctx context.Context, _ int) error {
		a, err := s.attempt(ctx, body)
		answer = a
		return err
	})
	if err != nil {
		var e *evalrun.Error
		_ = errors.As(target.ClassifyTransport(err), &e)
		return evalrun.Score{}, &evalrun.Error{Kind: e.Kind, StatusCode: e.StatusCode,
			Err: fmt.Errorf("http scorer %q (%d attempts): %w", s.name, attempts, err)}
	}
	sc, err := parseAnswer(answer)
	if err != nil {
		return evalrun.Score{}, &evalrun.Error{Kind: evalrun.ErrorInvalidOutput,
			Err: fmt.Errorf("http scorer %q: %w; the response was %s", s.name, err, excerpt(bytes.TrimSpace(answer)))}
	}
	return sc, nil
}

// attempt sends one request under the per-attempt timeout.
func (s *HTTP) attempt(ctx context.Context, body []byte) ([]byte, error) {
	actx, cancel := context.WithTimeoutCause(ctx, s.timeout, errScorerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, s.method, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, evalrun.Permanent(fmt.Errorf("build request: %w", err))
	}
	for k, v := range s.header {
		req.Header[k] = v
	}
	// The grading service's spans join the eval's trace (docs/observability.md).
	tracing.Inject(ctx, req.Header)
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact.URL(ue.URL)
		}
		if ctx.Err() == nil && errors.Is(context.Cause(actx), errScorerTimeout) {
			return nil, evalrun.Transient(fmt.Errorf("no response within %s", s.timeout))
		}
		return nil, target.ClassifyTransport(s.scrub.Error(err))
	}
	defer resp.Body.Close()
	where := redact.URL(req.URL.Redacted())
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		msg := fmt.Errorf("%s %s: %s", s.method, where, resp.Status)
		if t := strings.TrimSpace(strings.ToValidUTF8(string(snippet), "\uFFFD")); t != "" {
			msg = fmt.Errorf("%s %s: %s: %s", s.method, where, resp.Status, s.scrub.String(t))
		}
		return nil, target.ClassifyStatus(resp.StatusCode, resp.Header, s.clock.Now(), msg)
	}
	b, err := target.ReadLimited(resp.Body, MaxAnswerBytes)
	if err != nil {
		if errors.Is(err, target.ErrResponseTooLarge) {
			return nil, &evalrun.Error{Kind: evalrun.ErrorInvalidOutput, StatusCode: resp.StatusCode,
				Err: fmt.Errorf("%s %s: the response is larger than %d bytes", s.method, where, MaxAnswerBytes)}
		}
		if ctx.Err() == nil && errors.Is(context.Cause(actx), errScorerTimeout) {
			return nil, evalrun.Transient(fmt.Errorf("no complete response within %s", s.timeout))
		}
		return nil, target.ClassifyTransport(err)
	}
	return b, nil
}

// Close releases the idle connections of the scorer's own client.
func (s *HTTP) Close() error {
	if s.ownsCli {
		s.client.CloseIdleConnections()
	}
	return nil
}
