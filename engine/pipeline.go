package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"go.opentelemetry.io/otel/trace"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/cache"
	"github.com/evalrun/evalrun/internal/tracing"
	"github.com/evalrun/evalrun/retry"
)

// ErrItemTimeout is the cancellation cause of an item whose ItemTimeout
// expired.
var ErrItemTimeout = errors.New("item timeout")

// errAttemptTimeout is the cancellation cause of one attempt whose
// AttemptTimeout expired; it becomes a transient error.
var errAttemptTimeout = errors.New("attempt timeout")

// Pipeline processes one item: execute the target with deadline and
// retries, then run every scorer in parallel. [Run] uses it for each item;
// the distributed worker uses it for the one item of a job. A Pipeline is
// safe for concurrent use.
type Pipeline struct {
	target     evalrun.Target
	scorers    []evalrun.Scorer
	thresholds []float64
	opts       Options
	policy     retry.Policy
	limit      *adaptiveLimit // nil when concurrency is fixed
	// call: the target's attempts are each one model call, traced as
	// that call's span (tracing.CallTarget); nil for plain attempt spans.
	call *tracing.Call
}

// NewPipeline checks the target and scorers (a nil one, an empty or
// duplicate scorer name is an ErrInvalid error) and returns a pipeline.
func NewPipeline(target evalrun.Target, scorers []evalrun.Scorer, opts Options) (*Pipeline, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if target == nil {
		return nil, fmt.Errorf("%w: no target", evalrun.ErrInvalid)
	}
	seen := make(map[string]bool, len(scorers))
	thresholds := make([]float64, len(scorers))
	for i, s := range scorers {
		if s == nil {
			return nil, fmt.Errorf("%w: scorer %d is nil", evalrun.ErrInvalid, i)
		}
		name := s.Name()
		if name == "" {
			return nil, fmt.Errorf("%w: scorer %d has no name", evalrun.ErrInvalid, i)
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: two scorers are named %q; give each a unique name", evalrun.ErrInvalid, name)
		}
		seen[name] = true
		thresholds[i] = evalrun.ThresholdOf(s)
	}
	var limit *adaptiveLimit
	if !opts.FixedConcurrency {
		limit = newAdaptiveLimit(opts.Concurrency)
	}
	return &Pipeline{
		call:       tracing.AttemptCallOf(target),
		limit:      limit,
		target:     target,
		scorers:    scorers,
		thresholds: thresholds,
		opts:       opts,
		policy: retry.Policy{
			MaxRetries: opts.MaxRetries,
			Delay:      opts.RetryDelay,
			Clock:      opts.Clock,
			Jitter:     opts.Jitter,
		},
	}, nil
}

// Concurrency returns the effective concurrency: the adaptive cap on
// target calls in flight now, or the configured one when it is fixed.
func (p *Pipeline) Concurrency() int {
	if p.limit == nil {
		return p.opts.Concurrency
	}
	return p.limit.current()
}

// SettledConcurrency returns the cap under which most target calls
// started (the configured concurrency when it is fixed).
func (p *Pipeline) SettledConcurrency() int {
	if p.limit == nil {
		return p.opts.Concurrency
	}
	return p.limit.settled()
}

// Scorers returns the pipeline's scorers in order.
func (p *Pipeline) Scorers() []evalrun.Scorer { return p.scorers }

// Process executes and scores one item. It always returns a result. When
// ctx was cancelled before or during the item, the result's ErrorKind is
// evalrun.ErrorCanceled: the item counts as skipped and must not be stored.
//
// Inside a traced run (ctx carries the run's span, or a distributed run's
// span context) the item gets a span, a child of it, with children per
// target attempt and per scorer; see docs/observability.md. A result whose
// target named no trace of its own then carries the item span's trace id.
func (p *Pipeline) Process(ctx context.Context, runID string, item *evalrun.Item, index, repeat int) *evalrun.ItemResult {
	ctx, span := tracing.Start(ctx, tracing.SpanItem, trace.SpanKindInternal)
	res := p.process(ctx, runID, item, index, repeat)
	if span.IsRecording() {
		if res.TraceID == "" && res.ErrorKind != evalrun.ErrorCanceled {
			res.TraceID = span.SpanContext().TraceID().String()
		}
		tracing.DescribeItem(span, res)
	}
	span.End()
	return res
}

