package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/evalrun/evalrun"
)

// DefaultCachedPages is how many pages of selected items an [IndexedItems]
// keeps by default: jobs arrive roughly in index order, so the page being
// worked, the next one and a page behind for retried jobs are enough.
const DefaultCachedPages = 4

// pageLoadTimeout bounds one page load. A load is detached from the job
// that started it (other jobs may wait for the same page), so it needs its
// own bound.
const pageLoadTimeout = time.Minute

// IndexedOptions tune an [IndexedItems]. The zero value is valid.
type IndexedOptions struct {
	// PageSize is the number of selected items per page (the unit loaded
	// and cached); 0 means [DefaultPageSize].
	PageSize int
	// CachedPages is the number of loaded pages kept; 0 means
	// [DefaultCachedPages].
	CachedPages int
}

// IndexedItems resolves an index of a run's selected item sequence (a
// pinned dataset version with a [Selection], the sequence a
// [DatasetSource] yields) to its item, holding a bounded number of items
// whatever the dataset's size: for jobs that each need one item by index,
// in roughly increasing order, from processes that cannot keep the whole
// dataset (distributed workers).
//
// [NewIndexedItems] walks the sequence once, dropping every item, and
// records where each page of PageSize selected items starts: a store
// cursor and a count of store items to skip after it, a few bytes per
// page. [IndexedItems.Item] loads the page holding the index from there
// and keeps the last CachedPages pages used. Concurrent calls wanting the
// same page share one load.
//
// Memory: CachedPages × PageSize items (by default 4 × 256), plus the
// pages of loads under way for different pages at once (at most one per
// concurrent caller), plus one checkpoint per page (Len/PageSize of them:
// 3,907 for a million items, ~200 KB with PostgreSQL's cursors). Items a
// caller still holds are the caller's. It is safe for concurrent use.
type IndexedItems struct {
	store    evalrun.DatasetStore
	name     string
	version  int
	sel      Selection
	pageSize int
	maxPages int
	n        int
	scanned  int
	// marks[k] is where page k starts.
	marks []pageMark

	mu    sync.Mutex
	pages map[int]*itemPage
	clock uint64
	loads int
	// joined, when set, is called (under mu) when a call waits for a load
	// another call started (tests).
	joined func(page int)
}

// pageMark is where a page starts: skip store items after the cursor
// after (nil: the version's start). ItemsPage returns only the cursor of
// a store page's last item, so a page starting inside a store page is
// reached by skipping that many of it.
type pageMark struct {
	after []byte
	skip  int
}

// itemPage is a page of selected items, loaded or being loaded.
type itemPage struct {
	done    chan struct{} // closed once items or err is set
	items   []*evalrun.Item
	err     error
	lastUse uint64
}

// NewIndexedItems walks the items of version (> 0) of dataset name that
// sel keeps, once, and returns an index of them. Errors are the store's
// (ErrNotFound for an unknown dataset or version), as from
// [NewDatasetSource].
func NewIndexedItems(ctx context.Context, store evalrun.DatasetStore, name string, version int, sel Selection, opts IndexedOptions) (*IndexedItems, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.CachedPages <= 0 {
		opts.CachedPages = DefaultCachedPages
	}
	x := &IndexedItems{store: store, name: name, version: version, sel: sel,
		pageSize: opts.PageSize, maxPages: opts.CachedPages, pages: make(map[int]*itemPage)}
	var after []byte
	for {
		page, next, err := x.read(ctx, after)
		if err != nil {
			return nil, err
		}
		for i, it := range page {
			x.scanned++
			if it == nil || !sel.keeps(it) {
				continue
			}
			if x.n%x.pageSize == 0 {
				x.marks = append(x.marks, pageMark{after: after, skip: i})
			}
			x.n++
			if sel.Limit > 0 && x.n == sel.Limit {
				return x, nil
			}
		}
		if len(page) == 0 || next == nil {
			return x, nil
		}
		after = next
	}
}

// read is one store page after the cursor after.
func (x *IndexedItems) read(ctx context.Context, after []byte) ([]*evalrun.Item, []byte, error) {
	page, next, err := x.store.ItemsPage(ctx, x.name, x.version, after, DefaultPageSize)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset %s version %d: %w", x.name, x.version, err)
	}
	return page, next, nil
}

// Len is the number of selected items: indexes run from 0 to Len-1.
func (x *IndexedItems) Len() int { return x.n }

// Scanned is how many items of the version the walk read: all of them
// when the selection kept fewer than its limit.
func (x *IndexedItems) Scanned() int { return x.scanned }

// Loads is how many page loads were started.
func (x *IndexedItems) Loads() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.loads
}

// CachedPages is how many pages are held (loaded or being loaded).
func (x *IndexedItems) CachedPages() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.pages)
}

// Item returns the item of index i (0 ≤ i < Len), loading its page if it
// is not held. A failed load is not kept: the next call tries again. It
// returns when ctx ends even if the load goes on (for other callers).
func (x *IndexedItems) Item(ctx context.Context, i int) (*evalrun.Item, error) {
	if i < 0 || i >= x.n {
		return nil, fmt.Errorf("%w: item %d is outside dataset %s version %d's %d selected items", evalrun.ErrInvalid, i, x.name, x.version, x.n)
	}
	k := i / x.pageSize
	x.mu.Lock()
	p, ok := x.pages[k]
	if !ok {
		p = &itemPage{done: make(chan struct{})}
		x.pages[k] = p
		x.loads++
		// Detached from ctx: the callers that join this load must not
		// fail because the first one was cancelled.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pageLoadTimeout)
		go func() {
			defer cancel()
			x.load(lctx, k, p)
		}()
	} else if x.joined != nil && !isDone(p.done) {
		x.joined(k)
	}
	x.clock++
	p.lastUse = x.clock
	x.mu.Unlock()

	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.items[i-k*x.pageSize], nil
}

// load reads page k into p, then drops the least recently used loaded
// pages over the bound.
func (x *IndexedItems) load(ctx context.Context, k int, p *itemPage) {
	items, err := x.loadPage(ctx, k)
	x.mu.Lock()
	defer x.mu.Unlock()
	p.items, p.err = items, err
	close(p.done)
	if err != nil {
		if x.pages[k] == p {
			delete(x.pages, k)
		}
		return
	}
	for len(x.pages) > x.maxPages {
		lru := -1
		for j, q := range x.pages {
			if isDone(q.done) && (lru < 0 || q.lastUse < x.pages[lru].lastUse) {
				lru = j
			}
		}
		if lru < 0 {
			return // every other page is being loaded
		}
		delete(x.pages, lru)
	}
}

// loadPage reads the selected items of page k from its mark.
func (x *IndexedItems) loadPage(ctx context.Context, k int) ([]*evalrun.Item, error) {
	want := min(x.pageSize, x.n-k*x.pageSize)
	items := make([]*evalrun.Item, 0, want)
	m := x.marks[k]
	after, skip := m.after, m.skip
	for {
		page, next, err := x.read(ctx, after)
		if err != nil {
			return nil, err
		}
		for _, it := range page[min(skip, len(page)):] {
			if it == nil || !x.sel.keeps(it) {
				continue
			}
			items = append(items, it)
			if len(items) == want {
				return items, nil
			}
		}
		if len(page) == 0 || next == nil {
			// The version is immutable: the walk found these items.
			return nil, fmt.Errorf("dataset %s version %d: page %d ended after %d of its %d items: %w",
				x.name, x.version, k, len(items), want, ErrItems)
		}
		after, skip = next, 0
	}
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
