package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/redact"
	"github.com/evalrun/evalrun/internal/tracing"
	"github.com/evalrun/evalrun/target"
)

// DefaultBaseURL is the OpenAI API.
const DefaultBaseURL = "https://api.openai.com/v1/"

// DefaultAPIKeyEnv is the environment variable the API key is read from by
// default.
const DefaultAPIKeyEnv = "OPENAI_API_KEY"

// ClientConfig is the connection part of every client of this package. The
// yaml keys are the suite file's.
type ClientConfig struct {
	// BaseURL is the API's base URL, e.g. http://127.0.0.1:11434/v1 for
	// Ollama; empty means [DefaultBaseURL].
	BaseURL string `yaml:"base_url" json:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding the API key; empty
	// means [DefaultAPIKeyEnv]. See the package documentation for when a
	// missing key is an error.
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env,omitempty"`
	// MaxResponseBytes caps a response body; 0 means
	// target.DefaultMaxResponseBytes.
	MaxResponseBytes int64 `yaml:"max_response_bytes" json:"max_response_bytes,omitempty"`

	// HTTPClient sends the requests; nil means a client of its own. It
	// should have no timeout: the engine's deadlines apply through ctx.
	HTTPClient *http.Client `yaml:"-" json:"-"`
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool) `yaml:"-" json:"-"`
	// Clock is the time Retry-After dates are measured from; nil means
	// evalrun.SystemClock.
	Clock evalrun.Clock `yaml:"-" json:"-"`
}

// validate checks the connection settings.
func (c *ClientConfig) validate() error {
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &target.ConfigError{Key: "base_url", Err: fmt.Errorf("%q is not an http(s) URL", c.BaseURL)}
		}
		if _, err := url.ParseQuery(u.RawQuery); err != nil {
			return &target.ConfigError{Key: "base_url", Err: fmt.Errorf("its query is not valid: %w (percent-encode its values)", err)}
		}
	}
	if c.APIKeyEnv != "" && strings.ContainsAny(c.APIKeyEnv, "=\x00 ") {
		return &target.ConfigError{Key: "api_key_env", Err: fmt.Errorf("%q is not an environment variable name", c.APIKeyEnv)}
	}
	if c.MaxResponseBytes < 0 {
		return &target.ConfigError{Key: "max_response_bytes", Err: fmt.Errorf("must not be negative, got %d", c.MaxResponseBytes)}
	}
	return nil
}

// apiKey resolves the API key (see the package documentation).
func (c *ClientConfig) apiKey() (string, error) {
	name := c.APIKeyEnv
	if name == "" {
		name = DefaultAPIKeyEnv
	}
	lookup := c.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	key, _ := lookup(name)
	key = strings.TrimSpace(key)
	if key == "" && (c.BaseURL == "" || c.APIKeyEnv != "") {
		return "", &target.ConfigError{Key: "api_key_env", Err: fmt.Errorf("environment variable %s is not set: export the API key in it", name)}
	}
	return key, nil
}

// client is what the package's types share: the endpoint, the headers
// every request carries, the response bound and the error mapping. It
// speaks the OpenAI wire protocol with net/http: evalrun encodes its
// requests and decodes the few reply fields it reads itself, and has its
// own retry policy, so an SDK would only add compile time, binary size and
// per-call CPU (docs/benchmarks.md, "Scale: binary and cold start").
type client struct {
	hc    *http.Client
	base  *url.URL // ends with "/", no query: endpoints resolve against it
	query string   // the base URL's query, sent with every request
	auth  string   // the Authorization header, "" for none
	max   int64
	clock evalrun.Clock
	own   *http.Client // closed by close
	// scrub knows the API key and the base URL's secrets, which an error
	// body (a 401 echoing the Authorization header) or a transport error
	// (printing the URL) may hold.
	scrub *redact.Scrubber
}

// userAgent names evalrun to the server (the SDK sent "OpenAI/Go <v>").
const userAgent = "evalrun"

