package target

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/evalrun/evalrun"
)

// Rate is a number of events per period, written "20/s" or "600/m". The
// zero value means no limit.
type Rate struct {
	N   float64
	Per time.Duration
}

// ParseRate parses "N/s" or "N/m" (also "N/sec", "N/second", "N/min",
// "N/minute", "N/h"); N is a positive number. "" gives the zero Rate.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Rate{}, nil
	}
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("rate %q: want N/s or N/m", s)
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || !(n > 0) || math.IsInf(n, 0) {
		return Rate{}, fmt.Errorf("rate %q: %q is not a positive number", s, num)
	}
	var per time.Duration
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "s", "sec", "second":
		per = time.Second
	case "m", "min", "minute":
		per = time.Minute
	case "h", "hour":
		per = time.Hour
	default:
		return Rate{}, fmt.Errorf("rate %q: unit %q is not s or m", s, unit)
	}
	return Rate{N: n, Per: per}, nil
}

// UnmarshalText parses a rate as [ParseRate] does, so a Rate can be read
// from YAML or JSON directly.
func (r *Rate) UnmarshalText(b []byte) error {
	v, err := ParseRate(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// MarshalText writes the rate as [Rate.String] does.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// String returns the rate as "N/s", "N/m" or "N/h", or "" for no limit.
func (r Rate) String() string {
	if r.IsZero() {
		return ""
	}
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per]
	if unit == "" {
		return strconv.FormatFloat(r.N/r.Per.Seconds(), 'g', -1, 64) + "/s"
	}
	return strconv.FormatFloat(r.N, 'g', -1, 64) + "/" + unit
}

// IsZero reports whether r means no limit.
func (r Rate) IsZero() bool { return r.N <= 0 || r.Per <= 0 }

// Limit returns r as a rate.Limit (events per second); rate.Inf for the
// zero Rate.
func (r Rate) Limit() rate.Limit {
	if r.IsZero() {
		return rate.Inf
	}
	return rate.Limit(r.N / r.Per.Seconds())
}

// Limits configures a [Limiter]. The zero value limits nothing.
type Limits struct {
	// Requests caps calls, e.g. "20/s" or "600/m".
	Requests Rate `yaml:"rate_limit" json:"rate_limit,omitzero"`
	// Burst is how many calls may start at once; default 1, so calls are
	// evenly spaced.
	Burst int `yaml:"burst" json:"burst,omitempty"`
	// TokensPerMinute caps the input plus output tokens that calls report
	// in their usage. Tokens are charged after each call (they are not
	// known before): a call that used many tokens delays the next ones.
	TokensPerMinute int64 `yaml:"tokens_per_minute" json:"tokens_per_minute,omitempty"`
	// Clock is used for waiting; nil means evalrun.SystemClock.
	Clock evalrun.Clock `yaml:"-" json:"-"`
}

// Limiter applies [Limits] to calls, with golang.org/x/time/rate token
// buckets. One Limiter is shared by everything that should share the
// limit (all items of a target; every call of a judge model). It is safe
// for concurrent use; a nil *Limiter limits nothing.
type Limiter struct {
	req   *rate.Limiter // nil: no request limit
	tok   *rate.Limiter // nil: no token limit
	clock evalrun.Clock
}

// NewLimiter returns a Limiter for l, or a *[ConfigError] for bad limits
// ("burst", "tokens_per_minute").
func NewLimiter(l Limits) (*Limiter, error) {
	if l.Burst < 0 {
		return nil, configErrorf("burst", "must not be negative, got %d", l.Burst)
	}
	if l.TokensPerMinute < 0 {
		return nil, configErrorf("tokens_per_minute", "must not be negative, got %d", l.TokensPerMinute)
	}
	lim := &Limiter{clock: l.Clock}
	if lim.clock == nil {
		lim.clock = evalrun.SystemClock
	}
	if !l.Requests.IsZero() {
		lim.req = rate.NewLimiter(l.Requests.Limit(), max(l.Burst, 1))
	}
	if l.TokensPerMinute > 0 {
		burst := int(min(l.TokensPerMinute, math.MaxInt32))
		lim.tok = rate.NewLimiter(rate.Limit(float64(l.TokensPerMinute)/60), burst)
	}
	return lim, nil
}

// Wait blocks until a call may start: a request slot is free and the token
// budget is not in debt. When ctx ends first it returns a classified error
// (canceled, or transient for a deadline) and gives the slot back.
func (l *Limiter) Wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	for _, rl := range []*rate.Limiter{l.req, l.tok} {
		if rl == nil {
			continue
		}
		now := l.clock.Now()
		r := rl.ReserveN(now, 1)
		if !r.OK() {
			return evalrun.Permanent(fmt.Errorf("rate limit: cannot reserve"))
		}
		d := r.DelayFrom(now)
		if d <= 0 {
			continue
		}
		select {
		case <-ctx.Done():
			r.CancelAt(l.clock.Now())
			return ClassifyTransport(fmt.Errorf("rate limit wait: %w", context.Cause(ctx)))
		case <-l.clock.After(d):
		}
	}
	return nil
}

