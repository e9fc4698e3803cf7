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
// It records where each page of PageSize selected items starts: a store
// cursor and a count of store items to skip after it, a few bytes per
// page. [IndexedItems.Item] loads the page holding the index from there
// and keeps the last CachedPages pages used. Concurrent calls wanting the
// same page share one load. Without tags, the count is the version's
// stored item count and the starts are found as pages are loaded: each
// load records where the next page starts, so a run's first jobs wait for
// one page, not a walk of the whole sequence, and jobs coming in order
// read each page once. With tags, [NewIndexedItems] walks the sequence
// once to count it, dropping every item, and records every start.
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
	// walk serialises the loads that record the start of a page not yet
	// known (without tags): a call wanting that page waits for them
	// instead of reading the pages before it again.
	walk sync.Mutex

	mu sync.Mutex
	// marks[k] is where page k starts; without tags, only the pages up to
	// the furthest loaded one (plus one) are known.
	marks []pageMark
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
	if len(sel.Tags) == 0 {
		// Every stored item is selected: the count is the version's, and
		// page k starts at stored item k×PageSize, found as pages load.
		n, err := versionItemCount(ctx, store, name, version)
		if err != nil {
			return nil, err
		}
		if sel.Limit > 0 {
			n = min(n, sel.Limit)
		}
		x.n, x.scanned = n, n // scanned: what a counting pass would have read
		x.marks = []pageMark{{}}
		return x, nil
	}
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

// versionItemCount is the number of items of version of dataset name.
func versionItemCount(ctx context.Context, store evalrun.DatasetStore, name string, version int) (int, error) {
	versions, err := store.ListDatasetVersions(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("dataset %s version %d: %w", name, version, err)
	}
	for _, v := range versions {
		if v.Version == version {
			return v.ItemCount, nil
		}
	}
	return 0, fmt.Errorf("dataset %s version %d: %w", name, version, evalrun.ErrNotFound)
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

// loadPage reads the selected items of page k from its mark. When the
// start of page k or of the next one is not known yet, it holds the walk
// while it reads, reading the pages before k first if their starts are
// unknown too, and records the starts it finds.
func (x *IndexedItems) loadPage(ctx context.Context, k int) ([]*evalrun.Item, error) {
	pages := (x.n + x.pageSize - 1) / x.pageSize
	known := func(j int) bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		return j >= pages || j < len(x.marks)
	}
	if !known(k) || !known(k+1) {
		x.walk.Lock()
		defer x.walk.Unlock()
		for j := x.knownPages() - 1; j < k; j++ {
			if _, err := x.readPage(ctx, j); err != nil {
				return nil, err
			}
		}
	}
	return x.readPage(ctx, k)
}

// knownPages is the number of pages whose start is known.
func (x *IndexedItems) knownPages() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.marks)
}

// readPage reads the selected items of page k, whose start is known, and
// records where page k+1 starts if that was not known.
func (x *IndexedItems) readPage(ctx context.Context, k int) ([]*evalrun.Item, error) {
	want := min(x.pageSize, x.n-k*x.pageSize)
	items := make([]*evalrun.Item, 0, want)
	x.mu.Lock()
	m := x.marks[k]
	x.mu.Unlock()
	after, skip := m.after, m.skip
	for {
		page, next, err := x.read(ctx, after)
		if err != nil {
			return nil, err
		}
		for i := min(skip, len(page)); i < len(page); i++ {
			it := page[i]
			if it == nil || !x.sel.keeps(it) {
				continue
			}
			items = append(items, it)
			if len(items) == want {
				end := pageMark{after: after, skip: i + 1}
				if end.skip == len(page) && next != nil {
					end = pageMark{after: next}
				}
				x.mu.Lock()
				if len(x.marks) == k+1 && (k+1)*x.pageSize < x.n {
					x.marks = append(x.marks, end)
				}
				x.mu.Unlock()
				return items, nil
			}
		}
		if len(page) == 0 || next == nil {
			// The version is immutable: its count (or the walk) says
			// these items exist.
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
