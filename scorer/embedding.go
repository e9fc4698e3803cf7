package scorer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/retry"
)

// EmbeddingSimilarityOptions configure [NewEmbeddingSimilarity].
type EmbeddingSimilarityOptions struct {
	// Name defaults to "embedding_similarity".
	Name string
	// Threshold defaults to [evalrun.DefaultThreshold].
	Threshold *float64
	// Embedder is the embedding model; required.
	Embedder evalrun.Embedder
	// Retry is applied to the embedder's transient errors. The zero value
	// tries once.
	Retry retry.Policy
}

// EmbeddingSimilarity scores the cosine similarity of the embeddings of the
// output's text and the expected output's text (see [evalrun.Text]),
// mapped to [0,1] by clamping: a negative cosine (opposed meaning) scores
// 0, and rounding above 1 scores 1. Identical texts score 1 without
// embedding the output; two empty texts score 1 and one empty text scores
// 0, without calling the embedder.
//
// The expected texts' embeddings are cached for the scorer's lifetime (one
// run: build a scorer per run), keyed by the text: concurrent requests for
// the same text share one embedder call, and a failed call is not cached.
// Transient embedder errors are retried under the Retry policy; a reply
// with the wrong number of vectors, a zero, empty or non-finite vector, or
// vectors of different dimensions is a permanent scorer error. An item with
// no expected output is a scorer error matching [ErrNoExpected]. Usage is
// the embedder usage this call caused. Safe for concurrent use when the
// embedder is.
type EmbeddingSimilarity struct {
	base
	embedder evalrun.Embedder
	retry    retry.Policy

	mu    sync.Mutex
	cache map[string]*embedCall // expected text → its embedding

	// waiting, when set (by tests), is called when a caller starts to
	// wait for another's call.
	waiting func()
}

// embedCall is one embedding of an expected text, done or in flight. vec
// and err are written before done is closed.
type embedCall struct {
	done chan struct{}
	vec  []float64
	err  error
}

var (
	_ evalrun.Scorer      = (*EmbeddingSimilarity)(nil)
	_ evalrun.Thresholder = (*EmbeddingSimilarity)(nil)
)

// NewEmbeddingSimilarity returns an embedding_similarity scorer. A missing
// embedder is a *[ConfigError].
func NewEmbeddingSimilarity(opts EmbeddingSimilarityOptions) (*EmbeddingSimilarity, error) {
	b, err := newBase(KindEmbeddingSimilarity, opts.Name, opts.Threshold)
	if err != nil {
		return nil, err
	}
	if opts.Embedder == nil {
		return nil, b.configError("model", errors.New("no embedder"))
	}
	return &EmbeddingSimilarity{base: b, embedder: opts.Embedder, retry: opts.Retry,
		cache: make(map[string]*embedCall)}, nil
}

func buildEmbeddingSimilarity(c Config, b base, d Deps) (evalrun.Scorer, error) {
	p, err := c.retryPolicy(d)
	if err != nil {
		return nil, err
	}
	if d.Embedder == nil {
		return nil, b.configError("model", errors.New("no embedding model provider is configured"))
	}
	mc, err := c.modelConfig()
	if err != nil {
		return nil, err
	}
	e, err := d.Embedder(mc)
	if err != nil {
		return nil, b.configError("model", err)
	}
	return NewEmbeddingSimilarity(EmbeddingSimilarityOptions{Name: b.name, Threshold: &b.threshold, Embedder: e, Retry: p})
}

// Score returns the clamped cosine similarity of output and expected.
func (s *EmbeddingSimilarity) Score(ctx context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	exp, err := expected(KindEmbeddingSimilarity, in)
	if err != nil {
		return evalrun.Score{}, err
	}
	o, e := text(in.Output), text(exp)
	switch {
	case o == e:
		return evalrun.Score{Value: 1, Reason: "output equals expected"}, nil
	case o == "":
		return evalrun.Score{Value: 0, Reason: "output is empty"}, nil
	case e == "":
		return evalrun.Score{Value: 0, Reason: "expected output is empty"}, nil
	}
	ev, usage, err := s.expectedVector(ctx, e)
	if err != nil {
		return evalrun.Score{}, withUsage(fmt.Errorf("embedding_similarity: expected output: %w", err), usage)
	}
	ov, u, err := s.embed(ctx, o)
	usage.Add(u)
	if err != nil {
		return evalrun.Score{}, withUsage(fmt.Errorf("embedding_similarity: output: %w", err), usage)
	}
	cos, err := cosine(ov, ev)
	if err != nil {
		return evalrun.Score{}, withUsage(evalrun.Permanent(fmt.Errorf("embedding_similarity: %w", err)), usage)
	}
	v := min(max(cos, 0), 1)
	return evalrun.Score{Value: v, Reason: fmt.Sprintf("cosine similarity %.4f", cos), Usage: usage}, nil
}