// Charge debits the tokens u reports (input plus output) from the token
// budget; Wait already took one. It never blocks: a large charge delays
// later calls. A charge above one minute's budget is capped at it.
func (l *Limiter) Charge(u evalrun.Usage) {
	if l == nil || l.tok == nil {
		return
	}
	var n int64
	if u.InputTokens != nil {
		n += *u.InputTokens
	}
	if u.OutputTokens != nil {
		n += *u.OutputTokens
	}
	n = min(n, int64(l.tok.Burst())) - 1
	if n > 0 {
		l.tok.ReserveN(l.clock.Now(), int(n))
	}
}

// RateLimitedTarget is a target whose calls go through a [Limiter].
type RateLimitedTarget struct {
	t   evalrun.Target
	lim *Limiter
}

var (
	_ evalrun.Target    = (*RateLimitedTarget)(nil)
	_ evalrun.Closer    = (*RateLimitedTarget)(nil)
	_ evalrun.ChatModel = (*rateLimitedChat)(nil)
	_ evalrun.Embedder  = (*rateLimitedEmbedder)(nil)
)

// RateLimited returns t with every Execute waiting for lim first and the
// reported usage (of outputs and of errors) charged to it afterwards.
func RateLimited(t evalrun.Target, lim *Limiter) *RateLimitedTarget {
	return &RateLimitedTarget{t: t, lim: lim}
}

// Unwrap returns the target r limits (for what the engine looks up on a
// target, such as tracing.CallTarget).
func (r *RateLimitedTarget) Unwrap() evalrun.Target { return r.t }

// Execute waits for the limiter, then calls the target.
func (r *RateLimitedTarget) Execute(ctx context.Context, item *evalrun.Item) (evalrun.Output, error) {
	if err := r.lim.Wait(ctx); err != nil {
		return evalrun.Output{}, err
	}
	out, err := r.t.Execute(ctx, item)
	r.lim.Charge(out.Usage)
	if err != nil {
		r.lim.Charge(evalrun.UsageOf(err))
	}
	return out, err
}

// Close closes the wrapped target when it is an [evalrun.Closer].
func (r *RateLimitedTarget) Close() error {
	if c, ok := r.t.(evalrun.Closer); ok {
		return c.Close()
	}
	return nil
}

// RateLimitedChat returns m with every call waiting for lim and its usage
// charged to it, for an LLM judge's own limit.
func RateLimitedChat(m evalrun.ChatModel, lim *Limiter) evalrun.ChatModel {
	return &rateLimitedChat{m: m, lim: lim}
}

type rateLimitedChat struct {
	m   evalrun.ChatModel
	lim *Limiter
}

// Chat waits for the limiter, calls the model and charges its usage.
func (r *rateLimitedChat) Chat(ctx context.Context, req evalrun.ChatRequest) (evalrun.ChatResponse, error) {
	if err := r.lim.Wait(ctx); err != nil {
		return evalrun.ChatResponse{}, err
	}
	resp, err := r.m.Chat(ctx, req)
	r.lim.Charge(resp.Usage)
	if err != nil {
		r.lim.Charge(evalrun.UsageOf(err))
	}
	return resp, err
}

// RateLimitedEmbedder returns e with every call waiting for lim and its
// usage charged to it, for an embedding model's own limit.
func RateLimitedEmbedder(e evalrun.Embedder, lim *Limiter) evalrun.Embedder {
	return &rateLimitedEmbedder{e: e, lim: lim}
}

type rateLimitedEmbedder struct {
	e   evalrun.Embedder
	lim *Limiter
}

// Embed waits for the limiter, calls the embedder and charges its usage.
func (r *rateLimitedEmbedder) Embed(ctx context.Context, texts []string) ([][]float64, evalrun.Usage, error) {
	if err := r.lim.Wait(ctx); err != nil {
		return nil, evalrun.Usage{}, err
	}
	v, u, err := r.e.Embed(ctx, texts)
	r.lim.Charge(u)
	if err != nil {
		r.lim.Charge(evalrun.UsageOf(err))
	}
	return v, u, err
}
