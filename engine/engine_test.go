package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustRun(t *testing.T, ctx context.Context, store evalrun.RunStore, spec engine.Spec) *evalrun.Summary {
	t.Helper()
	s, err := engine.Run(ctx, store, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if s.Succeeded+s.Failed+s.Skipped != s.Total {
		t.Fatalf("counts inconsistent: %d+%d+%d != %d", s.Succeeded, s.Failed, s.Skipped, s.Total)
	}
	return s
}

// T1: a target that never returns and ignores its context fails that item
// with a timeout after item_timeout; the others finish; the run completes.
func TestT1HangingTargetTimesOut(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // let the abandoned goroutine end before goleak looks
	target := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		if it.ID == "q2" {
			<-release // ignores ctx on purpose
		}
		return evalrun.Output{Value: it.Input}, nil
	})
	store := newFakeStore()
	s := mustRun(t, context.Background(), store, engine.Spec{
		Items: items(5), Target: target,
		Options: engine.Options{Concurrency: 5, ItemTimeout: 50 * time.Millisecond},
	})
	if s.Status != evalrun.RunCompleted || s.Succeeded != 4 || s.Failed != 1 || !s.CompletedWithErrors {
		t.Fatalf("summary = %+v", s)
	}
	r := s.Results[2]
	if r.ItemID != "q2" || r.ErrorKind != evalrun.ErrorTimeout || !strings.Contains(r.Error, "timed out after 50ms") {
		t.Fatalf("item q2: kind %q error %q", r.ErrorKind, r.Error)
	}
	if got := store.run(s.RunID); got.Status != evalrun.RunCompleted || got.Failed != 1 || got.Succeeded != 4 {
		t.Fatalf("stored run = %+v", got)
	}
}

// T2: cancelling while a 5 s target runs cancels the target's context and
// Run returns promptly with a summary.
func TestT2CancelReachesTarget(t *testing.T) {
	started := make(chan struct{})
	sawCancel := make(chan error, 1)
	target := evalrun.TargetFunc(func(ctx context.Context, _ *evalrun.Item) (evalrun.Output, error) {
		close(started)
		select {
		case <-ctx.Done():
			sawCancel <- context.Cause(ctx)
			return evalrun.Output{}, ctx.Err()
		case <-time.After(5 * time.Second):
			return evalrun.Output{Value: evalrun.String("late")}, nil
		}
	})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { <-started; cancel(errors.New("user pressed ctrl-c")) }()
	begin := time.Now()
	s := mustRun(t, ctx, newFakeStore(), engine.Spec{Items: items(1), Target: target})
	if el := time.Since(begin); el > 2*time.Second {
		t.Fatalf("Run took %s after cancel; want well under the target's 5s", el)
	}
	// The engine stops waiting at once; the target learns of the cancel
	// through its context (it would otherwise run for 5 s).
	select {
	case cause := <-sawCancel:
		if cause == nil || !strings.Contains(cause.Error(), "ctrl-c") {
			t.Fatalf("target saw cause %v", cause)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("target's context was not cancelled")
	}
	if s.Status != evalrun.RunCanceled || s.Skipped != 1 || s.Err == nil || !strings.Contains(s.Err.Error(), "ctrl-c") {
		t.Fatalf("summary = %+v", s)
	}
}

// T3: a store that refuses a write does not stop execution; what cannot
// be persisted after retries is counted.
func TestT3StoreFailureCounted(t *testing.T) {
	var executed atomic.Int64
	target := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		executed.Add(1)
		return evalrun.Output{Value: it.Input}, nil
	})
	t.Run("permanent", func(t *testing.T) {
		executed.Store(0)
		store := newFakeStore()
		store.onWrite = func(_ int, batch []*evalrun.ItemResult) error {
			for _, r := range batch {
				if r.Index == 2 {
					return errors.New("disk full")
				}
			}
			return nil
		}
		s := mustRun(t, context.Background(), store, engine.Spec{
			Items: items(10), Target: target,
			Options: engine.Options{Concurrency: 1, WriterBatch: 1, Clock: newFakeClock()},
		})
		if executed.Load() != 10 || s.Succeeded != 10 || s.PersistErrors != 1 {
			t.Fatalf("executed %d, summary %+v", executed.Load(), s)
		}
		if ok, _ := store.count(); ok != 9 {
			t.Fatalf("stored %d results, want 9", ok)
		}
		if got := store.run(s.RunID).PersistErrors; got != 1 {
			t.Fatalf("run record persist_errors = %d", got)
		}
	})
	t.Run("transient third write", func(t *testing.T) {
		executed.Store(0)
		store := newFakeStore()
		store.onWrite = func(call int, _ []*evalrun.ItemResult) error {
			if call == 3 {
				return errors.New("connection reset")
			}
			return nil
		}
		s := mustRun(t, context.Background(), store, engine.Spec{
			Items: items(10), Target: target,
			Options: engine.Options{Concurrency: 1, WriterBatch: 1, Clock: newFakeClock()},
		})
		if ok, _ := store.count(); ok != 10 || s.PersistErrors != 0 || executed.Load() != 10 {
			t.Fatalf("stored %d, summary %+v", ok, s)
		}
	})
}

