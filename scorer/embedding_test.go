package scorer_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/retry"
	"github.com/evalrun/evalrun/scorer"
)

// fakeEmbedder returns fixed vectors and counts calls per text.
type fakeEmbedder struct {
	mu      sync.Mutex
	vectors map[string][]float64
	calls   map[string]int
	// errs are returned, in order, by the first calls for a text.
	errs map[string][]error
	// blockFirst makes the first call for that text wait for its ctx.
	blockFirst string
	blocked    chan struct{} // closed when that call is waiting
}

func newFakeEmbedder() *fakeEmbedder {
	return &fakeEmbedder{
		vectors: map[string][]float64{
			"cat":    {1, 0},
			"kitten": {0.8, 0.6},
			"dog":    {-1, 0},
			"stone":  {0, 1},
			"zero":   {0, 0},
			"3d":     {1, 0, 0},
			"nan":    {math.NaN(), 1},
		},
		calls:   map[string]int{},
		errs:    map[string][]error{},
		blocked: make(chan struct{}),
	}
}

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float64, evalrun.Usage, error) {
	if len(texts) != 1 {
		return nil, evalrun.Usage{}, fmt.Errorf("fake: %d texts", len(texts))
	}
	t := texts[0]
	f.mu.Lock()
	n := f.calls[t]
	f.calls[t]++
	var err error
	if n < len(f.errs[t]) {
		err = f.errs[t][n]
	}
	block := n == 0 && t == f.blockFirst
	f.mu.Unlock()
	if block {
		close(f.blocked)
		<-ctx.Done()
		return nil, evalrun.Usage{}, ctx.Err()
	}
	if err != nil {
		return nil, evalrun.Usage{}, err
	}
	v, ok := f.vectors[t]
	if !ok {
		v = []float64{0.5, 0.5}
	}
	return [][]float64{v}, tokens(int64(len(t)), 0), nil
}

func (f *fakeEmbedder) count(text string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[text]
}