// newClient validates c and resolves the key. No other OPENAI_* variable
// is read (see the package documentation).
func newClient(c ClientConfig) (*client, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	key, err := c.apiKey()
	if err != nil {
		return nil, err
	}
	cl := &client{max: c.MaxResponseBytes, clock: c.Clock, scrub: &redact.Scrubber{}}
	if key != "" {
		cl.auth = "Bearer " + key
		// The header as sent, which a server may echo encoded.
		cl.scrub.AddCredential(cl.auth)
	}
	cl.scrub.Add(redact.URLSecrets(c.BaseURL)...)
	if cl.max == 0 {
		cl.max = target.DefaultMaxResponseBytes
	}
	if cl.clock == nil {
		cl.clock = evalrun.SystemClock
	}
	cl.hc = c.HTTPClient
	if cl.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		cl.hc = &http.Client{Transport: tr}
		cl.own = cl.hc
	}
	base := c.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base) // checked by validate
	if err != nil {
		return nil, &target.ConfigError{Key: "base_url", Err: err}
	}
	// Endpoints resolve against the base URL's path, so it must end with
	// "/" (".../v1" + "chat/completions" would replace "v1"). Its query
	// (Azure's api-version, a gateway's key) is sent with every request,
	// encoded as url.Values does (keys sorted), as the SDK sent it.
	params, _ := url.ParseQuery(u.RawQuery) // checked by validate
	cl.query = params.Encode()
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		if u.RawPath != "" {
			u.RawPath += "/"
		}
	}
	cl.base = u
	cl.hc = target.SameOriginRedirects(cl.hc, u, func(to *url.URL) error {
		return fmt.Errorf("openai: refusing a redirect to %s://%s, another origin than base_url's", to.Scheme, to.Host)
	})
	return cl, nil
}

// endpoint returns the URL of path ("chat/completions") on the API.
func (c *client) endpoint(path string) string {
	u := c.base.ResolveReference(&url.URL{Path: path})
	u.RawQuery = c.query
	return u.String()
}

// exchange is one call's response as read.
type exchange struct {
	status int
	header http.Header
	body   []byte
}

// post sends body (a JSON object) to url and reads the reply under the size
// bound. Its error is a classified *evalrun.Error: a transport failure, an
// error status (>= 400) with the API's error message, an oversized or (for
// a 2xx) invalid UTF-8 body. A reply it returns may still not be the JSON
// the caller wants.
func (c *client) post(ctx context.Context, url string, body []byte) (exchange, error) {
	ex, err := c.roundTrip(ctx, url, body)
	if err != nil {
		return ex, c.classify(ctx, &ex, err)
	}
	return ex, nil
}

func (c *client) roundTrip(ctx context.Context, url string, body []byte) (exchange, error) {
	var ex exchange
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return ex, err
	}
	h := req.Header
	h["Content-Type"] = jsonType
	h["Accept"] = jsonType
	h["User-Agent"] = userAgentHeader
	if c.auth != "" {
		h["Authorization"] = []string{c.auth}
	}
	// The model call's span (traceparent; nothing when not traced).
	tracing.Inject(ctx, h)
	res, err := c.hc.Do(req)
	if err != nil {
		return ex, err
	}
	defer res.Body.Close()
	if res.ContentLength > c.max {
		return ex, &evalrun.Error{Kind: evalrun.ErrorPermanent, StatusCode: res.StatusCode,
			Err: fmt.Errorf("%w: Content-Length %d exceeds %d bytes", target.ErrResponseTooLarge, res.ContentLength, c.max)}
	}
	b, err := readBody(res.Body, res.ContentLength, c.max)
	if err != nil {
		return ex, err
	}
	ex.status, ex.header, ex.body = res.StatusCode, res.Header, b
	if res.StatusCode >= 400 {
		return ex, apiError(res.StatusCode, b)
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		if err := target.CheckUTF8(b); err != nil {
			return ex, err
		}
	}
	return ex, nil
}

// The constant request headers, shared (net/http only reads them).
var (
	jsonType        = []string{"application/json"}
	userAgentHeader = []string{userAgent}
)

// readBody reads a response body of at most max bytes (as
// target.ReadLimited), in one allocation when its length is announced.
func readBody(r io.Reader, contentLength, max int64) ([]byte, error) {
	if contentLength < 0 || contentLength > max {
		return target.ReadLimited(r, max)
	}
	// One byte more than announced: a body longer than its header says
	// is net/http's error, reported by the read.
	b := make([]byte, contentLength+1)
	n, err := io.ReadFull(r, b)
	switch {
	case int64(n) == contentLength && (err == io.ErrUnexpectedEOF || err == io.EOF):
		return b[:n], nil
	case err == nil:
		return nil, fmt.Errorf("read response: body longer than its Content-Length %d", contentLength)
	case err == io.EOF:
		err = io.ErrUnexpectedEOF // a body shorter than announced
	}
	return nil, fmt.Errorf("read response: %w", err)
}

// APIError is an error status from the API, with the fields of the body's
// "error" object (OpenAI's {"error": {"message", "type", "code",
// "param"}}; a field that is a number there is its JSON text). Its message
// is the status line, as the SDK's *openai.Error's was; the classified
// error adds Message after it.
type APIError struct {
	StatusCode int
	Message    string
	Type       string
	Code       string
	Param      string
}