// T4: neither output nor error is an error of the item.
func TestT4NoOutputIsError(t *testing.T) {
	target := evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) {
		return evalrun.Output{}, nil
	})
	s := mustRun(t, context.Background(), nil, engine.Spec{Items: items(1), Target: target})
	if s.Status != evalrun.RunFailed || s.Failed != 1 || s.Results[0].ErrorKind != evalrun.ErrorInvalidOutput {
		t.Fatalf("summary %+v result %+v", s, s.Results[0])
	}
}

// T5: cancelling part-way returns a summary with status canceled whose
// counts add up and equal what is stored.
func TestT5CancelMidRunSummary(t *testing.T) {
	target := evalrun.TargetFunc(func(ctx context.Context, it *evalrun.Item) (evalrun.Output, error) {
		select {
		case <-ctx.Done():
			return evalrun.Output{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
			return evalrun.Output{Value: it.Input}, nil
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := newFakeStore()
	s := mustRun(t, ctx, store, engine.Spec{
		Items: items(20), Target: target, Scorers: []evalrun.Scorer{exact},
		Options: engine.Options{Concurrency: 5, Progress: func(p evalrun.Progress) {
			// >= 8, not == 8: two results finishing together may both
			// count before either reports, so Done can skip a value.
			if p.Done >= 8 {
				cancel()
			}
		}},
	})
	if s.Status != evalrun.RunCanceled || s.Skipped == 0 || s.Succeeded < 8 {
		t.Fatalf("summary %+v", s)
	}
	ok, failed := store.count()
	rec := store.run(s.RunID)
	if ok != s.Succeeded || failed != s.Failed || rec.Succeeded != s.Succeeded || rec.Failed != s.Failed || rec.Skipped != s.Skipped || rec.Status != evalrun.RunCanceled {
		t.Fatalf("stored %d ok %d failed, record %+v, summary %+v", ok, failed, rec, s)
	}
	if len(s.Results) != s.Succeeded+s.Failed {
		t.Fatalf("%d results for %d processed items", len(s.Results), s.Succeeded+s.Failed)
	}
}

// discardStore accepts and forgets results, so memory tests measure the
// engine alone.
type discardStore struct{ *fakeStore }

func (discardStore) WriteResults(context.Context, []*evalrun.ItemResult) error { return nil }

func heapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// T6: with retain off, 500 × 1 MB outputs leave the heap bounded; with
// retain on every result is kept.
func TestT6RetainOffBoundsMemory(t *testing.T) {
	big := func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = 'x'
		}
		b[0], b[len(b)-1] = '"', '"'
		return evalrun.Output{Value: b}, nil
	}
	base := heapMB()
	var peak float64
	s := mustRun(t, context.Background(), discardStore{newFakeStore()}, engine.Spec{
		Items: items(500), Target: evalrun.TargetFunc(big),
		Options: engine.Options{Concurrency: 50, DiscardResults: true, Progress: func(p evalrun.Progress) {
			if p.Done%100 == 0 {
				peak = max(peak, heapMB()-base)
			}
		}},
	})
	after := heapMB() - base
	if s.Succeeded != 500 || s.Results != nil {
		t.Fatalf("summary %+v", s)
	}
	if peak > 100 || after > 100 {
		t.Fatalf("retained heap grew by %.0f MB during and %.0f MB after the run; want < 100 MB", peak, after)
	}
	t.Logf("retain off: heap +%.1f MB during, +%.1f MB after", peak, after)

	s = mustRun(t, context.Background(), discardStore{newFakeStore()}, engine.Spec{
		Items: items(100), Target: evalrun.TargetFunc(big), Options: engine.Options{Concurrency: 10},
	})
	if len(s.Results) != 100 || len(s.Results[99].Output) != 1<<20 {
		t.Fatalf("retain on kept %d results", len(s.Results))
	}
	// 100 outputs of 1 MiB are kept: the heap holds at least ~90 MiB of
	// them (a little of the baseline may have been collected meanwhile).
	if grown := heapMB() - base; grown < 90 {
		t.Fatalf("retain on: heap grew only %.1f MB for 100 MB of outputs", grown)
	}
	runtime.KeepAlive(s)
}

// T7: transient errors are retried, permanent ones are not, Retry-After is
// honoured.
func TestT7Retries(t *testing.T) {
	t.Run("fail once then succeed", func(t *testing.T) {
		var mu sync.Mutex
		calls := map[string]int{}
		target := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
			mu.Lock()
			calls[it.ID]++
			n := calls[it.ID]
			mu.Unlock()
			if n == 1 {
				return evalrun.Output{}, evalrun.Transient(errors.New("503"))
			}
			return evalrun.Output{Value: it.Input}, nil
		})
		s := mustRun(t, context.Background(), nil, engine.Spec{
			Items: items(10), Target: target,
			Options: engine.Options{MaxRetries: 2, Clock: newFakeClock()},
		})
		if s.Succeeded != 10 {
			t.Fatalf("summary %+v", s)
		}
		for _, r := range s.Results {
			if r.RetryCount != 1 || r.Attempts != 2 || calls[r.ItemID] != 2 {
				t.Fatalf("%s: retry_count %d attempts %d calls %d", r.ItemID, r.RetryCount, r.Attempts, calls[r.ItemID])
			}
		}
	})
	t.Run("permanent tried once", func(t *testing.T) {
		var calls atomic.Int64
		target := evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) {
			calls.Add(1)
			return evalrun.Output{}, evalrun.Permanent(errors.New("HTTP 400"))
		})
		s := mustRun(t, context.Background(), nil, engine.Spec{
			Items: items(3), Target: target,
			Options: engine.Options{MaxRetries: 5, Clock: newFakeClock()},
		})
		if calls.Load() != 3 || s.Failed != 3 || s.Results[0].RetryCount != 0 || s.Results[0].ErrorKind != evalrun.ErrorPermanent {
			t.Fatalf("calls %d summary %+v", calls.Load(), s)
		}
	})
	t.Run("plain Go error is permanent", func(t *testing.T) {
		var calls atomic.Int64
		target := evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) {
			calls.Add(1)
			return evalrun.Output{}, errors.New("boom")
		})
		mustRun(t, context.Background(), nil, engine.Spec{Items: items(1), Target: target, Options: engine.Options{MaxRetries: 5}})
		if calls.Load() != 1 {
			t.Fatalf("calls %d", calls.Load())
		}
	})
	t.Run("retry-after honoured", func(t *testing.T) {
		var calls atomic.Int64
		target := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
			if calls.Add(1) == 1 {
				return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorTransient, StatusCode: 429, RetryAfter: 7 * time.Second, Err: errors.New("slow down")}
			}
			return evalrun.Output{Value: it.Input}, nil
		})
		clock := newFakeClock()
		s := mustRun(t, context.Background(), nil, engine.Spec{
			Items: items(1), Target: target,
			Options: engine.Options{MaxRetries: 1, RetryDelay: time.Millisecond, Clock: clock, Jitter: func(time.Duration) time.Duration { return 0 }},
		})
		if s.Succeeded != 1 || s.Results[0].RetryCount != 1 {
			t.Fatalf("summary %+v", s)
		}
		if w := clock.recorded(); len(w) != 1 || w[0] != 7*time.Second {
			t.Fatalf("waits %v, want exactly [7s]", w)
		}
	})
	t.Run("exponential back-off", func(t *testing.T) {
		target := evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) {
			return evalrun.Output{}, evalrun.Transient(errors.New("reset"))
		})
		clock := newFakeClock()
		s := mustRun(t, context.Background(), nil, engine.Spec{
			Items: items(1), Target: target,
			Options: engine.Options{MaxRetries: 3, RetryDelay: 100 * time.Millisecond, Clock: clock, Jitter: func(m time.Duration) time.Duration { return m / 2 }},
		})
		want := []time.Duration{112500 * time.Microsecond, 225 * time.Millisecond, 450 * time.Millisecond}
		if w := clock.recorded(); fmt.Sprint(w) != fmt.Sprint(want) {
			t.Fatalf("waits %v, want %v", w, want)
		}
		if r := s.Results[0]; r.Attempts != 4 || r.ErrorKind != evalrun.ErrorTransient {
			t.Fatalf("result %+v", r)
		}
	})
}

