package river

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
)

// boundedIndex records the most pages its reader ever held after a job
// took its item.
type boundedIndex struct {
	*engine.IndexedItems
	mu      sync.Mutex
	maxHeld int
}

func (b *boundedIndex) Item(ctx context.Context, i int) (*evalrun.Item, error) {
	it, err := b.IndexedItems.Item(ctx, i)
	b.mu.Lock()
	b.maxHeld = max(b.maxHeld, b.IndexedItems.CachedPages())
	b.mu.Unlock()
	return it, err
}

// importSelectable stores n items whose every third is tagged "keep" and
// returns the items a tags [keep] + limit selection keeps, in order.
func (b *bundle) importSelectable(t *testing.T, name string, n, limit int) []*evalrun.Item {
	t.Helper()
	var all, kept []*evalrun.Item
	for i := range n {
		in := fmt.Sprintf("%s-%d", name, i)
		raw, _ := json.Marshal(in)
		it := &evalrun.Item{ID: in, Input: raw, Expected: raw}
		if i%3 == 0 {
			it.Metadata = map[string]any{"tags": []any{"keep"}}
			if len(kept) < limit {
				kept = append(kept, it)
			}
		}
		all = append(all, it)
	}
	if _, _, err := b.store.ImportDataset(t.Context(), name, all); err != nil {
		t.Fatal(err)
	}
	return kept
}

// checkResults fails unless every index of the run has one result, of the
// item at that position of want.
func checkResults(t *testing.T, s *evalrun.Summary, want []*evalrun.Item) {
	t.Helper()
	if s.Status != evalrun.RunCompleted || s.Succeeded != len(want) || len(s.Results) != len(want) {
		t.Fatalf("summary: %s, %d succeeded, %d results; want completed with %d", s.Status, s.Succeeded, len(s.Results), len(want))
	}
	for _, r := range s.Results {
		if r.Index < 0 || r.Index >= len(want) || r.ItemID != want[r.Index].ID || r.Failed() {
			t.Fatalf("result %d is of item %s (failed %v), want %s", r.Index, r.ItemID, r.Failed(), want[min(r.Index, len(want)-1)].ID)
		}
	}
}

// A worker reading a run whose selection (tags + limit) spans more pages
// than it caches resolves every job's index to the item at that position
// of the selected sequence, loads each page once when the jobs come in
// order, and never holds more pages than its bound.
func TestWorkerHoldsBoundedPagesOfItems(t *testing.T) {
	b := setup(t, 0)
	want := b.importSelectable(t, "sel", 150, 37) // 50 tagged, the first 37 kept
	idx := &boundedIndex{}
	builder := &testBuilder{store: b.store,
		sel:   engine.Selection{Tags: []string{"keep"}, Limit: 37},
		pages: engine.IndexedOptions{PageSize: 4, CachedPages: 2},
		wrap: func(x *engine.IndexedItems) ItemIndex {
			idx.IndexedItems = x
			return idx
		}}
	b.startWorker(t, builder, 1) // one job at a time: in index order
	rec := b.enqueue(t, "sel", want, runConfig{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := b.coord.Wait(ctx, rec.ID, WaitOptions{LoadResults: true})
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, s, want)
	if idx.IndexedItems == nil || idx.Len() != 37 {
		t.Fatalf("reader: %+v, want one over 37 items", idx.IndexedItems)
	}
	if pages := (37 + 3) / 4; idx.Loads() != pages {
		t.Errorf("%d page loads, want each of the %d pages once", idx.Loads(), pages)
	}
	if idx.maxHeld > 2 {
		t.Errorf("held up to %d pages, want at most 2", idx.maxHeld)
	}
}

// Jobs of one page starting together share its load: with every page
// cacheable, a worker at concurrency 8 loads each page exactly once.
func TestWorkerConcurrentJobsShareAPageLoad(t *testing.T) {
	b := setup(t, 0)
	want := b.importSelectable(t, "conc", 120, 40)
	builder := &testBuilder{store: b.store,
		sel:   engine.Selection{Tags: []string{"keep"}, Limit: 40},
		pages: engine.IndexedOptions{PageSize: 8, CachedPages: 5}}
	b.startWorker(t, builder, 8)
	rec := b.enqueue(t, "conc", want, runConfig{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := b.coord.Wait(ctx, rec.ID, WaitOptions{LoadResults: true})
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, s, want)
	builder.mu.Lock()
	defer builder.mu.Unlock()
	if len(builder.indexes) != 1 || builder.indexes[0].Loads() != 5 {
		t.Fatalf("readers %d, loads %d; want one reader loading each of the 5 pages once", len(builder.indexes), builder.indexes[0].Loads())
	}
}