func newEmbedding(t *testing.T, e evalrun.Embedder, p retry.Policy) *scorer.EmbeddingSimilarity {
	t.Helper()
	s, err := scorer.NewEmbeddingSimilarity(scorer.EmbeddingSimilarityOptions{Embedder: e, Retry: p})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEmbeddingSimilarity(t *testing.T) {
	t.Parallel()
	s := newEmbedding(t, newFakeEmbedder(), retry.Policy{})
	runCases(t, s, []scoreCase{
		{name: "similar", output: `"kitten"`, expected: `"cat"`, want: 0.8},
		{name: "orthogonal", output: `"stone"`, expected: `"cat"`, want: 0},
		{name: "opposed clamps to 0", output: `"dog"`, expected: `"cat"`, want: 0},
		{name: "identical text", output: `"cat"`, expected: `"cat"`, want: 1},
		{name: "both empty", output: `""`, expected: `""`, want: 1},
		{name: "empty output", output: ``, expected: `"cat"`, want: 0},
		{name: "empty expected", output: `"cat"`, expected: `""`, want: 0},
		{name: "zero vector", output: `"zero"`, expected: `"cat"`, wantKind: evalrun.ErrorPermanent},
		{name: "NaN vector", output: `"nan"`, expected: `"cat"`, wantKind: evalrun.ErrorPermanent},
		{name: "dimension mismatch", output: `"3d"`, expected: `"cat"`, wantKind: evalrun.ErrorPermanent},
		{name: "no expected", output: `"cat"`, wantKind: evalrun.ErrorPermanent, wantIs: scorer.ErrNoExpected},
	})
}

func TestEmbeddingSimilarityNoCallsForTrivialCases(t *testing.T) {
	t.Parallel()
	e := newFakeEmbedder()
	s := newEmbedding(t, e, retry.Policy{})
	for _, out := range []string{`"cat"`, ``} {
		if _, err := s.Score(t.Context(), input("q1", `1`, out, `"cat"`)); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.count("cat") + e.count(""); n != 0 {
		t.Errorf("%d embedder calls, want 0", n)
	}
}

func TestEmbeddingSimilarityCachesExpected(t *testing.T) {
	t.Parallel()
	e := newFakeEmbedder()
	s := newEmbedding(t, e, retry.Policy{})
	const n = 64
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		expUsage int64 // input tokens charged for "cat" (3 each)
	)
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			out := fmt.Sprintf(`"answer %d"`, i%8)
			got, err := s.Score(t.Context(), input(fmt.Sprint(i), `1`, out, `"cat"`))
			if err == nil && math.Abs(got.Value-math.Sqrt(0.5)) > 1e-9 {
				err = fmt.Errorf("item %d: Score = %v", i, got.Value)
			}
			if err == nil && got.Usage.InputTokens != nil {
				mu.Lock()
				expUsage += *got.Usage.InputTokens - int64(len(fmt.Sprintf("answer %d", i%8)))
				mu.Unlock()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if c := e.count("cat"); c != 1 {
		t.Errorf("expected text embedded %d times, want 1", c)
	}
	if c := e.count("answer 0"); c != n/8 {
		t.Errorf("output embedded %d times, want %d (outputs are not cached)", c, n/8)
	}
	if expUsage != 3 {
		t.Errorf("expected text's usage charged %d tokens in all, want 3 (once)", expUsage)
	}
}

func TestEmbeddingSimilarityErrorsAreNotCached(t *testing.T) {
	t.Parallel()
	e := newFakeEmbedder()
	e.errs["cat"] = []error{evalrun.Permanent(errors.New("bad request"))}
	s := newEmbedding(t, e, retry.Policy{})
	if _, err := s.Score(t.Context(), input("q1", `1`, `"kitten"`, `"cat"`)); evalrun.KindOf(err) != evalrun.ErrorPermanent {
		t.Fatalf("first score: error %v, want permanent", err)
	}
	got, err := s.Score(t.Context(), input("q2", `1`, `"kitten"`, `"cat"`))
	if err != nil || math.Abs(got.Value-0.8) > 1e-9 {
		t.Fatalf("second score = %v, %v; want 0.8", got.Value, err)
	}
	if c := e.count("cat"); c != 2 {
		t.Errorf("expected text embedded %d times, want 2", c)
	}
}

func TestEmbeddingSimilarityRetriesTransient(t *testing.T) {
	t.Parallel()
	e := newFakeEmbedder()
	e.errs["cat"] = []error{evalrun.Transient(errors.New("reset"))}
	e.errs["kitten"] = []error{evalrun.Transient(errors.New("reset")), evalrun.Transient(errors.New("reset"))}
	s := newEmbedding(t, e, retry.Policy{MaxRetries: 2})
	got, err := s.Score(t.Context(), input("q1", `1`, `"kitten"`, `"cat"`))
	if err != nil || math.Abs(got.Value-0.8) > 1e-9 {
		t.Fatalf("Score = %v, %v; want 0.8", got.Value, err)
	}
	if e.count("cat") != 2 || e.count("kitten") != 3 {
		t.Errorf("calls: cat %d, kitten %d; want 2 and 3", e.count("cat"), e.count("kitten"))
	}
}

func TestEmbeddingSimilarityWaiterOutlivesCanceledCaller(t *testing.T) {
	t.Parallel()
	e := newFakeEmbedder()
	e.blockFirst = "cat"
	s := newEmbedding(t, e, retry.Policy{})
	waiting := make(chan struct{}, 1)
	scorer.SetWaitingHook(s, func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan error, 1)
	go func() {
		_, err := s.Score(ctx, input("q1", `1`, `"kitten"`, `"cat"`))
		first <- err
	}()
	<-e.blocked // the first caller's call is in flight
	second := make(chan error, 1)
	var got evalrun.Score
	go func() {
		var err error
		got, err = s.Score(t.Context(), input("q2", `1`, `"kitten"`, `"cat"`))
		second <- err
	}()
	<-waiting // the other caller waits for the first one's call
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("canceled caller: %v, want context.Canceled", err)
	}
	if err := <-second; err != nil || math.Abs(got.Value-0.8) > 1e-9 {
		t.Errorf("other caller: %v, %v; want 0.8", got.Value, err)
	}
	if c := e.count("cat"); c != 2 {
		t.Errorf("expected text embedded %d times, want 2 (the canceled call and the other caller's)", c)
	}
}
