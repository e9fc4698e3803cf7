package river

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/evalrun/evalrun"
)

// gatedWriter is a resultWriter that records the result indexes of each
// call, tells entered when a call starts, and holds the first call until
// gate is closed. failFirst makes the first call fail.
type gatedWriter struct {
	entered   chan struct{}
	gate      chan struct{}
	failFirst error

	mu    sync.Mutex
	calls [][]int
}

func (g *gatedWriter) WriteResults(_ context.Context, results []*evalrun.ItemResult) error {
	idx := make([]int, len(results))
	for i, r := range results {
		idx[i] = r.Index
	}
	g.mu.Lock()
	g.calls = append(g.calls, idx)
	first := len(g.calls) == 1
	g.mu.Unlock()
	g.entered <- struct{}{}
	if first {
		<-g.gate
		return g.failFirst
	}
	return nil
}

func (g *gatedWriter) recorded() [][]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.calls)
}

// startBatchedWrites starts a write of result index i for each i, one at
// a time: each is queued before the next starts. The first finds the
// batcher idle and enters the store (it leads); the others wait for the
// lead. It returns the channel of their outcomes.
func startBatchedWrites(t *testing.T, b *resultBatcher, queued <-chan int, g *gatedWriter, indexes ...int) <-chan error {
	t.Helper()
	errs := make(chan error, len(indexes))
	for k, i := range indexes {
		go func() { errs <- b.write(context.Background(), &evalrun.ItemResult{RunID: "r", Index: i}) }()
		if k == 0 {
			<-g.entered // the leader is in the store, holding its batch of one
			<-queued
			continue
		}
		if n := <-queued; n != k {
			t.Fatalf("after result %d arrived, %d wait; want %d", i, n, k)
		}
	}
	return errs
}

// Results arriving while a write is under way are written together by
// the next store call, and each job gets the outcome of the call that
// carried its result.
func TestResultBatcherWritesResultsArrivingTogetherInOneCall(t *testing.T) {
	g := &gatedWriter{entered: make(chan struct{}, 8), gate: make(chan struct{})}
	queued := make(chan int, 8)
	var sizes []int
	b := &resultBatcher{store: g, queued: func(n int) { queued <- n }, wrote: func(n int) { sizes = append(sizes, n) }}

	errs := startBatchedWrites(t, b, queued, g, 0, 1, 2, 3, 4)
	select {
	case err := <-errs:
		t.Fatalf("a write returned (%v) before its result was stored", err)
	default:
	}
	close(g.gate)
	for range 5 {
		if err := <-errs; err != nil {
			t.Errorf("write: %v", err)
		}
	}
	if got, want := fmt.Sprint(g.recorded()), "[[0] [1 2 3 4]]"; got != want {
		t.Errorf("store calls = %s, want %s: the four results waiting in one call", got, want)
	}
	if fmt.Sprint(sizes) != "[1 4]" {
		t.Errorf("batch sizes reported = %v, want [1 4]", sizes)
	}
	// The batcher is idle again: the next result is written at once.
	if err := b.write(context.Background(), &evalrun.ItemResult{RunID: "r", Index: 5}); err != nil {
		t.Fatal(err)
	}
	if got := g.recorded(); len(got) != 3 || fmt.Sprint(got[2]) != "[5]" {
		t.Errorf("store calls = %v, want a third call with result 5 alone", got)
	}
}

// A failed store call fails the jobs of its batch only, with its error;
// the results that waited behind it are written by the next call.
func TestResultBatcherFailedCallFailsItsBatchOnly(t *testing.T) {
	refused := errors.New("disk full (test)")
	g := &gatedWriter{entered: make(chan struct{}, 8), gate: make(chan struct{}), failFirst: refused}
	queued := make(chan int, 8)
	b := &resultBatcher{store: g, queued: func(n int) { queued <- n }}

	errs := startBatchedWrites(t, b, queued, g, 0, 1, 2)
	close(g.gate)
	var failed, ok int
	for range 3 {
		switch err := <-errs; {
		case errors.Is(err, refused):
			failed++
		case err == nil:
			ok++
		default:
			t.Errorf("write: %v", err)
		}
	}
	if failed != 1 || ok != 2 {
		t.Errorf("%d writes failed and %d succeeded, want the first batch's one failed and the next batch's two stored", failed, ok)
	}
	if got := fmt.Sprint(g.recorded()); got != "[[0] [1 2]]" {
		t.Errorf("store calls = %s", got)
	}
}

