package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/engine"
	"github.com/evalrun/evalrun/inmem"
)

// pagedStore is a dataset store whose ItemsPage calls pass through hook
// when it is set (to block or fail them) and are counted.
type pagedStore struct {
	evalrun.DatasetStore
	mu    sync.Mutex
	calls int
	hook  func() error
}

func (s *pagedStore) ItemsPage(ctx context.Context, name string, version int, after []byte, limit int) ([]*evalrun.Item, []byte, error) {
	s.mu.Lock()
	s.calls++
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		if err := hook(); err != nil {
			return nil, nil, err
		}
	}
	return s.DatasetStore.ItemsPage(ctx, name, version, after, limit)
}

func (s *pagedStore) setHook(f func() error) {
	s.mu.Lock()
	s.hook = f
	s.mu.Unlock()
}

// importTagged stores n items i000… of which every third is tagged
// "three", and returns the store and the version.
func importTagged(t *testing.T, n int) (*pagedStore, int) {
	t.Helper()
	store := inmem.New()
	var all []*evalrun.Item
	for i := range n {
		it := &evalrun.Item{ID: fmt.Sprintf("i%03d", i), Input: evalrun.String("x")}
		if i%3 == 0 {
			it.Metadata = map[string]any{"tags": []any{"three"}}
		}
		all = append(all, it)
	}
	v, _, err := store.ImportDataset(t.Context(), "d", all)
	if err != nil {
		t.Fatal(err)
	}
	return &pagedStore{DatasetStore: store}, v.Version
}

// sourceIDs is the sequence a DatasetSource yields for sel: what every
// index must resolve to.
func sourceIDs(t *testing.T, store evalrun.DatasetStore, version int, sel engine.Selection) []string {
	t.Helper()
	src, err := engine.NewDatasetSource(t.Context(), store, "d", version, sel)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for it, err := range src.Items(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, it.ID)
	}
	return ids
}

