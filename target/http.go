package target

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/redact"
	"github.com/evalrun/evalrun/internal/tracing"
)

// HTTPConfig configures an [HTTP] target. The yaml keys are the suite file's.
type HTTPConfig struct {
	// URL is the endpoint, http or https. Required.
	URL string `yaml:"url" json:"url"`
	// Method is the HTTP method; default POST.
	Method string `yaml:"method" json:"method,omitempty"`
	// Headers are sent with every request. Content-Type defaults to
	// application/json when a body is sent.
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// Body is a [Template] for the request body. When empty, POST and the
	// other methods with a body send {"id": ID, "input": INPUT}; GET, HEAD,
	// DELETE and OPTIONS send none.
	Body string `yaml:"body" json:"body,omitempty"`
	// Output is a gjson path into the JSON response picking the output;
	// empty means the whole body.
	Output string `yaml:"output" json:"output,omitempty"`
	// Trajectory, when set, makes the target a black-box agent: a gjson
	// path into the JSON response naming the tool calls the agent made,
	// an array of {"name", "args" | "arguments", "output"?, "error"?}
	// ("arguments" may be OpenAI's JSON string) or null for none.
	Trajectory string `yaml:"trajectory" json:"trajectory,omitempty"`
	// MaxResponseBytes caps the response body; 0 means
	// [DefaultMaxResponseBytes]. A larger body is a permanent error.
	MaxResponseBytes int64 `yaml:"max_response_bytes" json:"max_response_bytes,omitempty"`

	// Client sends the requests; nil means a client of the target's own
	// (closed by Close). It should have no timeout of its own: the
	// engine's deadlines apply through the context.
	Client *http.Client `yaml:"-" json:"-"`
	// Clock is the time Retry-After dates are measured from; nil means
	// evalrun.SystemClock.
	Clock evalrun.Clock `yaml:"-" json:"-"`
}

// Validate reports the first bad value as a *[ConfigError] naming its key.
func (c *HTTPConfig) Validate() error {
	_, err := c.check()
	return err
}