// countingResults wraps the store of a worker: it counts the store calls
// and the results by key, and holds the first call until want results
// wait behind it (so the next call carries them, deterministically).
type countingResults struct {
	next resultWriter
	want int
	full chan struct{}
	once sync.Once

	mu    sync.Mutex
	calls []int
	keys  map[evalrun.ResultKey]int
}

func (c *countingResults) queued(n int) {
	if n >= c.want {
		c.once.Do(func() { close(c.full) })
	}
}

func (c *countingResults) WriteResults(ctx context.Context, results []*evalrun.ItemResult) error {
	c.mu.Lock()
	first := len(c.calls) == 0
	c.calls = append(c.calls, len(results))
	for _, r := range results {
		c.keys[evalrun.ResultKey{Index: r.Index, Repeat: r.Repeat}]++
	}
	c.mu.Unlock()
	if first {
		select {
		case <-c.full:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.next.WriteResults(ctx, results)
}

// A worker writes the results of its jobs finishing together in one store
// call: with ten slots and a target answering at once, the nine results
// that finish while the first is being written share the next call.
// Every result is stored once, and the run completes as before.
func TestWorkerWritesJobsFinishingTogetherInOneCall(t *testing.T) {
	b := setup(t, 0)
	const n = 40
	items := b.importItems(t, "batch", inputs("q", n))
	c := &countingResults{next: b.store, want: 9, full: make(chan struct{}), keys: map[evalrun.ResultKey]int{}}
	reg := prometheus.NewRegistry()
	b.startWorkerWith(t, &testBuilder{store: b.store}, WorkerOptions{Concurrency: 10, results: c, resultsQueued: c.queued, Metrics: reg})
	run := b.enqueue(t, "batch", items, runConfig{})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := b.coord.Wait(ctx, run.ID, WaitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != evalrun.RunCompleted || s.Succeeded != n {
		t.Fatalf("summary = %+v, want %d succeeded", s, n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) < 2 || c.calls[0] != 1 || c.calls[1] < 9 {
		t.Errorf("store calls carried %v results, want 1 then at least 9 (those that finished during the first)", c.calls)
	}
	if len(c.calls) >= n {
		t.Errorf("%d store calls for %d results: nothing was batched", len(c.calls), n)
	}
	for i := range n {
		if k := (evalrun.ResultKey{Index: i}); c.keys[k] != 1 {
			t.Errorf("result %d written %d times", i, c.keys[k])
		}
	}
	var rows int
	if err := b.store.Pool().QueryRow(ctx, `SELECT COUNT(*) FROM results WHERE run_id = $1`, run.ID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != n {
		t.Errorf("%d result rows, want %d", rows, n)
	}
	// The batch-size histogram counts the store calls and their results.
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		if f.GetName() != "evalrun_worker_result_batch_size" {
			continue
		}
		found = true
		h := f.GetMetric()[0].GetHistogram()
		if int(h.GetSampleCount()) != len(c.calls) || int(h.GetSampleSum()) != n {
			t.Errorf("batch-size histogram: %d calls, %v results; want %d calls, %d results",
				h.GetSampleCount(), h.GetSampleSum(), len(c.calls), n)
		}
	}
	if !found {
		t.Error("no evalrun_worker_result_batch_size metric")
	}
}

// panickyWriter panics in its first call and stores the others.
type panickyWriter struct{ gatedWriter }

func (p *panickyWriter) WriteResults(ctx context.Context, results []*evalrun.ItemResult) error {
	if err := p.gatedWriter.WriteResults(ctx, results); err != nil {
		panic(err)
	}
	return nil
}

// A store call that panics fails the jobs of its batch (River recovers
// the panic of the job that led it) and the results waiting behind it are
// written: no job is left waiting for ever.
func TestResultBatcherSurvivesAPanickingWrite(t *testing.T) {
	p := &panickyWriter{gatedWriter{entered: make(chan struct{}, 8), gate: make(chan struct{}), failFirst: errors.New("bug (test)")}}
	queued := make(chan int, 8)
	b := &resultBatcher{store: p, queued: func(n int) { queued <- n }}
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_ = b.write(context.Background(), &evalrun.ItemResult{RunID: "r", Index: 0})
	}()
	<-p.entered
	<-queued
	errs := make(chan error, 2)
	for k := 1; k <= 2; k++ {
		go func() { errs <- b.write(context.Background(), &evalrun.ItemResult{RunID: "r", Index: k}) }()
		<-queued
	}
	close(p.gate)
	if r := <-panicked; r == nil {
		t.Error("the leading job did not panic")
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("a result waiting behind the panicking call: %v", err)
		}
	}
	if got := fmt.Sprint(p.recorded()); got != "[[0] [1 2]]" {
		t.Errorf("store calls = %s", got)
	}
}
