package river

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/postgres"
	"github.com/evalrun/evalrun/postgres/pgtest"
	"github.com/evalrun/evalrun/target"
)

// TestMain turns the test binary into a worker process when asked to (see
// workerProcessMain); otherwise it runs the tests.
func TestMain(m *testing.M) {
	if os.Getenv(envWorker) != "" {
		os.Exit(workerProcessMain())
	}
	os.Exit(m.Run())
}

// fakeTarget is an httptest server standing in for a model endpoint. The
// request's input (a JSON string) says what to do:
//
//	"perm…"        400 (permanent)
//	"flaky…"       503 on the first two calls, then 200 (transient)
//	"down…"        503 always
//	"slow…"        200 once release is closed
//	anything else  200 after the configured latency
//
// A 200 answers {"answer": input}. It counts the calls per item id.
type fakeTarget struct {
	srv     *httptest.Server
	latency atomic.Int64 // nanoseconds
	// release holds "slow…" items until closed.
	release chan struct{}

	mu    sync.Mutex
	calls map[string]int
}

func newFakeTarget(t testing.TB, latency time.Duration) *fakeTarget {
	t.Helper()
	f := &fakeTarget{calls: make(map[string]int), release: make(chan struct{})}
	f.latency.Store(int64(latency))
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeTarget) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID    string `json:"id"`
		Input string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.calls[body.ID]++
	n := f.calls[body.ID]
	f.mu.Unlock()
	switch {
	case strings.HasPrefix(body.Input, "perm"):
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	case strings.HasPrefix(body.Input, "down"), strings.HasPrefix(body.Input, "flaky") && n <= 2:
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
		return
	}
	if strings.HasPrefix(body.Input, "slow") {
		select {
		case <-f.release:
		case <-r.Context().Done():
			return
		}
	}
	if d := time.Duration(f.latency.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"answer": body.Input})
}

