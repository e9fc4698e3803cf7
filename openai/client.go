package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/internal/redact"
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

// client is what the package's types share: SDK options and error mapping.
type client struct {
	opts  []option.RequestOption
	max   int64
	clock evalrun.Clock
	own   *http.Client // closed by close
	// scrub knows the API key and the base URL's secrets, which an error
	// body (a 401 echoing the Authorization header) or a transport error
	// (printing the URL) may hold.
	scrub *redact.Scrubber
}

// newClient validates c and builds the SDK options. The SDK's services are
// built from these options alone (not oai.NewClient), so the SDK reads no
// OPENAI_* environment variables.
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
		// The header the SDK sends, which a server may echo encoded.
		cl.scrub.AddCredential("Bearer " + key)
	}
	cl.scrub.Add(redact.URLSecrets(c.BaseURL)...)
	if cl.max == 0 {
		cl.max = target.DefaultMaxResponseBytes
	}
	if cl.clock == nil {
		cl.clock = evalrun.SystemClock
	}
	hc := c.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		hc = &http.Client{Transport: tr}
		cl.own = hc
	}
	base := c.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	// The SDK resolves each endpoint against the base URL, which drops the
	// base's query (Azure's api-version, a gateway's key): it is sent as
	// query parameters of every request instead.
	base, query, _ := strings.Cut(base, "?")
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	cl.opts = []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	params, _ := url.ParseQuery(query) // checked by validate
	for k, vs := range params {
		for _, v := range vs {
			cl.opts = append(cl.opts, option.WithQueryAdd(k, v))
		}
	}
	if key != "" {
		cl.opts = append(cl.opts, option.WithAPIKey(key))
	}
	return cl, nil
}

// exchange records what one call's response was, for error mapping.
type exchange struct {
	status int
	header http.Header
	body   []byte
}

// callOptions returns the per-call options: a middleware that reads the
// body under the size cap, checks a 2xx body is valid UTF-8, and records
// the response in ex.
func (c *client) callOptions(ex *exchange) []option.RequestOption {
	return []option.RequestOption{option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if err != nil {
			return res, err
		}
		if res.ContentLength > c.max {
			_ = res.Body.Close()
			return nil, &evalrun.Error{Kind: evalrun.ErrorPermanent, StatusCode: res.StatusCode,
				Err: fmt.Errorf("%w: Content-Length %d exceeds %d bytes", target.ErrResponseTooLarge, res.ContentLength, c.max)}
		}
		body, err := target.ReadLimited(res.Body, c.max)
		_ = res.Body.Close()
		if err != nil {
			return nil, err
		}
		ex.status, ex.header, ex.body = res.StatusCode, res.Header, body
		if res.StatusCode >= 200 && res.StatusCode < 300 {
			if err := target.CheckUTF8(body); err != nil {
				return nil, err
			}
		}
		res.Body = io.NopCloser(bytes.NewReader(body))
		res.ContentLength = int64(len(body))
		return res, nil
	})}
}

// classify maps an SDK call's error to an *evalrun.Error.
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
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		cause := error(apiErr)
		if apiErr.Message != "" {
			cause = fmt.Errorf("%w: %s", apiErr, apiErr.Message)
		}
		return target.ClassifyStatus(apiErr.StatusCode, h, c.clock.Now(), c.scrub.Error(cause))
	}
	switch {
	case ex.status >= 200 && ex.status < 300:
		return malformed(ex.status, c.scrub.Error(err), evalrun.Usage{})
	case ex.status != 0:
		// An error status whose body the SDK could not parse.
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
