package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/evalrun/evalrun"
)

// ErrItems is the cause of a run stopped because its items could not be
// read (the dataset store failed mid-run, a source yielded a nil item or
// not the number of items it announced); such a run ends failed, and a
// resume runs the executions without a result.
var ErrItems = errors.New("the run's items could not be read")

// ItemSource hands a run its items in run order: the n-th item yielded
// (from 0) is the item of index n. A run reads it once, as its workers
// need items, so that it holds only the items in flight and those whose
// results wait for the store, never the whole dataset.
type ItemSource interface {
	// Len is the number of items Items yields; a run has Len × repeat
	// executions.
	Len() int
	// Items yields the items in order. A non-nil error ends the
	// iteration and fails the run; the run stops iterating early when it
	// is cancelled or has every item it needs.
	Items(ctx context.Context) iter.Seq2[*evalrun.Item, error]
}

// SliceSource is an [ItemSource] over items held in memory.
func SliceSource(items []*evalrun.Item) ItemSource { return sliceSource(items) }

type sliceSource []*evalrun.Item

func (s sliceSource) Len() int { return len(s) }

func (s sliceSource) Items(context.Context) iter.Seq2[*evalrun.Item, error] {
	return func(yield func(*evalrun.Item, error) bool) {
		for _, it := range s {
			if !yield(it, nil) {
				return
			}
		}
	}
}

// DefaultPageSize is how many items a [DatasetSource] reads per store
// call: large enough that a page costs little next to executing it, small
// enough that a page of big items stays a few MB.
const DefaultPageSize = 256

// Selection picks items of a dataset version, as the CLI's --tag and
// --limit do: items with any of Tags (none: every item), then the first
// Limit of those (0: all).
type Selection struct {
	Tags  []string
	Limit int
}

// keeps reports whether it is selected by tag.
func (s Selection) keeps(it *evalrun.Item) bool {
	return len(s.Tags) == 0 || slices.ContainsFunc(it.Tags(), func(t string) bool { return slices.Contains(s.Tags, t) })
}

// DatasetSource is an [ItemSource] reading a pinned dataset version from
// its store page by page ([evalrun.DatasetStore.ItemsPage]), keeping the
// items of a [Selection]. Nothing is held open between pages, and only
// the current page is in memory.
type DatasetSource struct {
	store    evalrun.DatasetStore
	name     string
	version  int
	sel      Selection
	pageSize int
	n        int
	scanned  int
}

// NewDatasetSource counts the items of version (> 0) of dataset name that
// sel keeps and returns a source of them. Without tags the count is the
// version's stored item count (capped at sel.Limit): reading a million
// items only to count them would double a run's reads. With tags it is one
// streamed pass (stopping at sel.Limit). Errors are the store's
// (ErrNotFound for an unknown dataset or version).
func NewDatasetSource(ctx context.Context, store evalrun.DatasetStore, name string, version int, sel Selection) (*DatasetSource, error) {
	s := &DatasetSource{store: store, name: name, version: version, sel: sel, pageSize: DefaultPageSize}
	if len(sel.Tags) == 0 {
		versions, err := store.ListDatasetVersions(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("dataset %s version %d: %w", name, version, err)
		}
		i := slices.IndexFunc(versions, func(v *evalrun.DatasetVersion) bool { return v.Version == version })
		if i < 0 {
			return nil, fmt.Errorf("dataset %s version %d: %w", name, version, evalrun.ErrNotFound)
		}
		s.n = versions[i].ItemCount
		if sel.Limit > 0 {
			s.n = min(s.n, sel.Limit)
		}
		s.scanned = s.n // what a counting pass would have read
		return s, nil
	}
	for _, err := range s.walk(ctx, &s.scanned) {
		if err != nil {
			return nil, err
		}
		s.n++
	}
	return s, nil
}

// Len implements [ItemSource].
func (s *DatasetSource) Len() int { return s.n }

// Scanned is how many items of the version the counting pass read: all of
// them when the selection kept fewer than its limit.
func (s *DatasetSource) Scanned() int { return s.scanned }

// Items implements [ItemSource]. It yields at most Len items: a version is
// immutable, so the walk finds what the count found.
func (s *DatasetSource) Items(ctx context.Context) iter.Seq2[*evalrun.Item, error] {
	return func(yield func(*evalrun.Item, error) bool) {
		n := 0
		for it, err := range s.walk(ctx, nil) {
			if err == nil && n == s.n {
				return
			}
			if !yield(it, err) || err != nil {
				return
			}
			n++
		}
	}
}

// walk yields the selected items page by page, counting the items read
// into scanned when it is not nil; it ends at the selection's limit.
func (s *DatasetSource) walk(ctx context.Context, scanned *int) iter.Seq2[*evalrun.Item, error] {
	return func(yield func(*evalrun.Item, error) bool) {
		var after []byte
		kept := 0
		for {
			page, next, err := s.store.ItemsPage(ctx, s.name, s.version, after, s.pageSize)
			if err != nil {
				yield(nil, fmt.Errorf("dataset %s version %d: %w", s.name, s.version, err))
				return
			}
			for i, it := range page {
				page[i] = nil // the page does not keep what the run let go
				if scanned != nil {
					*scanned++
				}
				if it == nil || !s.sel.keeps(it) {
					continue
				}
				if !yield(it, nil) {
					return
				}
				kept++
				if s.sel.Limit > 0 && kept == s.sel.Limit {
					return
				}
			}
			if len(page) == 0 || next == nil {
				return
			}
			after = next
		}
	}
}