// T8: scorers run at the same time, and a panicking or NaN scorer does not
// disturb the others.
func TestT8ScorersParallelAndIsolated(t *testing.T) {
	var started atomic.Int64
	all := make(chan struct{})
	barrier := func(name string) evalrun.Scorer {
		return evalrun.ScorerFunc(name, func(ctx context.Context, _ evalrun.ScoreInput) (evalrun.Score, error) {
			if started.Add(1) == 3 {
				close(all)
			}
			select {
			case <-all:
				return evalrun.Score{Value: 1, Reason: "met the others"}, nil
			case <-ctx.Done():
				return evalrun.Score{}, errors.New("the other scorers never started: scorers are not parallel")
			}
		})
	}
	panicky := evalrun.ScorerFunc("panicky", func(context.Context, evalrun.ScoreInput) (evalrun.Score, error) {
		panic("scorer bug")
	})
	nan := evalrun.ScorerFunc("nan", func(context.Context, evalrun.ScoreInput) (evalrun.Score, error) {
		return evalrun.Score{Value: math.NaN()}, nil
	})
	s := mustRun(t, context.Background(), nil, engine.Spec{
		Items: items(1), Target: echo,
		Scorers: []evalrun.Scorer{barrier("a"), panicky, barrier("b"), nan, barrier("c")},
		Options: engine.Options{ItemTimeout: 10 * time.Second},
	})
	sc := s.Results[0].Scores
	for _, i := range []int{0, 2, 4} {
		if sc[i].Score == nil || *sc[i].Score != 1 || sc[i].Error != "" || !sc[i].Passed {
			t.Fatalf("scorer %s: %+v", sc[i].Scorer, sc[i])
		}
	}
	if sc[1].Score != nil || sc[1].ErrorKind != evalrun.ErrorPanic || !strings.Contains(sc[1].Error, "scorer bug") {
		t.Fatalf("panicky: %+v", sc[1])
	}
	if sc[3].Score != nil || sc[3].ErrorKind != evalrun.ErrorInvalidOutput {
		t.Fatalf("nan: %+v", sc[3])
	}
	if s.Succeeded != 1 || s.ScorerErrors != 2 {
		t.Fatalf("summary %+v", s)
	}
}

