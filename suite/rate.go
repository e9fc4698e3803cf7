package suite

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/evalrun/evalrun"
)

// Rate is a request rate limit: N requests per Per.
type Rate struct {
	N   float64
	Per time.Duration
}

// ParseRate parses "N/s" or "N/m" (N > 0, e.g. 20/s, 600/m, 0.5/s).
func ParseRate(s string) (Rate, error) {
	num, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("invalid rate %q: want N/s or N/m", s)
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || n <= 0 || n != n || n > 1e9 {
		return Rate{}, fmt.Errorf("invalid rate %q: N must be a positive number", s)
	}
	var per time.Duration
	switch strings.TrimSpace(unit) {
	case "s", "sec", "second":
		per = time.Second
	case "m", "min", "minute":
		per = time.Minute
	default:
		return Rate{}, fmt.Errorf("invalid rate %q: the unit must be s or m", s)
	}
	return Rate{N: n, Per: per}, nil
}

// String returns the rate as ParseRate reads it.
func (r Rate) String() string {
	u := "s"
	if r.Per == time.Minute {
		u = "m"
	}
	return strconv.FormatFloat(r.N, 'f', -1, 64) + "/" + u
}

// limitedTarget waits for a token of its limiter before every call.
type limitedTarget struct {
	evalrun.Target
	lim *rate.Limiter
}

// newRateLimited wraps t so that calls start at most at rate r (no burst).
// Waiting honours the call's context: a cancelled wait is the context's
// error, transient when only the attempt's deadline ran out.
func newRateLimited(t evalrun.Target, r Rate) evalrun.Target {
	per := rate.Limit(r.N / r.Per.Seconds())
	return &limitedTarget{Target: t, lim: rate.NewLimiter(per, 1)}
}

// Execute waits for the limiter, then calls the wrapped target.
func (l *limitedTarget) Execute(ctx context.Context, item *evalrun.Item) (evalrun.Output, error) {
	if err := l.lim.Wait(ctx); err != nil {
		if ctx.Err() == context.Canceled {
			return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorCanceled, Err: context.Cause(ctx)}
		}
		return evalrun.Output{}, evalrun.Transient(fmt.Errorf("rate limit wait: %w", err))
	}
	return l.Target.Execute(ctx, item)
}