// callsOf returns the number of calls for id.
func (f *fakeTarget) callsOf(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

// callsWithPrefix sums the calls of the item ids starting with p.
func (f *fakeTarget) callsWithPrefix(p string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for id, c := range f.calls {
		if strings.HasPrefix(id, p) {
			n += c
		}
	}
	return n
}

// runConfig is the run Config of the tests: what testBuilder rebuilds.
type runConfig struct {
	URL        string        `json:"url"`
	MaxRetries int           `json:"max_retries"`
	Repeat     int           `json:"repeat"`
	Strict     bool          `json:"strict"`
	Timeout    time.Duration `json:"item_timeout"`
}

// testBuilder rebuilds a run from its runConfig: an HTTP target, one
// exact-match scorer, the run's whole dataset version as items.
type testBuilder struct {
	store *postgres.Store
	// failBuilds makes the first n Build calls fail (infrastructure).
	failBuilds atomic.Int64
	builds     atomic.Int64
	// sel and pages configure the items' reader; wrap, when set, wraps
	// it.
	sel   engine.Selection
	pages engine.IndexedOptions
	wrap  func(*engine.IndexedItems) ItemIndex

	mu      sync.Mutex
	indexes []*engine.IndexedItems // every reader Items built
}

func (b *testBuilder) Build(_ context.Context, run *evalrun.Run) (evalrun.Target, []evalrun.Scorer, engine.Options, error) {
	b.builds.Add(1)
	if b.failBuilds.Add(-1) >= 0 {
		return nil, nil, engine.Options{}, errors.New("suite not available (test)")
	}
	var cfg runConfig
	if err := json.Unmarshal(run.Config, &cfg); err != nil {
		return nil, nil, engine.Options{}, err
	}
	tgt, err := target.NewHTTP(target.HTTPConfig{URL: cfg.URL, Output: "answer"})
	if err != nil {
		return nil, nil, engine.Options{}, err
	}
	return tgt, []evalrun.Scorer{exactScorer{}}, engine.Options{
		MaxRetries: cfg.MaxRetries, RetryDelay: -1, Repeat: cfg.Repeat, Strict: cfg.Strict, ItemTimeout: cfg.Timeout,
	}, nil
}

// Items reads the run's dataset version as a worker does, page by page
// (engine.NewIndexedItems with the builder's selection and page options);
func (b *testBuilder) Items(ctx context.Context, run *evalrun.Run) (ItemIndex, error) {
	idx, err := engine.NewIndexedItems(ctx, b.store, run.Dataset, run.DatasetVersion, b.sel, b.pages)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.indexes = append(b.indexes, idx)
	b.mu.Unlock()
	if b.wrap != nil {
		return b.wrap(idx), nil
	}
	return idx, nil
}

// exactScorer scores 1 when the output equals the expected output; it
// fails on items whose id starts with "scorerr".
type exactScorer struct{}

func (exactScorer) Name() string { return "exact" }

func (exactScorer) Score(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	if strings.HasPrefix(in.Item.ID, "scorerr") {
		return evalrun.Score{}, errors.New("grader unavailable (test)")
	}
	if string(in.Output) == string(in.Item.Expected) {
		return evalrun.Score{Value: 1}, nil
	}
	return evalrun.Score{Value: 0}, nil
}

// bundle is the state of one test: a fresh database, a store, a
// coordinator and a fake target.
type bundle struct {
	url    string
	store  *postgres.Store
	coord  *Coordinator
	target *fakeTarget
}

// setup creates the bundle; it checks for leaked goroutines at cleanup.
// Without TEST_DATABASE_URL the test is skipped.
func setup(t testing.TB, latency time.Duration) *bundle {
	t.Helper()
	pgtest.Require(t)
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	store, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	coord, err := NewCoordinator(ctx, store, CoordinatorOptions{PollInterval: 20 * time.Millisecond, SettleTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{url: url, store: store, coord: coord, target: newFakeTarget(t, latency)}
}

// importItems stores a dataset whose items have the given inputs (each its
// own id and expected output) and returns its items.
func (b *bundle) importItems(t testing.TB, name string, inputs []string) []*evalrun.Item {
	t.Helper()
	items := make([]*evalrun.Item, len(inputs))
	for i, in := range inputs {
		raw, _ := json.Marshal(in)
		items[i] = &evalrun.Item{ID: in, Input: raw, Expected: raw}
	}
	if _, _, err := b.store.ImportDataset(t.Context(), name, items); err != nil {
		t.Fatal(err)
	}
	return items
}

// enqueue enqueues a run of the dataset with the config.
func (b *bundle) enqueue(t testing.TB, dataset string, items []*evalrun.Item, cfg runConfig) *evalrun.Run {
	t.Helper()
	cfg.URL = b.target.srv.URL
	raw, _ := json.Marshal(cfg)
	tgt, err := target.NewHTTP(target.HTTPConfig{URL: cfg.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	rec, err := b.coord.Enqueue(t.Context(), engine.Spec{
		Run:     &evalrun.Run{Name: dataset, Dataset: dataset, DatasetVersion: 1, Target: evalrun.TargetInfo{Kind: "http"}, Config: raw},
		Items:   items,
		Target:  tgt,
		Scorers: []evalrun.Scorer{exactScorer{}},
		Options: engine.Options{Repeat: cfg.Repeat},
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// startWorker starts an in-process worker stopped at cleanup.
func (b *bundle) startWorker(t *testing.T, builder Builder, concurrency int) *Worker {
	t.Helper()
	return b.startWorkerWith(t, builder, WorkerOptions{Concurrency: concurrency})
}

// startWorkerWith starts an in-process worker with opts (fast fetching
// unless set) stopped at cleanup.
func (b *bundle) startWorkerWith(t *testing.T, builder Builder, opts WorkerOptions) *Worker {
	t.Helper()
	opts.testOnly = true
	if opts.FetchPollInterval == 0 {
		opts.FetchPollInterval = 100 * time.Millisecond
	}
	w, err := NewWorker(t.Context(), b.store, builder, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Errorf("stop worker: %v", err)
		}
	})
	return w
}

// waitFor polls cond every 20 ms until it holds, failing the test after
// timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %s", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// resultsAtLeast is a waitFor condition: the run has n results or more.
func (b *bundle) resultsAtLeast(runID string, n int) func() (bool, error) {
	return func() (bool, error) {
		ok, failed, err := b.store.CountResults(context.Background(), runID)
		return ok+failed >= n, err
	}
}

// jobStates counts the run's jobs by state and sums their attempts.
func (b *bundle) jobStates(t testing.TB, runID string) (states map[string]int, maxAttempt int) {
	t.Helper()
	rows, err := b.store.Pool().Query(t.Context(), `SELECT state::text, attempt FROM river_job WHERE args->>'run_id' = $1`, runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	states = map[string]int{}
	for rows.Next() {
		var s string
		var a int
		if err := rows.Scan(&s, &a); err != nil {
			t.Fatal(err)
		}
		states[s]++
		maxAttempt = max(maxAttempt, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return states, maxAttempt
}

// inputs returns n inputs "prefix-0" … "prefix-(n-1)".
func inputs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}