// A panicking target is an error of that item, never a crash.
func TestTargetPanicIsItemError(t *testing.T) {
	target := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		if it.ID == "q1" {
			panic("nil map")
		}
		return evalrun.Output{Value: it.Input}, nil
	})
	s := mustRun(t, context.Background(), nil, engine.Spec{Items: items(3), Target: target})
	if s.Succeeded != 2 || s.Results[1].ErrorKind != evalrun.ErrorPanic || !strings.Contains(s.Results[1].Error, "nil map") {
		t.Fatalf("summary %+v, q1 %+v", s, s.Results[1])
	}
}

// T9: the status tells a partial failure from a total one.
func TestT9Status(t *testing.T) {
	failAllBut := func(ok int) evalrun.Target {
		return evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
			if it.ID == fmt.Sprintf("q%d", ok) {
				return evalrun.Output{Value: it.Input}, nil
			}
			return evalrun.Output{}, evalrun.Permanent(errors.New("bad"))
		})
	}
	s := mustRun(t, context.Background(), nil, engine.Spec{Items: items(100), Target: failAllBut(42)})
	if s.Status != evalrun.RunCompleted || !s.CompletedWithErrors || s.Failed != 99 || s.Succeeded != 1 {
		t.Fatalf("99 of 100 failed: %+v", s)
	}
	s = mustRun(t, context.Background(), nil, engine.Spec{Items: items(100), Target: failAllBut(-1)})
	if s.Status != evalrun.RunFailed || s.CompletedWithErrors || s.Failed != 100 {
		t.Fatalf("100 of 100 failed: %+v", s)
	}
	s = mustRun(t, context.Background(), nil, engine.Spec{Items: items(5), Target: echo})
	if s.Status != evalrun.RunCompleted || s.CompletedWithErrors {
		t.Fatalf("all ok: %+v", s)
	}
}