// process is Process within the item's span.
func (p *Pipeline) process(ctx context.Context, runID string, item *evalrun.Item, index, repeat int) *evalrun.ItemResult {
	clock := p.opts.Clock
	res := &evalrun.ItemResult{
		RunID:     runID,
		Index:     index,
		Repeat:    repeat,
		ItemID:    item.ID,
		Item:      item,
		StartedAt: clock.Now(),
	}
	if ctx.Err() != nil {
		res.Error, res.ErrorKind = "run canceled before the item started", evalrun.ErrorCanceled
		return res
	}

	if p.opts.Cache != nil && p.fromCache(ctx, res, item) {
		return p.scoreResult(ctx, res, item)
	}

	itemCtx := ctx
	if p.opts.ItemTimeout > 0 {
		var cancel context.CancelFunc
		itemCtx, cancel = context.WithTimeoutCause(ctx, p.opts.ItemTimeout, ErrItemTimeout)
		defer cancel()
	}

	var out evalrun.Output
	var failedTrajectory *evalrun.Trajectory
	attempts, err := retry.Do(itemCtx, p.policy, func(actx context.Context, n int) error {
		actx, span := tracing.StartAttempt(actx, p.call, n+1)
		o, err := p.attempt(actx, item)
		// A failed attempt's spend still counts. (UsageOf only on an
		// error: its errors.As allocates.)
		used := o.Usage
		if err != nil {
			if u := evalrun.UsageOf(err); !u.IsZero() {
				used = u
			}
		}
		span.End(used, err)
		res.Usage.Add(used)
		if err != nil {
			// The last failed attempt's trajectory (an agent that looped
			// past max_steps, a call no mock answers) is the one a failed
			// item shows.
			failedTrajectory = evalrun.TrajectoryOf(err)
			return err
		}
		out = o
		return nil
	})
	res.Attempts = attempts
	res.RetryCount = max(attempts-1, 0)
	res.CompletedAt = clock.Now()
	res.Latency = res.CompletedAt.Sub(res.StartedAt)
	if _, replayed := p.target.(evalrun.Replayer); replayed {
		res.Latency = 0 // not measured: see evalrun.Replayer
	}

	if err != nil {
		switch {
		case ctx.Err() != nil:
			res.Error, res.ErrorKind = "canceled: "+context.Cause(ctx).Error(), evalrun.ErrorCanceled
		case errors.Is(context.Cause(itemCtx), ErrItemTimeout):
			res.Error = fmt.Sprintf("item timed out after %s (%d attempt%s)", p.opts.ItemTimeout, attempts, plural(attempts))
			res.ErrorKind = evalrun.ErrorTimeout
		default:
			res.Error, res.ErrorKind = err.Error(), evalrun.KindOf(err)
		}
		if res.ErrorKind != evalrun.ErrorCanceled {
			res.Trajectory = failedTrajectory
		}
		return res
	}
	res.Output = out.Value
	res.TraceID = out.TraceID
	// The trajectory is the successful attempt's alone: a retried agent
	// starts its conversation again, so earlier attempts' calls are not
	// part of the answer scored.
	res.Trajectory = out.Trajectory
	if p.opts.Cache != nil {
		p.toCache(ctx, item, repeat, out)
	}

	return p.scoreResult(ctx, res, item)
}

