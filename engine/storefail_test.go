package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
)

// heldAfter returns a target that answers the first n items and holds every
// later one until its context ends: a run of more than n items can then only
// end by being stopped.
func heldAfter(n int, executed *atomic.Int64) evalrun.Target {
	return evalrun.TargetFunc(func(ctx context.Context, it *evalrun.Item) (evalrun.Output, error) {
		if executed.Add(1) > int64(n) {
			<-ctx.Done()
			return evalrun.Output{}, ctx.Err()
		}
		return evalrun.Output{Value: it.Input}, nil
	})
}

// runBounded runs spec and fails the test if the run does not end within
// a generous bound (a run that is never stopped would hang).
func runBounded(t *testing.T, ctx context.Context, store evalrun.RunStore, spec engine.Spec) *evalrun.Summary {
	t.Helper()
	done := make(chan *evalrun.Summary, 1)
	go func() {
		s, err := engine.Run(ctx, store, spec)
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- s
	}()
	select {
	case s := <-done:
		if s == nil {
			t.FailNow()
		}
		if s.Succeeded+s.Failed+s.Skipped != s.Total {
			t.Fatalf("counts inconsistent: %+v", s)
		}
		return s
	case <-time.After(20 * time.Second):
		t.Fatal("the run was not stopped")
		return nil
	}
}

// backoffs returns the recorded waits other than the flush deadline.
func backoffs(c *fakeClock, flush time.Duration) []time.Duration {
	return slices.DeleteFunc(c.recorded(), func(d time.Duration) bool { return d == flush })
}

func noJitter(time.Duration) time.Duration { return 0 }

// A store whose error says it refuses every write (disk full) stops the
// run at its first refusal: no retry, no result-by-result attempts, no
// further item executed; the run ends failed with the store's error, said
// once through OnStoreFailure, and the results it had are counted lost.
func TestStoreUnavailableStopsTheRun(t *testing.T) {
	full := fmt.Errorf("database or disk is full: %w", evalrun.ErrStoreUnavailable)
	store := newFakeStore()
	store.onWrite = func(int, []*evalrun.ItemResult) error { return full }
	var executed atomic.Int64
	var told []error
	var mu sync.Mutex
	clock := newFakeClock()
	s := runBounded(t, context.Background(), store, engine.Spec{
		Items: items(1000), Target: heldAfter(10, &executed),
		Options: engine.Options{Concurrency: 4, Clock: clock, Jitter: noJitter, FlushInterval: time.Hour,
			OnStoreFailure: func(err error) { mu.Lock(); told = append(told, err); mu.Unlock() }},
	})
	if s.Status != evalrun.RunFailed || !errors.Is(s.Err, engine.ErrStoreFailed) || !errors.Is(s.Err, evalrun.ErrStoreUnavailable) {
		t.Fatalf("status %s err %v, want failed with the store's error", s.Status, s.Err)
	}
	if s.Succeeded == 0 || s.Succeeded > 10 || s.PersistErrors != s.Succeeded {
		t.Fatalf("summary %+v: want every executed result counted lost", s)
	}
	if len(told) != 1 || !errors.Is(told[0], evalrun.ErrStoreUnavailable) {
		t.Fatalf("OnStoreFailure calls: %v, want exactly one with the cause", told)
	}
	if store.calls != 1 {
		t.Errorf("%d store calls: a store that refuses everything must be given up at its first refusal", store.calls)
	}
	if w := backoffs(clock, time.Hour); len(w) != 0 {
		t.Errorf("back-off waits %v for an error no retry can fix", w)
	}
	rec := store.run(s.RunID)
	if rec.Status != evalrun.RunFailed || !strings.Contains(rec.Error, "database or disk is full") || rec.PersistErrors != s.PersistErrors {
		t.Errorf("stored record %+v", rec)
	}
}

// A store that refuses every write with an error of unknown class is given
// up after a few batches in a row, each retried through the retry policy
// (the injected clock's waits prove the back-off) and tried result by
// result only briefly.
func TestStoreRefusingEverythingStopsTheRun(t *testing.T) {
	store := newFakeStore()
	store.onWrite = func(int, []*evalrun.ItemResult) error { return errors.New("attempt to write a readonly database") }
	var executed atomic.Int64
	clock := newFakeClock()
	told := 0
	s := runBounded(t, context.Background(), store, engine.Spec{
		Items: items(500), Target: heldAfter(20, &executed),
		Options: engine.Options{Concurrency: 1, WriterBatch: 1, Clock: clock, Jitter: noJitter, FlushInterval: time.Hour,
			OnStoreFailure: func(error) { told++ }},
	})
	if s.Status != evalrun.RunFailed || !errors.Is(s.Err, engine.ErrStoreFailed) || !strings.Contains(s.Err.Error(), "readonly database") {
		t.Fatalf("status %s err %v", s.Status, s.Err)
	}
	if told != 1 || s.PersistErrors != s.Succeeded {
		t.Fatalf("told %d times; summary %+v: every executed result is lost", told, s)
	}
	// Three batches of one: three attempts and one alone each.
	if store.calls != 3*4 {
		t.Errorf("%d store calls, want 12 (3 refused batches × (3 attempts + 1 alone))", store.calls)
	}
	want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
	want = slices.Concat(want, want, want)
	if got := backoffs(clock, time.Hour); !slices.Equal(got, want) {
		t.Errorf("back-off waits %v, want %v", got, want)
	}
}

