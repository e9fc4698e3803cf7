package storetest

import (
	"errors"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
)

// testImportItemsSequenceError: an error from the items' sequence ends
// the import, is returned as is, and nothing is written.
func testImportItemsSequenceError(t *testing.T, s evalrun.Store) {
	good := makeItems(3)
	mustImport(t, s, "qa", cloneItems(good))
	rows := countRows(t, s, "qa")
	broken := errors.New("the file changed under the import")
	seq := func(yield func(*evalrun.Item, error) bool) {
		for _, it := range makeItems(5)[1:] { // a change: item-0000 removed, two added
			if !yield(it, nil) {
				return
			}
		}
		yield(nil, broken)
	}
	for _, name := range []string{"qa", "fresh"} {
		_, created, err := s.ImportItems(t.Context(), name, seq)
		if err != broken || created {
			t.Fatalf("import into %s: created=%v, err=%v; want the sequence's error as is", name, created, err)
		}
	}
	if vs, err := s.ListDatasetVersions(t.Context(), "qa"); err != nil || len(vs) != 1 {
		t.Fatalf("versions after a failed import: %d, %v; want 1", len(vs), err)
	}
	if n := countRows(t, s, "qa"); n != rows {
		t.Fatalf("item rows = %d after a failed import, want %d", n, rows)
	}
	_, err := s.GetDataset(t.Context(), "fresh")
	wantErr(t, "dataset of a failed import", err, evalrun.ErrNotFound)

	// The store is usable afterwards (nothing of the failed import is left
	// in its way), and a streamed import equals the same slice's.
	next := makeItems(5)[1:]
	v, created, err := s.ImportItems(t.Context(), "qa", dataset.Items(cloneItems(next)))
	if err != nil || !created || v.Version != 2 || v.Added != 2 || v.Removed != 1 || v.Changed != 0 {
		t.Fatalf("import after a failed one = %+v, created=%v, %v; want version 2, +2 -1", v, created, err)
	}
	diffItems(t, scanAll(t, s, "qa", 2), next)
}

// testImportDuplicateIDs: a repeated id is refused with both positions
// (the first item repeating an earlier id), whether or not either item
// equals the current row at its position.
func testImportDuplicateIDs(t *testing.T, s evalrun.Store) {
	a, b, c := item("a", "A", ""), item("b", "B", ""), item("c", "C", "")
	mustImport(t, s, "qa", []*evalrun.Item{a, b, c})
	rows := countRows(t, s, "qa")
	cases := []struct {
		name          string
		items         []*evalrun.Item
		first, second int
	}{
		{"both new", []*evalrun.Item{a, item("x", "1", ""), b, item("x", "2", ""), item("x", "3", "")}, 2, 4},
		{"second in place", []*evalrun.Item{c, b, c}, 1, 3},
		{"first in place", []*evalrun.Item{a, b, item("a", "again", "")}, 1, 3},
		{"earliest of two", []*evalrun.Item{b, b, item("z", "Z", ""), a, a}, 1, 2},
	}
	for _, tc := range cases {
		_, created, err := s.ImportItems(t.Context(), "qa", dataset.Items(cloneItems(tc.items)))
		var dup *dataset.DuplicateIDError
		if !errors.As(err, &dup) || !errors.Is(err, evalrun.ErrInvalid) || created {
			t.Fatalf("%s: created=%v, err=%v; want a DuplicateIDError", tc.name, created, err)
		}
		if dup.First != tc.first || dup.Second != tc.second || dup.ID != tc.items[tc.first-1].ID {
			t.Fatalf("%s: duplicate %q at %d and %d, want %q at %d and %d", tc.name, dup.ID, dup.First, dup.Second,
				tc.items[tc.first-1].ID, tc.first, tc.second)
		}
	}
	if n := countRows(t, s, "qa"); n != rows {
		t.Fatalf("item rows = %d after refused imports, want %d", n, rows)
	}
}

// testImportMovesInPlaceItem: an item equal to the row of its position
// that a longer run of kept rows leaves out gets a new row like any moved
// item (here C, whose rank 3 cannot follow 4, 5 nor precede 1, 2).
func testImportMovesInPlaceItem(t *testing.T, s evalrun.Store) {
	items := makeItems(5) // A B C D E
	mustImport(t, s, "qa", cloneItems(items))
	next := []*evalrun.Item{items[3], items[4], items[2], items[0], items[1]} // D E C A B
	v, created := mustImport(t, s, "qa", cloneItems(next))
	if !created || v.Version != 2 || v.Added+v.Changed+v.Removed != 0 {
		t.Fatalf("reorder = %+v, created=%v; want version 2 with nothing added, changed or removed", v, created)
	}
	if n := countRows(t, s, "qa"); n != 8 {
		t.Fatalf("item rows = %d, want 8 (5 + 3 moved)", n)
	}
	diffItems(t, scanAll(t, s, "qa", 2), next)
	diffItems(t, scanAll(t, s, "qa", 1), items)
	// Back again: the same economy the other way.
	if _, created := mustImport(t, s, "qa", cloneItems(items)); !created {
		t.Fatal("moving back created no version")
	}
	diffItems(t, scanAll(t, s, "qa", 3), items)
	diffItems(t, scanAll(t, s, "qa", 2), next)
}
