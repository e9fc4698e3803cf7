package engine_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/inmem"
)

// trackedSource yields n items and counts the live ones: an item is live
// from the moment it is yielded until every execution of it has reached
// the store (release). It records the most items ever live at a yield.
type trackedSource struct {
	n, repeat int

	mu       sync.Mutex
	yielded  int
	written  map[int]int // executions of an item the store took
	released int
	maxLive  int
	// onYield, when set, is called (under the lock) with the index of the
	// item about to be yielded and the items then live.
	onYield func(idx, live int)
}

func newTrackedSource(n, repeat int) *trackedSource {
	return &trackedSource{n: n, repeat: repeat, written: map[int]int{}}
}

func (s *trackedSource) Len() int { return s.n }

func (s *trackedSource) Items(context.Context) iter.Seq2[*evalrun.Item, error] {
	return func(yield func(*evalrun.Item, error) bool) {
		for i := range s.n {
			s.mu.Lock()
			s.yielded++
			live := s.yielded - s.released
			s.maxLive = max(s.maxLive, live)
			if s.onYield != nil {
				s.onYield(i, live)
			}
			s.mu.Unlock()
			it := &evalrun.Item{ID: fmt.Sprintf("q%d", i), Input: evalrun.String(fmt.Sprintf("in-%d", i)), Expected: evalrun.String(fmt.Sprintf("in-%d", i))}
			if !yield(it, nil) {
				return
			}
		}
	}
}

// stored releases the items of a batch the store takes.
func (s *trackedSource) stored(batch []*evalrun.ItemResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range batch {
		s.written[r.Index]++
		if s.written[r.Index] == s.repeat {
			s.released++
		}
	}
}

// A streamed run holds at most concurrency + the writer's bound items (+1
// being handed out), whatever the dataset's size, with and without
// repeats; every execution still runs once and the summary is as with a
// slice of items.
func TestSourceLiveItemsBounded(t *testing.T) {
	const n = 400
	for _, c := range []int{1, 4, 16} {
		for _, repeat := range []int{1, 3} {
			t.Run(fmt.Sprintf("c%d_repeat%d", c, repeat), func(t *testing.T) {
				src := newTrackedSource(n, repeat)
				store := newFakeStore()
				store.onWrite = func(_ int, batch []*evalrun.ItemResult) error {
					src.stored(batch)
					return nil
				}
				opts := engine.Options{Concurrency: c, Repeat: repeat, DiscardResults: true, FixedConcurrency: true,
					WriterBuffer: 8, WriterBatch: 4}
				sum, err := engine.Run(context.Background(), store, engine.Spec{Source: src, Target: echo,
					Scorers: []evalrun.Scorer{exact}, Options: opts})
				if err != nil {
					t.Fatal(err)
				}
				if sum.Status != evalrun.RunCompleted || sum.Total != n*repeat || sum.Succeeded != n*repeat || sum.Results != nil {
					t.Fatalf("summary: %s total %d succeeded %d results %v", sum.Status, sum.Total, sum.Succeeded, sum.Results != nil)
				}
				if ok, _ := store.count(); ok != n*repeat {
					t.Fatalf("stored %d results, want %d", ok, n*repeat)
				}
				if src.yielded != n || src.released != n {
					t.Fatalf("yielded %d, released %d items; want %d each", src.yielded, src.released, n)
				}
				// Workers + the writer's queue + its batch being written +
				// the item being handed out.
				bound := c + opts.WriterBuffer + opts.WriterBatch + 1
				if src.maxLive > bound {
					t.Fatalf("%d items live at once, bound %d", src.maxLive, bound)
				}
			})
		}
	}
}

// While every worker is busy, the run reads one item ahead and no more.
func TestSourceReadsOnlyWhatWorkersTake(t *testing.T) {
	for _, repeat := range []int{1, 2} {
		t.Run(fmt.Sprintf("repeat%d", repeat), func(t *testing.T) {
			const c, n = 3, 50
			started := make(chan struct{}, n*repeat)
			gate := make(chan struct{})
			target := evalrun.TargetFunc(func(ctx context.Context, it *evalrun.Item) (evalrun.Output, error) {
				started <- struct{}{}
				<-gate
				return evalrun.Output{Value: it.Input}, nil
			})
			src := newTrackedSource(n, repeat)
			var mu sync.Mutex
			blocked, overRead := true, -1
			// c workers hold at most c items (fewer with repeats); the
			// dispatcher reads one more and waits to hand it out.
			limit := c + 1
			src.onYield = func(idx, _ int) {
				mu.Lock()
				defer mu.Unlock()
				if blocked && idx >= limit && overRead < 0 {
					overRead = idx
				}
			}
			done := make(chan *evalrun.Summary)
			go func() {
				sum, err := engine.Run(context.Background(), nil, engine.Spec{Source: src, Target: target,
					Options: engine.Options{Concurrency: c, Repeat: repeat, FixedConcurrency: true}})
				if err != nil {
					t.Error(err)
				}
				done <- sum
			}()
			for range c {
				<-started
			}
			mu.Lock()
			blocked = false
			got := overRead
			mu.Unlock()
			close(gate)
			sum := <-done
			if got >= 0 {
				t.Fatalf("item %d read while %d workers were busy (at most %d items may be read)", got, c, limit)
			}
			if sum.Succeeded != n*repeat || len(sum.Results) != n*repeat {
				t.Fatalf("succeeded %d, results %d; want %d", sum.Succeeded, len(sum.Results), n*repeat)
			}
		})
	}
}

// failingSource yields ok items, then err (nil: it just ends there).
type failingSource struct {
	n, ok int
	err   error
}

func (s failingSource) Len() int { return s.n }