// T10: results come back in input order whatever the completion order.
func TestT10InputOrder(t *testing.T) {
	const n = 3
	finished := make([]chan struct{}, n)
	for i := range finished {
		finished[i] = make(chan struct{})
	}
	// Item i waits for item i+1 to finish, so they complete in reverse.
	var order []string
	var mu sync.Mutex
	target := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		var i int
		fmt.Sscanf(it.ID, "q%d", &i)
		if i+1 < n {
			<-finished[i+1]
		}
		mu.Lock()
		order = append(order, it.ID)
		mu.Unlock()
		close(finished[i])
		return evalrun.Output{Value: it.Input}, nil
	})
	store := newFakeStore()
	s := mustRun(t, context.Background(), store, engine.Spec{Items: items(n), Target: target, Options: engine.Options{Concurrency: n, WriterBatch: 1}})
	for i, r := range s.Results {
		if r.Index != i || r.ItemID != fmt.Sprintf("q%d", i) {
			t.Fatalf("results[%d] = %s", i, r.ItemID)
		}
	}
	if fmt.Sprint(order) != "[q2 q1 q0]" {
		t.Fatalf("completion order %v: the test did not reverse completion", order)
	}
}

// T11: while the store's writes block, execution goes on up to the
// writer's bound, and then waits (backpressure).
func TestT11SlowStoreOffHotPath(t *testing.T) {
	const buffer, concurrency = 10, 4
	unblock := make(chan struct{})
	var executed atomic.Int64
	reached := make(chan struct{})
	// In flight while the first write blocks: 1 result in the store call,
	// buffer results queued, one blocked in put per worker.
	bound := int64(1 + buffer + concurrency)
	target := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		if executed.Add(1) == bound {
			close(reached)
		}
		return evalrun.Output{Value: it.Input}, nil
	})
	store := newFakeStore()
	store.onWrite = func(call int, _ []*evalrun.ItemResult) error {
		if call == 1 {
			<-unblock
		}
		return nil
	}
	done := make(chan *evalrun.Summary)
	go func() {
		s, _ := engine.Run(context.Background(), store, engine.Spec{
			Items: items(50), Target: target,
			Options: engine.Options{Concurrency: concurrency, WriterBatch: 1, WriterBuffer: buffer},
		})
		done <- s
	}()
	<-reached                         // execution proceeded to the bound while the first write was pending
	time.Sleep(50 * time.Millisecond) // an absence cannot be awaited: give it a chance to overrun
	if got := executed.Load(); got != bound {
		t.Fatalf("executed %d items while the store was blocked; want exactly the bound %d", got, bound)
	}
	close(unblock)
	s := <-done
	if ok, _ := store.count(); s.Succeeded != 50 || ok != 50 {
		t.Fatalf("summary %+v, stored %d", s, ok)
	}
}

// In-flight targets never exceed the concurrency, and reach it.
func TestConcurrencyBound(t *testing.T) {
	const limit = 7
	var inflight, peak atomic.Int64
	target := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Millisecond) // hold the slot so that others overlap
		inflight.Add(-1)
		return evalrun.Output{Value: it.Input}, nil
	})
	mustRun(t, context.Background(), nil, engine.Spec{Items: items(300), Target: target, Options: engine.Options{Concurrency: limit}})
	if p := peak.Load(); p > limit || p < 2 {
		t.Fatalf("peak in-flight %d, limit %d", p, limit)
	}
}

// Counts stay exact over 10,000 items with random failures.
func TestCountsExactAtScale(t *testing.T) {
	const n = 10000
	fails := func(id string) bool {
		var i int
		fmt.Sscanf(id, "q%d", &i)
		return rand.New(rand.NewPCG(uint64(i), 7)).IntN(10) < 3
	}
	want := 0
	for _, it := range items(n) {
		if fails(it.ID) {
			want++
		}
	}
	target := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		if fails(it.ID) {
			return evalrun.Output{}, evalrun.Permanent(errors.New("planted"))
		}
		return evalrun.Output{Value: it.Input}, nil
	})
	store := newFakeStore()
	s := mustRun(t, context.Background(), store, engine.Spec{Items: items(n), Target: target, Scorers: []evalrun.Scorer{exact}, Options: engine.Options{Concurrency: 16}})
	ok, failed := store.count()
	if s.Failed != want || s.Succeeded != n-want || ok != s.Succeeded || failed != s.Failed || len(s.Results) != n {
		t.Fatalf("want %d failures; summary %+v; stored %d/%d", want, s, ok, failed)
	}
	for i, r := range s.Results {
		if r.Index != i {
			t.Fatalf("results[%d].Index = %d", i, r.Index)
		}
	}
}