// check validates c and returns the parsed body template, if any.
func (c *HTTPConfig) check() (*Template, error) {
	if c.URL == "" {
		return nil, configErrorf("url", "required")
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil, configErrorf("url", "invalid URL %q: %w", c.URL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, configErrorf("url", "%q: scheme must be http or https", c.URL)
	}
	if u.Host == "" {
		return nil, configErrorf("url", "%q: missing host", c.URL)
	}
	if c.Method != "" && !validToken(c.Method) {
		return nil, configErrorf("method", "invalid HTTP method %q", c.Method)
	}
	for k, v := range c.Headers {
		if !validToken(k) {
			return nil, configErrorf("headers", "invalid header name %q", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, configErrorf("headers", "invalid value for header %q", k)
		}
	}
	if c.MaxResponseBytes < 0 {
		return nil, configErrorf("max_response_bytes", "must not be negative, got %d", c.MaxResponseBytes)
	}
	if c.Output != "" {
		if err := checkPath("output", c.Output); err != nil {
			return nil, err
		}
	}
	if c.Trajectory != "" {
		if err := checkPath("trajectory", c.Trajectory); err != nil {
			return nil, err
		}
	}
	if c.Body == "" {
		return nil, nil
	}
	return ParseTemplate("body", c.Body)
}

// HTTP is a target calling a JSON HTTP endpoint. Each item is one request;
// a 2xx response's body (or the part its output path picks) is the output.
// A non-2xx status is an error, never scored; see the package
// documentation for the error classes. With a trajectory path the target
// is a black-box agent: the tool calls at that path in the response are
// the output's trajectory, and a response without a valid trajectory there
// fails the item with kind invalid_output ([ErrInvalidTrajectory]). It is
// safe for concurrent use.
type HTTP struct {
	url     string
	method  string
	header  http.Header
	body    *Template
	noBody  bool
	path    string
	traj    string // the trajectory path; "" when not an agent
	max     int64
	client  *http.Client
	ownsCli bool
	clock   evalrun.Clock
	// scrub knows the target's own secrets (its secret-named headers,
	// its URL's password and secret-named query parameters), which a
	// server may echo in an error body.
	scrub *redact.Scrubber
}

var (
	_ evalrun.Target = (*HTTP)(nil)
	_ evalrun.Closer = (*HTTP)(nil)
)

// NewHTTP returns an HTTP target, or a *[ConfigError] for bad config.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	body, err := cfg.check()
	if err != nil {
		return nil, err
	}
	t := &HTTP{
		url:    cfg.URL,
		method: strings.ToUpper(cfg.Method),
		header: make(http.Header, len(cfg.Headers)+1),
		body:   body,
		path:   cfg.Output,
		traj:   cfg.Trajectory,
		max:    cfg.MaxResponseBytes,
		client: cfg.Client,
		clock:  cfg.Clock,
	}
	if t.method == "" {
		t.method = http.MethodPost
	}
	switch t.method {
	case http.MethodGet, http.MethodHead, http.MethodDelete, http.MethodOptions:
		t.noBody = body == nil
	}
	for k, v := range cfg.Headers {
		t.header.Set(k, v)
	}
	if !t.noBody && t.header.Get("Content-Type") == "" {
		t.header.Set("Content-Type", "application/json")
	}
	if t.header.Get("Accept") == "" {
		t.header.Set("Accept", "application/json")
	}
	if t.max == 0 {
		t.max = DefaultMaxResponseBytes
	}
	if t.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		t.client = &http.Client{Transport: tr}
		t.ownsCli = true
	}
	if t.clock == nil {
		t.clock = evalrun.SystemClock
	}
	t.scrub = &redact.Scrubber{}
	t.scrub.Add(redact.URLSecrets(cfg.URL)...)
	for k, v := range cfg.Headers {
		if redact.SensitiveName(k) {
			t.scrub.AddCredential(v)
		}
	}
	return t, nil
}

// defaultBody is the request body sent when no template is configured.
type defaultBody struct {
	ID    string          `json:"id"`
	Input json.RawMessage `json:"input"`
}