func (s failingSource) Items(context.Context) iter.Seq2[*evalrun.Item, error] {
	return func(yield func(*evalrun.Item, error) bool) {
		for _, it := range items(s.ok) {
			if !yield(it, nil) {
				return
			}
		}
		if s.err != nil {
			yield(nil, s.err)
		}
	}
}

// A source that fails, or yields fewer items than it announced, fails the
// run with ErrItems after storing what ran; a resume runs the rest.
func TestSourceFailureFailsRun(t *testing.T) {
	readErr := errors.New("disk on fire")
	for name, src := range map[string]failingSource{
		"error": {n: 10, ok: 4, err: readErr},
		"short": {n: 10, ok: 4},
	} {
		t.Run(name, func(t *testing.T) {
			store := newFakeStore()
			sum, err := engine.Run(context.Background(), store, engine.Spec{Run: &evalrun.Run{ID: "r1"}, Source: src, Target: echo,
				Options: engine.Options{Concurrency: 2}})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Status != evalrun.RunFailed || !errors.Is(sum.Err, engine.ErrItems) || sum.Succeeded != 4 || sum.Skipped != 6 {
				t.Fatalf("status %s err %v succeeded %d skipped %d; want failed, ErrItems, 4, 6", sum.Status, sum.Err, sum.Succeeded, sum.Skipped)
			}
			if name == "error" && !errors.Is(sum.Err, readErr) {
				t.Fatalf("err %v does not wrap the source's", sum.Err)
			}
			rec := store.run("r1")
			sum, err = engine.Run(context.Background(), store, engine.Spec{Run: &rec, Items: items(10), Target: echo,
				Options: engine.Options{Concurrency: 2, Resume: true}})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Status != evalrun.RunCompleted || sum.Succeeded != 10 {
				t.Fatalf("resumed: %s, %d succeeded; want completed, 10", sum.Status, sum.Succeeded)
			}
		})
	}
}

// A spec with both Items and a Source is refused before anything runs.
func TestSpecItemsAndSource(t *testing.T) {
	_, err := engine.Run(context.Background(), nil, engine.Spec{Items: items(2), Source: engine.SliceSource(items(2)), Target: echo})
	if !errors.Is(err, evalrun.ErrInvalid) {
		t.Fatalf("err %v, want ErrInvalid", err)
	}
}

// A resume whose missing executions are all among the first items stops
// reading the source after them.
func TestResumeReadsOnlyUpToLastMissing(t *testing.T) {
	store := newFakeStore()
	target := evalrun.TargetFunc(func(_ context.Context, it *evalrun.Item) (evalrun.Output, error) {
		if it.ID == "q2" {
			return evalrun.Output{}, errors.New("boom")
		}
		return evalrun.Output{Value: it.Input}, nil
	})
	sum, err := engine.Run(context.Background(), store, engine.Spec{Run: &evalrun.Run{ID: "r1"}, Items: items(100), Target: target})
	if err != nil || sum.Failed != 1 {
		t.Fatalf("first session: %v, %d failed", err, sum.Failed)
	}
	src := newTrackedSource(100, 1)
	rec := store.run("r1")
	sum, err = engine.Run(context.Background(), store, engine.Spec{Run: &rec, Source: src, Target: echo,
		Options: engine.Options{Resume: true, RetryFailed: true}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != evalrun.RunCompleted || sum.Succeeded != 100 || sum.Failed != 0 {
		t.Fatalf("resumed: %s, %d succeeded, %d failed", sum.Status, sum.Succeeded, sum.Failed)
	}
	if src.yielded != 3 {
		t.Fatalf("resume read %d items, want 3 (up to the one missing)", src.yielded)
	}
}

// A DatasetSource reads a stored version page by page with the
// selection's tags and limit, counting first.
func TestDatasetSource(t *testing.T) {
	ctx := context.Background()
	store := inmem.New()
	var all []*evalrun.Item
	for i := range 700 {
		it := &evalrun.Item{ID: fmt.Sprintf("i%03d", i), Input: evalrun.String("x")}
		if i%3 == 0 {
			it.Metadata = map[string]any{"tags": []any{"three"}}
		}
		all = append(all, it)
	}
	v, _, err := store.ImportDataset(ctx, "d", all)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sel       engine.Selection
		n         int
		first     string
		last      string
		scannedAt int
	}{
		{engine.Selection{}, 700, "i000", "i699", 700},
		{engine.Selection{Tags: []string{"three"}}, 234, "i000", "i699", 700},
		{engine.Selection{Tags: []string{"three"}, Limit: 100}, 100, "i000", "i297", 298},
		{engine.Selection{Limit: 300}, 300, "i000", "i299", 300},
		{engine.Selection{Tags: []string{"none"}}, 0, "", "", 700},
	} {
		src, err := engine.NewDatasetSource(ctx, store, "d", v.Version, tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		if src.Len() != tc.n || src.Scanned() != tc.scannedAt {
			t.Fatalf("%+v: Len %d Scanned %d, want %d, %d", tc.sel, src.Len(), src.Scanned(), tc.n, tc.scannedAt)
		}
		var ids []string
		for it, err := range src.Items(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, it.ID)
		}
		if len(ids) != tc.n || (tc.n > 0 && (ids[0] != tc.first || ids[len(ids)-1] != tc.last)) {
			t.Fatalf("%+v: %d items %v…, want %d from %s to %s", tc.sel, len(ids), ids[:min(3, len(ids))], tc.n, tc.first, tc.last)
		}
	}
	if _, err := engine.NewDatasetSource(ctx, store, "d", 9, engine.Selection{}); !errors.Is(err, evalrun.ErrNotFound) {
		t.Fatalf("unknown version: %v, want ErrNotFound", err)
	}
}