// A large batch refused whole is not tried result by result to the end.
func TestRefusedBatchNotSplitToTheEnd(t *testing.T) {
	store := newFakeStore()
	store.onWrite = func(int, []*evalrun.ItemResult) error { return errors.New("I/O error") }
	var executed atomic.Int64
	s := runBounded(t, context.Background(), store, engine.Spec{
		Items: items(200), Target: heldAfter(100, &executed),
		Options: engine.Options{Concurrency: 100, WriterBatch: 100, Clock: newFakeClock(), Jitter: noJitter},
	})
	if s.Status != evalrun.RunFailed || !errors.Is(s.Err, engine.ErrStoreFailed) {
		t.Fatalf("summary %+v", s)
	}
	if store.calls > 3*(3+2) {
		t.Errorf("%d store calls for at most 3 refused batches of up to 100", store.calls)
	}
}

// A blip (a batch refused, then taken on retry; or a batch refused whole
// once, then the store works again) is retried without failing the run.
func TestStoreBlipDoesNotFailTheRun(t *testing.T) {
	for _, c := range []struct {
		name  string
		fails int // the first fails store calls are refused
		lost  int
	}{
		{"taken on retry", 2, 0},
		{"one batch lost", 4, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := newFakeStore()
			store.onWrite = func(call int, _ []*evalrun.ItemResult) error {
				if call <= c.fails {
					return errors.New("database is locked")
				}
				return nil
			}
			told := 0
			s := mustRun(t, context.Background(), store, engine.Spec{
				Items: items(50), Target: echo,
				Options: engine.Options{Concurrency: 1, WriterBatch: 1, Clock: newFakeClock(), Jitter: noJitter,
					OnStoreFailure: func(error) { told++ }},
			})
			if s.Status != evalrun.RunCompleted || s.Succeeded != 50 || s.PersistErrors != c.lost || told != 0 {
				t.Fatalf("summary %+v, told %d", s, told)
			}
			if ok, _ := store.count(); ok != 50-c.lost {
				t.Fatalf("stored %d, want %d", ok, 50-c.lost)
			}
		})
	}
}

// Cancelling the run ends the writer's back-off wait at once.
func TestCancelCutsWriterBackoff(t *testing.T) {
	store := newFakeStore()
	refused := make(chan struct{})
	var once sync.Once
	store.onWrite = func(int, []*evalrun.ItemResult) error {
		once.Do(func() { close(refused) })
		return errors.New("database is locked")
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		<-refused
		cancel(errors.New("ctrl-c"))
	}()
	var executed atomic.Int64
	// The clock's waits never end: only cancellation can end a back-off.
	s := runBounded(t, ctx, store, engine.Spec{
		Items: items(10), Target: heldAfter(1, &executed),
		Options: engine.Options{Concurrency: 1, WriterBatch: 1, Clock: stuckClock{}},
	})
	if s.Status != evalrun.RunCanceled || s.Succeeded != 1 || s.PersistErrors != 1 {
		t.Fatalf("summary %+v", s)
	}
}

// stuckClock's waits never end.
type stuckClock struct{}

func (stuckClock) Now() time.Time                       { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }
func (stuckClock) After(time.Duration) <-chan time.Time { return nil }

// When the final run record cannot be stored the run is not reported
// completed: it fails with the store's error.
func TestFinalRecordNotStoredFailsTheRun(t *testing.T) {
	store := newFakeStore()
	store.onUpdate = func(r *evalrun.Run) error {
		if r.Status.Done() {
			return errors.New("attempt to write a readonly database")
		}
		return nil
	}
	s := mustRun(t, context.Background(), store, engine.Spec{Items: items(5), Target: echo, Options: engine.Options{Clock: newFakeClock()}})
	if s.Status != evalrun.RunFailed || !errors.Is(s.Err, engine.ErrStoreFailed) ||
		!strings.Contains(s.Err.Error(), "final record (status completed) could not be stored: attempt to write a readonly database") {
		t.Fatalf("status %s err %v", s.Status, s.Err)
	}
}