func (e *APIError) Error() string {
	if text := http.StatusText(e.StatusCode); text != "" {
		return fmt.Sprintf("OpenAI API error: %d %s", e.StatusCode, text)
	}
	return fmt.Sprintf("OpenAI API error: %d", e.StatusCode)
}

// errNotAPIError is why an error body's "error" is not an object.
type errNotAPIError struct{ kind string }

func (e errNotAPIError) Error() string {
	return fmt.Sprintf("the error body's \"error\" is a %s, not an object", e.kind)
}

// apiError reads an error status's body as the SDK did: its "error" value,
// when an object, gives the fields; a body without one (HTML from a proxy,
// {"detail": ...}) gives an APIError with the status alone; an "error" of
// another JSON type is not an APIError (classify shows the body instead).
func apiError(status int, body []byte) error {
	e := &APIError{StatusCode: status}
	v := gjson.GetBytes(body, "error")
	switch v.Type {
	case gjson.Null:
		return e
	case gjson.JSON:
		if !v.IsObject() {
			return errNotAPIError{"array"}
		}
	case gjson.String:
		return errNotAPIError{"string"}
	case gjson.Number:
		return errNotAPIError{"number"}
	default:
		return errNotAPIError{"boolean"}
	}
	field := func(name string) string {
		f := v.Get(name)
		switch f.Type {
		case gjson.Null:
			return ""
		case gjson.String:
			return f.Str
		}
		return f.Raw
	}
	e.Message, e.Type, e.Code, e.Param = field("message"), field("type"), field("code"), field("param")
	return e
}

// classify maps a call's error to an *evalrun.Error.
func (c *client) classify(ctx context.Context, ex *exchange, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return target.ClassifyTransport(fmt.Errorf("openai: %w", context.Cause(ctx)))
	}
	var ee *evalrun.Error
	if errors.As(err, &ee) {
		return err
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		cause := error(apiErr)
		if apiErr.Message != "" {
			cause = fmt.Errorf("%w: %s", apiErr, apiErr.Message)
		}
		return target.ClassifyStatus(apiErr.StatusCode, ex.header, c.clock.Now(), c.scrub.Error(cause))
	}
	if ex.status != 0 {
		// An error status whose "error" is not an object.
		if s := snippet(ex.body); s != "" {
			err = fmt.Errorf("%s", s)
		}
		return target.ClassifyStatus(ex.status, ex.header, c.clock.Now(), c.scrub.Error(err))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redact.URL(ue.URL)
	}
	return target.ClassifyTransport(c.scrub.Error(err))
}

// decode decodes a 2xx (or 3xx) reply's body into v; a body that is not
// that JSON is a malformed response. Like the SDK's decoder, it reads the
// first JSON value and ignores what follows.
func decode(ex *exchange, v any) error {
	if err := json.NewDecoder(bytes.NewReader(ex.body)).Decode(v); err != nil {
		return malformed(ex.status, fmt.Errorf("%w (body %q)", err, snippet(ex.body)), evalrun.Usage{})
	}
	return nil
}

// malformed returns a permanent error of a 2xx response that cannot be
// used, carrying what the call consumed.
func malformed(status int, err error, u evalrun.Usage) error {
	return &evalrun.Error{Kind: evalrun.ErrorPermanent, StatusCode: status, Usage: u, Err: fmt.Errorf("%w: %w", target.ErrMalformedResponse, err)}
}

// snippet returns the start of a response body for an error message.
func snippet(b []byte) string {
	if len(b) > 512 {
		b = b[:512]
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
}

// close releases the idle connections of the client's own HTTP client.
func (c *client) close() error {
	if c.own != nil {
		c.own.CloseIdleConnections()
	}
	return nil
}

// Price is what a model costs, in US dollars per million tokens.
type Price = evalrun.Price

// validatePrice reports a price that is not a finite non-negative number
// as a *[target.ConfigError] naming its key.
func validatePrice(p *Price) error {
	if p == nil {
		return nil
	}
	if key, err := p.Check(); err != nil {
		return &target.ConfigError{Key: "price." + key, Err: err}
	}
	return nil
}

// usage builds a Usage from reported token counts, with the cost when a
// price is known. in and out are nil when not reported.
func usage(in, out *int64, p *Price) evalrun.Usage {
	u := evalrun.Usage{InputTokens: in, OutputTokens: out}
	if p != nil && (in != nil || out != nil) {
		var i, o int64
		if in != nil {
			i = *in
		}
		if out != nil {
			o = *out
		}
		u.CostUSD = evalrun.Float64(p.Cost(i, o))
	}
	return u
}