// expectedVector returns the embedding of an expected text from the cache,
// or embeds it, sharing one call among concurrent callers. The usage is
// non-zero only for the caller that made the call.
func (s *EmbeddingSimilarity) expectedVector(ctx context.Context, key string) ([]float64, evalrun.Usage, error) {
	for {
		s.mu.Lock()
		c, ok := s.cache[key]
		if !ok {
			c = &embedCall{done: make(chan struct{})}
			s.cache[key] = c
			s.mu.Unlock()
			return s.fill(ctx, key, c)
		}
		s.mu.Unlock()
		if s.waiting != nil {
			s.waiting()
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, evalrun.Usage{}, context.Cause(ctx)
		}
		if c.err == nil {
			return c.vec, evalrun.Usage{}, nil
		}
		// The caller that made the call was cancelled, and this one is
		// not: try again (the failed entry is gone).
		if ctx.Err() == nil && (errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded)) {
			continue
		}
		return nil, evalrun.Usage{}, c.err
	}
}

// errEmbedPanicked is what waiters see when the embedder panicked.
var errEmbedPanicked = errors.New("embedder panicked")

// fill embeds key into c, removing c from the cache when it fails (or
// panics) so that a later caller tries again.
func (s *EmbeddingSimilarity) fill(ctx context.Context, key string, c *embedCall) (vec []float64, usage evalrun.Usage, err error) {
	c.err = errEmbedPanicked
	defer func() {
		if c.err != nil {
			s.mu.Lock()
			if s.cache[key] == c {
				delete(s.cache, key)
			}
			s.mu.Unlock()
		}
		close(c.done)
	}()
	vec, usage, err = s.embed(ctx, key)
	c.vec, c.err = vec, err
	return vec, usage, err
}

// embed embeds one text under the retry policy and checks the vector.
func (s *EmbeddingSimilarity) embed(ctx context.Context, t string) ([]float64, evalrun.Usage, error) {
	var (
		usage evalrun.Usage
		vec   []float64
	)
	_, err := retry.Do(ctx, s.retry, func(ctx context.Context, _ int) error {
		vecs, u, err := s.embedder.Embed(ctx, []string{t})
		if err != nil && u.IsZero() {
			u = evalrun.UsageOf(err)
		}
		usage.Add(u)
		if err != nil {
			return err
		}
		if len(vecs) != 1 {
			return evalrun.Permanent(fmt.Errorf("embedder returned %d vectors for 1 text", len(vecs)))
		}
		vec = vecs[0]
		return nil
	})
	if err != nil {
		return nil, usage, err
	}
	var norm float64
	for _, x := range vec {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, usage, evalrun.Permanent(errors.New("embedder returned a non-finite vector"))
		}
		norm += x * x
	}
	if norm == 0 {
		return nil, usage, evalrun.Permanent(errors.New("embedder returned an empty or zero vector"))
	}
	return vec, usage, nil
}

// cosine returns the cosine similarity of two non-zero vectors.
func cosine(a, b []float64) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("embeddings have different dimensions (%d and %d)", len(a), len(b))
	}
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	cos := dot / (math.Sqrt(na) * math.Sqrt(nb))
	if math.IsNaN(cos) || math.IsInf(cos, 0) {
		return 0, errors.New("cosine similarity is not a number")
	}
	return cos, nil
}

// withUsage attaches usage to err, keeping its kind.
func withUsage(err error, usage evalrun.Usage) error {
	if usage.IsZero() {
		return err
	}
	var e *evalrun.Error
	if errors.As(err, &e) {
		return &evalrun.Error{Kind: e.Kind, StatusCode: e.StatusCode, RetryAfter: e.RetryAfter, Usage: usage, Err: err}
	}
	return err
}