// Every index of a dataset larger than the cache resolves to the item a
// DatasetSource yields at that position, with tags and a limit; read in
// order, each page is loaded once and no more than CachedPages pages are
// ever held; read backwards, the same items come back.
func TestIndexedItemsResolvesEveryIndex(t *testing.T) {
	store, version := importTagged(t, 700)
	for _, sel := range []engine.Selection{
		{},
		{Tags: []string{"three"}},
		{Tags: []string{"three"}, Limit: 100},
		{Limit: 300},
	} {
		t.Run(fmt.Sprintf("%v_%d", sel.Tags, sel.Limit), func(t *testing.T) {
			want := sourceIDs(t, store, version, sel)
			const pageSize, cached = 16, 3
			x, err := engine.NewIndexedItems(t.Context(), store, "d", version, sel, engine.IndexedOptions{PageSize: pageSize, CachedPages: cached})
			if err != nil {
				t.Fatal(err)
			}
			if x.Len() != len(want) {
				t.Fatalf("Len = %d, want %d", x.Len(), len(want))
			}
			for i, id := range want {
				it, err := x.Item(t.Context(), i)
				if err != nil || it.ID != id {
					t.Fatalf("Item(%d) = %v, %v; want %s", i, it, err, id)
				}
				if n := x.CachedPages(); n > cached {
					t.Fatalf("after Item(%d): %d pages held, want at most %d", i, n, cached)
				}
			}
			pages := (len(want) + pageSize - 1) / pageSize
			if x.Loads() != pages {
				t.Errorf("sequential reads loaded %d pages, want each of the %d once", x.Loads(), pages)
			}
			for i := len(want) - 1; i >= 0; i-- {
				if it, err := x.Item(t.Context(), i); err != nil || it.ID != want[i] {
					t.Fatalf("backwards: Item(%d) = %v, %v; want %s", i, it, err, want[i])
				}
			}
			if _, err := x.Item(t.Context(), len(want)); !errors.Is(err, evalrun.ErrInvalid) {
				t.Errorf("Item(Len) = %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := engine.NewIndexedItems(t.Context(), store, "d", 9, engine.Selection{}, engine.IndexedOptions{}); !errors.Is(err, evalrun.ErrNotFound) {
		t.Errorf("unknown version: %v, want ErrNotFound", err)
	}
	x, err := engine.NewIndexedItems(t.Context(), store, "d", version, engine.Selection{Tags: []string{"none"}}, engine.IndexedOptions{})
	if err != nil || x.Len() != 0 || x.Scanned() != 700 {
		t.Errorf("no item kept: Len %d, Scanned %d, %v; want 0, 700", x.Len(), x.Scanned(), err)
	}
}

// Calls wanting the same page while it loads share that one load, and a
// caller giving up (its context ended) fails neither the load nor the
// others.
func TestIndexedItemsConcurrentCallsShareOneLoad(t *testing.T) {
	store, version := importTagged(t, 100)
	x, err := engine.NewIndexedItems(t.Context(), store, "d", version, engine.Selection{}, engine.IndexedOptions{PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var loads sync.Mutex
	started := 0
	store.setHook(func() error {
		loads.Lock()
		started++
		n := started
		loads.Unlock()
		if n > 1 {
			// A second load of the page: fail it at once, so that the
			// test fails rather than waits.
			return errors.New("the page was loaded twice")
		}
		entered <- struct{}{}
		<-release
		return nil
	})
	joined := make(chan int, 16)
	engine.SetJoinedHook(x, func(page int) { joined <- page })

	type got struct {
		i   int
		it  *evalrun.Item
		err error
	}
	results := make(chan got, 16)
	first, cancelFirst := context.WithCancel(t.Context())
	go func() {
		it, err := x.Item(first, 20)
		results <- got{20, it, err}
	}()
	<-entered // the load of page 2 is under way, blocked in the store
	const others = 8
	for i := 21; i < 21+others; i++ {
		go func() {
			it, err := x.Item(t.Context(), i)
			results <- got{i, it, err}
		}()
	}
	for range others {
		select {
		case p := <-joined:
			if p != 2 {
				t.Fatalf("a call joined the load of page %d, want 2", p)
			}
		case r := <-results:
			t.Fatalf("Item(%d) = %v, %v before the load under way ended: it did not wait for that load", r.i, r.it, r.err)
		}
	}
	cancelFirst()
	if r := <-results; r.i != 20 || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the cancelled caller got %d %v %v, want its context's error", r.i, r.it, r.err)
	}
	store.setHook(nil)
	close(release)
	for range others {
		r := <-results
		if r.err != nil || r.it.ID != fmt.Sprintf("i%03d", r.i) {
			t.Errorf("Item(%d) = %v, %v", r.i, r.it, r.err)
		}
	}
	if x.Loads() != 1 {
		t.Errorf("%d loads, want 1", x.Loads())
	}
}

// A failed load surfaces the store's error to its callers and is not
// kept: the next call loads the page again.
func TestIndexedItemsFailedLoadIsRetried(t *testing.T) {
	store, version := importTagged(t, 50)
	x, err := engine.NewIndexedItems(t.Context(), store, "d", version, engine.Selection{}, engine.IndexedOptions{PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("database unavailable (test)")
	store.setHook(func() error { return boom })
	if _, err := x.Item(t.Context(), 5); !errors.Is(err, boom) {
		t.Fatalf("Item during the outage: %v, want the store's error", err)
	}
	store.setHook(nil)
	if it, err := x.Item(t.Context(), 5); err != nil || it.ID != "i005" {
		t.Fatalf("Item after the outage = %v, %v; want i005", it, err)
	}
	if x.Loads() != 2 || x.CachedPages() != 1 {
		t.Errorf("loads %d, pages held %d; want 2 and 1", x.Loads(), x.CachedPages())
	}
}

// Without tags nothing is read up front: the count is the version's, the
// first item costs one store page, items read in order cost each store
// page once, and an index far ahead reads the pages before it once to
// find where its page starts.
func TestIndexedItemsWithoutTagsReadNothingUpFront(t *testing.T) {
	store, version := importTagged(t, 700)
	calls := func() int {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.calls
	}
	x, err := engine.NewIndexedItems(t.Context(), store, "d", version, engine.Selection{}, engine.IndexedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if x.Len() != 700 || calls() != 0 {
		t.Fatalf("Len %d after %d store reads, want 700 after none", x.Len(), calls())
	}
	if it, err := x.Item(t.Context(), 0); err != nil || it.ID != "i000" || calls() != 1 {
		t.Fatalf("Item(0) = %v, %v after %d store reads; want i000 after 1", it, err, calls())
	}
	for i := range 700 {
		if it, err := x.Item(t.Context(), i); err != nil || it.ID != fmt.Sprintf("i%03d", i) {
			t.Fatalf("Item(%d) = %v, %v", i, it, err)
		}
	}
	if calls() != 3 || x.Loads() != 3 {
		t.Errorf("in order: %d store reads, %d loads; want each of the 3 pages read once", calls(), x.Loads())
	}

	y, err := engine.NewIndexedItems(t.Context(), store, "d", version, engine.Selection{Limit: 650}, engine.IndexedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := calls()
	if it, err := y.Item(t.Context(), 649); err != nil || it.ID != "i649" {
		t.Fatalf("Item(649) first = %v, %v; want i649", it, err)
	}
	if got := calls() - before; got != 3 || y.Loads() != 1 {
		t.Errorf("an index on page 3 first: %d store reads, %d loads; want 3 (two to find its start) and 1", got, y.Loads())
	}
	if it, err := y.Item(t.Context(), 300); err != nil || it.ID != "i300" {
		t.Fatalf("Item(300) = %v, %v; want i300", it, err)
	}
	if _, err := y.Item(t.Context(), 650); !errors.Is(err, evalrun.ErrInvalid) {
		t.Errorf("Item(650) beyond the limit: %v, want ErrInvalid", err)
	}
}
