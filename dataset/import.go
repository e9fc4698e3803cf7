package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strconv"

	"github.com/evalrun/evalrun"
)

// Import reads the dataset file at path (see [ReadFile]) and stores it as
// the next version of the named dataset. A rejected file writes nothing.
//
// It streams: a first pass checks the whole file (every problem [ReadFile]
// reports, with its line) and plans the derived ids, and a second pass
// hands the items one at a time to [evalrun.DatasetStore.ImportItems],
// which finds duplicate ids (the file is read once more to name their
// lines). Memory does not grow with the file, except 8 bytes per item
// without an id. A file that cannot be read twice (a pipe) is read whole,
// as [ReadFile] does.
func Import(ctx context.Context, store evalrun.DatasetStore, name, path string) (evalrun.DatasetVersion, bool, error) {
	var zero evalrun.DatasetVersion
	format, err := FormatOf(path)
	if err != nil {
		return zero, false, err
	}
	f, err := os.Open(path)
	if err != nil {
		return zero, false, fmt.Errorf("read dataset: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		items, err := Read(f, path, format)
		if err != nil {
			return zero, false, err
		}
		return store.ImportDataset(ctx, name, items)
	}
	ids, err := surveyIDs(f, path, format)
	if err != nil {
		return zero, false, err
	}
	items := func(yield func(*evalrun.Item, error) bool) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			yield(nil, fmt.Errorf("read dataset %s again: %w", path, err))
			return
		}
		n := 0
		stopped := errors.New("stopped")
		err := scan(f, path, format, func(rec record) error {
			n++
			if !rec.givenID {
				rec.item.ID = ids.derive(rec.item)
			}
			if !yield(rec.item, nil) {
				return stopped
			}
			return nil
		})
		switch {
		case errors.Is(err, stopped):
		case err != nil:
			yield(nil, err)
		case n != ids.count:
			// The file changed between the passes.
			yield(nil, errorf(path, 0, "changed while being imported (%d items, then %d): import it again", ids.count, n))
		}
	}
	v, created, err := store.ImportItems(ctx, name, items)
	if dup := (*DuplicateIDError)(nil); errors.As(err, &dup) {
		return zero, false, duplicateLines(f, path, format, dup)
	}
	return v, created, err
}

// duplicateLines names the lines of the items a store found sharing an id.
func duplicateLines(f *os.File, path string, format Format, dup *DuplicateIDError) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read dataset %s again: %w", path, err)
	}
	var first, n int
	found := errors.New("found")
	var line int
	derived := false
	err := scan(f, path, format, func(rec record) error {
		n++
		switch n {
		case dup.First:
			first, derived = rec.line, !rec.givenID
		case dup.Second:
			line, derived = rec.line, derived || !rec.givenID
			return found
		}
		return nil
	})
	if !errors.Is(err, found) {
		return errorf(path, 0, "%v", dup) // the file changed since
	}
	if derived {
		// The first pass planned derived ids that collide with nothing:
		// one that does was planned on another content.
		return errorf(path, 0, "changed while being imported (its items %d and %d got the same id %q): import it again", dup.First, dup.Second, dup.ID)
	}
	return errorf(path, line, "duplicate id %q (first on line %d)", dup.ID, first)
}

// idPlan is what deriving ids in one pass needs to know of the whole file:
// the given ids a derived id could collide with, and the derived ids that
// several items share (repeats get -2, -3…, see [DeriveID]).
type idPlan struct {
	count int
	// given holds the given ids shaped like derived ids (12 hex digits,
	// maybe a -N suffix): only those can collide with a derived id.
	given map[string]bool
	// next is, for each derived base shared by several items without an
	// id, 0 before the first of them, 1 after it took the base itself, else
	// the next suffix to try (as in assignIDs).
	next map[string]int
}

// surveyIDs reads the file through, checking everything [Read] checks
// but unique ids (the store checks those), and plans the derived ids. It
// keeps the given ids shaped like derived ones and 8 bytes per item
// without an id: the base of its derived id.
func surveyIDs(f *os.File, path string, format Format) (*idPlan, error) {
	var bases []uint64
	p := &idPlan{given: map[string]bool{}, next: map[string]int{}}
	err := scan(f, path, format, func(rec record) error {
		p.count++
		if rec.givenID {
			if derivedShape(rec.item.ID) {
				p.given[rec.item.ID] = true
			}
			return nil
		}
		b, err := strconv.ParseUint(DeriveID(rec.item), 16, 64)
		if err != nil {
			return fmt.Errorf("derive id: %w", err) // cannot happen: DeriveID gives hex digits
		}
		bases = append(bases, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if p.count == 0 {
		return nil, errorf(path, 0, "no items")
	}
	for _, b := range repeated(bases) {
		p.next[fmt.Sprintf("%012x", b)] = 0
	}
	return p, nil
}

// repeated sorts hashes and returns the values that occur more than once.
func repeated(hashes []uint64) []uint64 {
	slices.Sort(hashes)
	var out []uint64
	for i := 1; i < len(hashes); i++ {
		if hashes[i] == hashes[i-1] && (len(out) == 0 || out[len(out)-1] != hashes[i]) {
			out = append(out, hashes[i])
		}
	}
	return out
}

// derivedShape reports whether id looks like a derived id: 12 lowercase
// hex digits, maybe followed by "-" and digits.
func derivedShape(id string) bool {
	if len(id) < 12 {
		return false
	}
	for _, c := range []byte(id[:12]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	if len(id) == 12 {
		return true
	}
	if id[12] != '-' || len(id) == 13 {
		return false
	}
	for _, c := range []byte(id[13:]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// derive returns the id of the next item without one, in file order: what
// assignIDs gives it.
func (p *idPlan) derive(it *evalrun.Item) string {
	base := DeriveID(it)
	next, shared := p.next[base]
	if next == 0 && !p.given[base] {
		if shared {
			p.next[base] = 1
		}
		return base
	}
	n := max(next, 2)
	for p.given[base+"-"+strconv.Itoa(n)] {
		n++
	}
	if shared {
		p.next[base] = n + 1
	}
	return base + "-" + strconv.Itoa(n)
}

// Items returns the items of a slice as a sequence, for
// [evalrun.DatasetStore.ImportItems].
func Items(items []*evalrun.Item) iter.Seq2[*evalrun.Item, error] {
	return func(yield func(*evalrun.Item, error) bool) {
		for _, it := range items {
			if !yield(it, nil) {
				return
			}
		}
	}
}