// Strict mode stops the run at the first scorer error; it ends failed.
func TestStrictCancelsOnScorerError(t *testing.T) {
	bad := evalrun.ScorerFunc("bad", func(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
		if in.Item.ID == "q5" {
			return evalrun.Score{}, errors.New("judge said nonsense")
		}
		return evalrun.Score{Value: 1}, nil
	})
	s := mustRun(t, context.Background(), nil, engine.Spec{Items: items(50), Target: echo, Scorers: []evalrun.Scorer{bad}, Options: engine.Options{Concurrency: 1, Strict: true}})
	if s.Status != evalrun.RunFailed || !errors.Is(s.Err, engine.ErrStrict) || s.Skipped != 44 || s.Succeeded != 6 {
		t.Fatalf("summary %+v err %v", s, s.Err)
	}
	// Not strict: the run goes on.
	s = mustRun(t, context.Background(), nil, engine.Spec{Items: items(50), Target: echo, Scorers: []evalrun.Scorer{bad}, Options: engine.Options{Concurrency: 1}})
	if s.Status != evalrun.RunCompleted || s.Succeeded != 50 || s.ScorerErrors != 1 {
		t.Fatalf("summary %+v", s)
	}
}

// Cancelling during a retry's back-off stops the retry at once.
func TestCancelDuringBackoff(t *testing.T) {
	var calls atomic.Int64
	firstFailed := make(chan struct{})
	target := evalrun.TargetFunc(func(context.Context, *evalrun.Item) (evalrun.Output, error) {
		if calls.Add(1) == 1 {
			defer close(firstFailed)
		}
		return evalrun.Output{}, evalrun.Transient(errors.New("503"))
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-firstFailed; cancel() }()
	begin := time.Now()
	s := mustRun(t, ctx, nil, engine.Spec{Items: items(1), Target: target, Options: engine.Options{MaxRetries: 3, RetryDelay: time.Hour}})
	if time.Since(begin) > 5*time.Second || calls.Load() != 1 || s.Status != evalrun.RunCanceled || s.Skipped != 1 {
		t.Fatalf("calls %d summary %+v", calls.Load(), s)
	}
}

// attempt_timeout is transient (retried); item_timeout bounds all attempts.
func TestAttemptAndItemTimeouts(t *testing.T) {
	t.Run("hang once then succeed", func(t *testing.T) {
		var calls atomic.Int64
		target := evalrun.TargetFunc(func(ctx context.Context, it *evalrun.Item) (evalrun.Output, error) {
			if calls.Add(1) == 1 {
				<-ctx.Done()
				return evalrun.Output{}, ctx.Err()
			}
			return evalrun.Output{Value: it.Input}, nil
		})
		s := mustRun(t, context.Background(), nil, engine.Spec{Items: items(1), Target: target, Options: engine.Options{
			AttemptTimeout: 20 * time.Millisecond, ItemTimeout: 10 * time.Second, MaxRetries: 2, RetryDelay: -1}})
		if r := s.Results[0]; s.Succeeded != 1 || r.RetryCount != 1 {
			t.Fatalf("result %+v", r)
		}
	})
	t.Run("always hangs", func(t *testing.T) {
		target := evalrun.TargetFunc(func(ctx context.Context, _ *evalrun.Item) (evalrun.Output, error) {
			<-ctx.Done()
			return evalrun.Output{}, ctx.Err()
		})
		s := mustRun(t, context.Background(), nil, engine.Spec{Items: items(1), Target: target, Options: engine.Options{
			AttemptTimeout: 30 * time.Millisecond, ItemTimeout: 200 * time.Millisecond, MaxRetries: 100, RetryDelay: -1}})
		r := s.Results[0]
		if r.ErrorKind != evalrun.ErrorTimeout || r.Attempts < 2 || !strings.Contains(r.Error, fmt.Sprintf("(%d attempts)", r.Attempts)) {
			t.Fatalf("result %+v", r)
		}
	})
}

// Usage of failed attempts is included in the item's usage.
func TestUsageOfFailedAttemptsCounted(t *testing.T) {
	var calls atomic.Int64
	target := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		if calls.Add(1) == 1 {
			return evalrun.Output{}, &evalrun.Error{Kind: evalrun.ErrorTransient, Usage: evalrun.Usage{InputTokens: evalrun.Int64(10)}, Err: errors.New("malformed stream")}
		}
		return evalrun.Output{Value: it.Input, Usage: evalrun.Usage{InputTokens: evalrun.Int64(10), OutputTokens: evalrun.Int64(3)}}, nil
	})
	s := mustRun(t, context.Background(), nil, engine.Spec{Items: items(1), Target: target, Options: engine.Options{MaxRetries: 1, Clock: newFakeClock()}})
	u := s.Results[0].Usage
	if u.InputTokens == nil || *u.InputTokens != 20 || u.OutputTokens == nil || *u.OutputTokens != 3 || u.CostUSD != nil {
		t.Fatalf("usage %+v", u)
	}
}

