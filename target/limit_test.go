package target

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/evalrun/evalrun"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  Rate
		limit rate.Limit
	}{
		{"20/s", Rate{20, time.Second}, 20},
		{"600/m", Rate{600, time.Minute}, 10},
		{" 30 / min ", Rate{30, time.Minute}, 0.5},
		{"0.5/sec", Rate{0.5, time.Second}, 0.5},
		{"3600/h", Rate{3600, time.Hour}, 1},
		{"", Rate{}, rate.Inf},
	} {
		got, err := ParseRate(tc.in)
		if err != nil || got != tc.want || got.Limit() != tc.limit {
			t.Errorf("ParseRate(%q) = %v (limit %v), %v; want %v (limit %v)", tc.in, got, got.Limit(), err, tc.want, tc.limit)
		}
	}
	for _, bad := range []string{"20", "20/d", "x/s", "-1/s", "0/s", "NaN/s", "Inf/s", "/s"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
	var r Rate
	if err := r.UnmarshalText([]byte("600/m")); err != nil || r.String() != "600/m" {
		t.Errorf("UnmarshalText/String round trip: %v %q", err, r.String())
	}
}

// TestLimiterSpacesRequests checks the waits a limiter asks for, on a
// frozen fake clock: 600/m is one call every 100 ms.
func TestLimiterSpacesRequests(t *testing.T) {
	clock := newFakeClock()
	r, _ := ParseRate("600/m")
	lim, err := NewLimiter(Limits{Requests: r, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := lim.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
	got := clock.Waits()
	if len(got) != len(want) {
		t.Fatalf("waits = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("waits = %v, want %v", got, want)
			break
		}
	}
}

func TestLimiterChargesTokensAfterTheCall(t *testing.T) {
	clock := newFakeClock()
	lim, err := NewLimiter(Limits{TokensPerMinute: 600, Clock: clock}) // 10 tokens/s
	if err != nil {
		t.Fatal(err)
	}
	big := evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) {
		return evalrun.Output{Value: evalrun.String("x"), Usage: evalrun.Usage{InputTokens: evalrun.Int64(550), OutputTokens: evalrun.Int64(70)}}, nil
	})
	tgt := RateLimited(big, lim)
	if _, err := tgt.Execute(context.Background(), testItem); err != nil {
		t.Fatal(err)
	}
	if w := clock.Waits(); len(w) != 0 {
		t.Fatalf("first call waited %v; the budget was full", w)
	}
	// 620 tokens charged against a 600 budget (capped at 600): the next call
	// waits for the debt plus its own token, 1 token = 100 ms.
	if _, err := tgt.Execute(context.Background(), testItem); err != nil {
		t.Fatal(err)
	}
	if w := clock.Waits(); len(w) != 1 || w[0] != 100*time.Millisecond {
		t.Errorf("waits = %v, want [100ms]", w)
	}
}

func TestLimiterWaitHonoursContext(t *testing.T) {
	r, _ := ParseRate("1/h")
	lim, _ := NewLimiter(Limits{Requests: r})
	if err := lim.Wait(context.Background()); err != nil { // takes the burst
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := lim.Wait(ctx)
	wantKind(t, err, evalrun.ErrorCanceled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not wrap context.Canceled", err)
	}
	var nilLim *Limiter
	if err := nilLim.Wait(ctx); err != nil {
		t.Errorf("nil limiter waited: %v", err)
	}
}

func TestNewLimiterValidates(t *testing.T) {
	for key, l := range map[string]Limits{"burst": {Burst: -1}, "tokens_per_minute": {TokensPerMinute: -5}} {
		_, err := NewLimiter(l)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("NewLimiter(%+v) = %v, want a ConfigError for %q", l, err, key)
		}
	}
}

// TestRateLimitedHoldsRateAgainstServer sends requests from many
// goroutines through a 20/s limiter to a server that counts arrivals per
// 250 ms window. The limiter allows at most 1 + 250ms×20/s = 6 per window;
// the assertion allows 2 more for scheduling jitter between the limiter's
// grant and the server's arrival. Without a limiter all 16 land in one
// window. Only upper bounds are asserted, so a slow machine cannot fail it.
func TestRateLimitedHoldsRateAgainstServer(t *testing.T) {
	const (
		requests = 16
		workers  = 8
		window   = 250 * time.Millisecond
		perRate  = 20 // per second
		maxPer   = 1 + perRate*window/time.Second + 2
	)
	var mu sync.Mutex
	var arrivals []time.Time
	srv := newSequenceServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		reply(200, `{"ok":true}`)(w, r)
	})
	r, _ := ParseRate("20/s")
	lim, err := NewLimiter(Limits{Requests: r})
	if err != nil {
		t.Fatal(err)
	}
	tgt := RateLimited(newHTTPTarget(t, HTTPConfig{URL: srv.URL}), lim)

	start := time.Now()
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range jobs {
				if _, err := tgt.Execute(context.Background(), testItem); err != nil {
					t.Errorf("Execute: %v", err)
				}
			}
		})
	}
	for range requests {
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)

	if len(arrivals) != requests {
		t.Fatalf("server saw %d requests, want %d", len(arrivals), requests)
	}
	first := arrivals[0]
	for _, a := range arrivals {
		if a.Before(first) {
			first = a
		}
	}
	counts := map[int]int{}
	for _, a := range arrivals {
		counts[int(a.Sub(first)/window)]++
	}
	for w, n := range counts {
		if n > int(maxPer) {
			t.Errorf("window %d got %d requests, want at most %d (counts %v)", w, n, maxPer, counts)
		}
	}
	// The limiter grants the last of 16 calls 15 intervals after the first.
	if min := (requests - 1) * time.Second / perRate; elapsed < min {
		t.Errorf("16 requests took %v, less than the %v the rate allows", elapsed, min)
	}
}
