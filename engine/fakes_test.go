package engine_test

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/evalrun/evalrun"
)

// fakeStore is a RunStore kept in maps, with hooks to fail or block writes.
type fakeStore struct {
	mu      sync.Mutex
	runs    map[string]evalrun.Run
	results map[[2]int]*evalrun.ItemResult
	calls   int // WriteResults calls
	// onWrite, when set, is called (without the lock) before a write;
	// an error refuses the batch.
	onWrite func(call int, batch []*evalrun.ItemResult) error
	// onUpdate, when set, is called before UpdateRun; an error refuses it.
	onUpdate func(r *evalrun.Run) error
	updates  []evalrun.Run
}

func newFakeStore() *fakeStore {
	return &fakeStore{runs: map[string]evalrun.Run{}, results: map[[2]int]*evalrun.ItemResult{}}
}

func (s *fakeStore) CreateRun(_ context.Context, r *evalrun.Run) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[r.ID]; ok {
		return fmt.Errorf("run %s exists", r.ID)
	}
	s.runs[r.ID] = *r
	return nil
}

func (s *fakeStore) UpdateRun(_ context.Context, r *evalrun.Run) error {
	if s.onUpdate != nil {
		if err := s.onUpdate(r); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[r.ID]; !ok {
		return evalrun.ErrNotFound
	}
	s.runs[r.ID] = *r
	s.updates = append(s.updates, *r)
	return nil
}

func (s *fakeStore) GetRun(_ context.Context, id string) (*evalrun.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return nil, evalrun.ErrNotFound
	}
	return &r, nil
}

func (s *fakeStore) ListRuns(context.Context, evalrun.RunFilter) ([]*evalrun.Run, error) {
	return nil, nil
}

// CancelRun, ClaimRun and ReleaseRun complete the RunStore; the engine
// calls none of them (the CLI does, around engine.Run).
func (s *fakeStore) CancelRun(_ context.Context, id, reason string) (*evalrun.Run, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return nil, false, evalrun.ErrNotFound
	}
	if !r.Status.Cancelable() {
		return &r, false, nil
	}
	r.Status, r.Error = evalrun.RunCanceled, cmp.Or(r.Error, reason)
	s.runs[id] = r
	return &r, true, nil
}

func (s *fakeStore) ClaimRun(_ context.Context, id string, c evalrun.RunClaim) (*evalrun.Run, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return nil, false, evalrun.ErrNotFound
	}
	now := time.Now()
	if r.ClaimedBy != c.Owner && (r.Claimed(c.Owner, now) || !r.Status.Resumable()) {
		return &r, false, nil
	}
	r.ClaimedBy, r.ClaimExpires = c.Owner, now.Add(c.TTL)
	s.runs[id] = r
	return &r, true, nil
}

func (s *fakeStore) ReleaseRun(_ context.Context, id, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.runs[id]; ok && r.ClaimedBy == owner {
		r.ClaimedBy, r.ClaimExpires = "", time.Time{}
		s.runs[id] = r
	}
	return nil
}

func (s *fakeStore) WriteResults(_ context.Context, batch []*evalrun.ItemResult) error {
	s.mu.Lock()
	s.calls++
	call := s.calls
	hook := s.onWrite
	s.mu.Unlock()
	if hook != nil {
		if err := hook(call, batch); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range batch {
		s.results[[2]int{r.Index, r.Repeat}] = r
	}
	return nil
}

func (s *fakeStore) ScanResults(_ context.Context, _ string, _ evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	for _, r := range s.sorted() {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (s *fakeStore) ScanResultKeys(_ context.Context, _ string, fn func(evalrun.ResultKey) error) error {
	for _, r := range s.sorted() {
		if err := fn(evalrun.ResultKey{Index: r.Index, Repeat: r.Repeat, Failed: r.Failed()}); err != nil {
			return err
		}
	}
	return nil
}

func (s *fakeStore) sorted() []*evalrun.ItemResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*evalrun.ItemResult, 0, len(s.results))
	for _, r := range s.results {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Index != out[j].Index {
			return out[i].Index < out[j].Index
		}
		return out[i].Repeat < out[j].Repeat
	})
	return out
}

func (s *fakeStore) count() (ok, failed int) {
	for _, r := range s.sorted() {
		if r.Failed() {
			failed++
		} else {
			ok++
		}
	}
	return ok, failed
}

func (s *fakeStore) run(id string) evalrun.Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[id]
}

// fakeClock never sleeps: After fires at once and advances the time, and
// every requested wait is recorded.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

func (c *fakeClock) recorded() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// items returns n items with ids q0..q(n-1) and input "in-i".
func items(n int) []*evalrun.Item {
	out := make([]*evalrun.Item, n)
	for i := range out {
		out[i] = &evalrun.Item{ID: fmt.Sprintf("q%d", i), Input: evalrun.String(fmt.Sprintf("in-%d", i)), Expected: evalrun.String(fmt.Sprintf("in-%d", i))}
	}
	return out
}

// echo returns the input.
var echo = evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
	return evalrun.Output{Value: it.Input}, nil
})

// exact is an exact-match scorer.
var exact = evalrun.ScorerFunc("exact", func(_ context.Context, in evalrun.ScoreInput) (evalrun.Score, error) {
	if evalrun.EqualValues(in.Output, in.Item.Expected) {
		return evalrun.Score{Value: 1}, nil
	}
	return evalrun.Score{Value: 0}, nil
})