// Execute sends one request for item and returns the picked output.
func (t *HTTP) Execute(ctx context.Context, item *evalrun.Item) (evalrun.Output, error) {
	var body io.Reader
	switch {
	case t.body != nil:
		s, err := t.body.Render(item)
		if err != nil {
			return evalrun.Output{}, err
		}
		body = strings.NewReader(s)
	case !t.noBody:
		b, err := json.Marshal(defaultBody{ID: item.ID, Input: item.Input})
		if err != nil {
			return evalrun.Output{}, evalrun.Permanent(fmt.Errorf("encode request: %w", err))
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, t.method, t.url, body)
	if err != nil {
		return evalrun.Output{}, evalrun.Permanent(fmt.Errorf("build request: %w", err))
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	// The service's own spans join the eval's trace (traceparent of the
	// attempt's or the tool call's span; nothing when not traced).
	tracing.Inject(ctx, req.Header)
	resp, err := t.client.Do(req)
	if err != nil {
		// A *url.Error prints the whole URL, query included.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact.URL(ue.URL)
		}
		return evalrun.Output{}, ClassifyTransport(t.scrub.Error(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		where := redact.URL(req.URL.Redacted())
		msg := fmt.Errorf("%s %s", t.method, where)
		if s := strings.TrimSpace(strings.ToValidUTF8(string(snippet), "\uFFFD")); s != "" {
			msg = fmt.Errorf("%s %s: %s", t.method, where, t.scrub.String(s))
		}
		return evalrun.Output{}, ClassifyStatus(resp.StatusCode, resp.Header, t.clock.Now(), msg)
	}
	if resp.ContentLength > t.max {
		return evalrun.Output{}, malformed(resp.StatusCode, fmt.Errorf("%w: Content-Length %d exceeds %d bytes", ErrResponseTooLarge, resp.ContentLength, t.max))
	}
	buf := bodyBufs.Get().(*bytes.Buffer)
	defer putBodyBuf(buf)
	raw, err := readLimitedInto(buf, resp.Body, t.max)
	if err != nil {
		return evalrun.Output{}, ClassifyTransport(err)
	}
	// raw is the pooled buffer's: pick and trajectoryOf copy what they
	// keep.
	v, err := t.pick(raw, resp.Header.Get("Content-Type"))
	if err != nil {
		return evalrun.Output{}, malformed(resp.StatusCode, err)
	}
	out := evalrun.Output{Value: v}
	if t.traj != "" {
		if out.Trajectory, err = trajectoryOf(raw, t.traj, "the response"); err != nil {
			return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorInvalidOutput, StatusCode: resp.StatusCode, Err: err}
		}
	}
	return out, nil
}

// bodyBufs holds the buffers 2xx bodies are read into. A body is garbage
// once its output is picked (a copy); reading it into a fresh slice, grown
// by doubling, made ~2× its size of garbage per request, which at large
// outputs was a third of a --no-retain run's allocation (and so of its
// collections and peak RSS; docs/benchmarks.md, "Scale: memory").
var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody is the largest buffer kept for reuse: a rare huge body
// should not stay allocated for the rest of the run.
const maxPooledBody = 1 << 20

func putBodyBuf(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledBody {
		return
	}
	buf.Reset()
	bodyBufs.Put(buf)
}

// readLimitedInto is [ReadLimited] into buf (reset first); the returned
// slice is buf's and valid until buf is reused.
func readLimitedInto(buf *bytes.Buffer, r io.Reader, max int64) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxResponseBytes
	}
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(r, max+1)); err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	if int64(buf.Len()) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, max)
	}
	return buf.Bytes(), nil
}

// pick extracts the output from a 2xx body. The output it returns never
// shares raw's memory (raw may be a pooled buffer).
func (t *HTTP) pick(raw []byte, contentType string) (json.RawMessage, error) {
	if err := CheckUTF8(raw); err != nil {
		return nil, err
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: empty body", ErrMalformedResponse)
	}
	if t.path == "" {
		if json.Valid(raw) {
			return bytes.Clone(raw), nil
		}
		if mt, _, _ := mime.ParseMediaType(contentType); mt == "text/plain" {
			return evalrun.String(string(raw)), nil
		}
		return nil, fmt.Errorf("%w: body is not valid JSON", ErrMalformedResponse)
	}
	if !json.Valid(raw) { // not gjson.ValidBytes: see trajectoryOf
		return nil, fmt.Errorf("%w: body is not valid JSON", ErrMalformedResponse)
	}
	// gjson.Get on a view of raw, not GetBytes: GetBytes copies the value
	// (and its unescaped text) to strings, which the conversion below
	// would copy again. res.Raw aliases raw only until that conversion,
	// which copies; raw is not modified meanwhile.
	res := gjson.Get(unsafe.String(unsafe.SliceData(raw), len(raw)), t.path)
	if !res.Exists() {
		return nil, fmt.Errorf("%w: output path %q not found", ErrMalformedResponse, t.path)
	}
	return json.RawMessage(res.Raw), nil
}

// malformed returns err as a permanent error of a 2xx response.
func malformed(status int, err error) error {
	var ee *evalrun.Error
	if errors.As(err, &ee) {
		ee.StatusCode = status
		return ee
	}
	return &evalrun.Error{Kind: evalrun.ErrorPermanent, StatusCode: status, Err: err}
}

// Close releases the idle connections of the target's own client.
func (t *HTTP) Close() error {
	if t.ownsCli {
		t.client.CloseIdleConnections()
	}
	return nil
}

// validToken reports whether s is an HTTP token (RFC 9110 §5.6.2), as
// header names and methods are.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}