// scoreResult scores res.Output with every scorer. When the run's ctx is
// cancelled before they all finish, the result becomes a skipped one
// (ErrorCanceled, no output), so that a resume runs the item again.
func (p *Pipeline) scoreResult(ctx context.Context, res *evalrun.ItemResult, item *evalrun.Item) *evalrun.ItemResult {
	if len(p.scorers) == 0 {
		return res
	}
	scores, cut := p.score(ctx, item, res.Output, res.Trajectory)
	if cut {
		res.Output, res.Trajectory, res.CacheHit = nil, nil, false
		res.Error, res.ErrorKind = "canceled while scoring: "+context.Cause(ctx).Error(), evalrun.ErrorCanceled
		return res
	}
	res.Scores = scores
	return res
}

// fromCache fills res from the response cache and reports a hit.
func (p *Pipeline) fromCache(ctx context.Context, res *evalrun.ItemResult, item *evalrun.Item) bool {
	b, ok, err := p.opts.Cache.GetCached(ctx, cache.TargetKey(p.opts.CacheKey, item, res.Repeat))
	if err != nil {
		p.opts.Logger.Warn("response cache lookup failed; calling the target", "item", item.ID, "err", err)
		return false
	}
	var e cache.Entry
	if !ok || json.Unmarshal(b, &e) != nil || len(e.Output) == 0 {
		return false
	}
	res.Output, res.TraceID, res.Trajectory, res.CacheHit = e.Output, e.TraceID, e.Trajectory, true
	res.CompletedAt = p.opts.Clock.Now()
	res.Latency = res.CompletedAt.Sub(res.StartedAt)
	return true
}

// toCache stores a successful output; a failure to store is only logged.
func (p *Pipeline) toCache(ctx context.Context, item *evalrun.Item, repeat int, out evalrun.Output) {
	b, err := json.Marshal(cache.Entry{Output: out.Value, TraceID: out.TraceID, Trajectory: out.Trajectory})
	if err == nil {
		err = p.opts.Cache.PutCached(context.WithoutCancel(ctx), cache.TargetKey(p.opts.CacheKey, item, repeat), b, p.opts.CacheTTL)
	}
	if err != nil {
		p.opts.Logger.Warn("response cache store failed", "item", item.ID, "err", err)
	}
}

// attempt makes one target call bounded by ctx (and AttemptTimeout). The
// call runs in its own goroutine so that the deadline holds even when the
// target ignores its context: the engine stops waiting and the goroutine is
// left to finish on its own. A panic becomes an ErrorPanic error.
func (p *Pipeline) attempt(ctx context.Context, item *evalrun.Item) (evalrun.Output, error) {
	actx := ctx
	if p.opts.AttemptTimeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeoutCause(ctx, p.opts.AttemptTimeout, errAttemptTimeout)
		defer cancel()
	}
	type result struct {
		out evalrun.Output
		err error
	}
	// An agent publishes its trajectory as it goes, so that an attempt
	// the deadline ends still shows what the agent did.
	sink := &evalrun.TrajectorySink{}
	actx = evalrun.WithTrajectorySink(actx, sink)
	level, err := p.limit.acquire(actx)
	if err != nil {
		return evalrun.Output{}, err
	}
	var r result
	defer func() { p.limit.release(level, r.err) }()
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				p.opts.Logger.Error("target panicked", "item", item.ID, "panic", r)
				done <- result{err: &evalrun.Error{Kind: evalrun.ErrorPanic, Err: fmt.Errorf("target panicked: %v", r)}}
			}
		}()
		o, err := p.target.Execute(actx, item)
		done <- result{o, err}
	}()

	select {
	case r = <-done:
	case <-actx.Done():
		select {
		case r = <-done: // finished at the same moment: keep its answer
		default:
			r.err = context.Cause(actx)
			if t := sink.Last(); t != nil {
				r.err = &evalrun.Error{Kind: evalrun.KindOf(r.err), Err: r.err, Trajectory: t}
			}
		}
	}
	if r.err == nil && len(r.out.Value) == 0 {
		r.err = &evalrun.Error{Kind: evalrun.ErrorInvalidOutput, Err: errors.New("target returned neither output nor error")}
	}
	if r.err != nil && errors.Is(context.Cause(actx), errAttemptTimeout) && ctx.Err() == nil {
		// This attempt ran out of time but the item has time left: retry.
		r.err = &evalrun.Error{Kind: evalrun.ErrorTransient, Usage: evalrun.UsageOf(r.err), Trajectory: evalrun.TrajectoryOf(r.err),
			Err: fmt.Errorf("attempt timed out after %s", p.opts.AttemptTimeout)}
	}
	return r.out, r.err
}