// Bad specs are refused before anything runs.
func TestInvalidSpec(t *testing.T) {
	dup := []evalrun.Scorer{exact, exact}
	for name, spec := range map[string]engine.Spec{
		"no target":        {Items: items(1)},
		"duplicate scorer": {Items: items(1), Target: echo, Scorers: dup},
		"negative retries": {Items: items(1), Target: echo, Options: engine.Options{MaxRetries: -1}},
	} {
		store := newFakeStore()
		if s, err := engine.Run(context.Background(), store, spec); !errors.Is(err, evalrun.ErrInvalid) || s != nil || len(store.runs) != 0 {
			t.Errorf("%s: err %v summary %v, %d runs stored", name, err, s, len(store.runs))
		}
	}
}

// A cancelled run resumed under the same id runs only what is missing;
// every item ends with exactly one result and the counts are exact.
func TestResumeAfterCancel(t *testing.T) {
	var calls sync.Map
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	target := evalrun.TargetFunc(func(c context.Context, it *evalrun.Item) (evalrun.Output, error) {
		n, _ := calls.LoadOrStore(it.ID, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		if it.ID == "q3" {
			return evalrun.Output{}, evalrun.Permanent(errors.New("always bad"))
		}
		return evalrun.Output{Value: it.Input}, c.Err()
	})
	store := newFakeStore()
	spec := engine.Spec{Items: items(40), Target: target, Options: engine.Options{Concurrency: 2, Repeat: 2,
		Progress: func(p evalrun.Progress) {
			if p.Done == 30 {
				cancel()
			}
		}}}
	first := mustRun(t, ctx, store, spec)
	if first.Status != evalrun.RunCanceled || first.Total != 80 || first.Skipped == 0 {
		t.Fatalf("first %+v", first)
	}
	rec, _ := store.GetRun(context.Background(), first.RunID)
	spec.Run, spec.Options.Resume, spec.Options.Progress = rec, true, nil
	second := mustRun(t, context.Background(), store, spec)
	if second.RunID != first.RunID || second.Status != evalrun.RunCompleted || second.Succeeded != 78 || second.Failed != 2 || second.Skipped != 0 {
		t.Fatalf("second %+v", second)
	}
	ok, failed := store.count()
	if ok != 78 || failed != 2 {
		t.Fatalf("stored %d ok %d failed", ok, failed)
	}
	total := 0
	calls.Range(func(k, v any) bool {
		total += int(v.(*atomic.Int64).Load())
		return true
	})
	// Each (item, repeat) ran once, except those cut off by the cancel,
	// which ran again.
	if total < 80 || total > 80+spec.Options.Concurrency {
		t.Fatalf("%d target calls for 80 executions", total)
	}
	// Resuming again with RetryFailed runs only the 2 failures.
	before := total
	spec.Run, _ = store.GetRun(context.Background(), first.RunID)
	spec.Options.RetryFailed = true
	third := mustRun(t, context.Background(), store, spec)
	total = 0
	calls.Range(func(k, v any) bool {
		total += int(v.(*atomic.Int64).Load())
		return true
	})
	if total-before != 2 || third.Failed != 2 || third.Succeeded != 78 {
		t.Fatalf("retry-failed made %d calls; summary %+v", total-before, third)
	}
}