// score runs every scorer in its own goroutine and waits for all of them,
// or for ctx (and ItemTimeout) to end. cut reports that the run's ctx was
// cancelled before every scorer finished.
func (p *Pipeline) score(ctx context.Context, item *evalrun.Item, output []byte, traj *evalrun.Trajectory) (scores []evalrun.ScorerResult, cut bool) {
	sctx := ctx
	if p.opts.ItemTimeout > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeoutCause(ctx, p.opts.ItemTimeout, ErrItemTimeout)
		defer cancel()
	}
	type indexed struct {
		i int
		r evalrun.ScorerResult
	}
	in := evalrun.ScoreInput{Item: item, Output: output, Trajectory: traj}
	done := make(chan indexed, len(p.scorers))
	for i := range p.scorers {
		// The span starts here, not in the scorer's goroutine: starting
		// one is deep enough to grow a fresh goroutine's stack, which
		// was a quarter of the CPU of tracing an item.
		ctx, span := tracing.Start(sctx, tracing.SpanScore, trace.SpanKindInternal)
		go func() { done <- indexed{i, p.scoreOne(ctx, span, i, in)} }()
	}
	scores = make([]evalrun.ScorerResult, len(p.scorers))
	finished := make([]bool, len(p.scorers))
	for n := 0; n < len(p.scorers); n++ {
		select {
		case d := <-done:
			scores[d.i], finished[d.i] = d.r, true
		case <-sctx.Done():
			if ctx.Err() != nil {
				return nil, true
			}
			for i, ok := range finished {
				if !ok {
					scores[i] = evalrun.ScorerResult{
						Scorer:    p.scorers[i].Name(),
						Error:     fmt.Sprintf("scorer timed out after %s", p.opts.ItemTimeout),
						ErrorKind: evalrun.ErrorTimeout,
					}
				}
			}
			return scores, false
		}
	}
	return scores, false
}

// scoreOne runs scorer i, turning a panic, an error, a NaN or a value
// outside [0,1] into that scorer's error, and ends its span.
func (p *Pipeline) scoreOne(ctx context.Context, span trace.Span, i int, in evalrun.ScoreInput) (r evalrun.ScorerResult) {
	s := p.scorers[i]
	r.Scorer = s.Name()
	defer func() {
		if v := recover(); v != nil {
			p.opts.Logger.Error("scorer panicked", "scorer", r.Scorer, "item", in.Item.ID, "panic", v)
			r = evalrun.ScorerResult{Scorer: s.Name(), Error: fmt.Sprintf("scorer panicked: %v", v), ErrorKind: evalrun.ErrorPanic}
		}
		tracing.DescribeScore(span, &r)
		span.End()
	}()
	sc, err := s.Score(ctx, in)
	r.Usage = sc.Usage
	if err != nil {
		if u := evalrun.UsageOf(err); !u.IsZero() {
			r.Usage = u
		}
		r.Error, r.ErrorKind = err.Error(), evalrun.KindOf(err)
		return r
	}
	if math.IsNaN(sc.Value) || sc.Value < 0 || sc.Value > 1 {
		r.Error = fmt.Sprintf("score %v is not a number in [0,1]", sc.Value)
		r.ErrorKind = evalrun.ErrorInvalidOutput
		return r
	}
	v := sc.Value
	r.Score = &v
	r.Passed = v >= p.thresholds[i]
	r.Reason = sc.Reason
	return r
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
