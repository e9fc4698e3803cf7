package sqlite_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/sqlite"
)

// TestImportBatches checks the batched writes of an import (staged items
// 64 per statement, item rows 256 per statement) where batches end
// mid-span and switch between staged and moved-in-place items: every
// version reads back as imported, in order, with its contents.
func TestImportBatches(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Version 1: blocks A (400 items), M (300), C (400).
	const a, m = 400, 300
	item := func(i int, answer string) *evalrun.Item {
		return &evalrun.Item{
			ID:       fmt.Sprintf("q%04d", i),
			Input:    json.RawMessage(fmt.Sprintf(`{"q":"what is %d + %d?"}`, i, i)),
			Expected: json.RawMessage(fmt.Sprintf("%q", answer)),
			Metadata: map[string]any{"n": float64(i)},
		}
	}
	v1 := make([]*evalrun.Item, 2*a+m)
	for i := range v1 {
		v1[i] = item(i, fmt.Sprint(2*i))
	}
	// Version 2: C, M in place (the same positions), A with every 7th
	// item changed, then added items. A longer run than M keeps its
	// rows, so M's in-place rows are rewritten: 300 of them, more than
	// a batch.
	var v2 []*evalrun.Item
	v2 = append(v2, v1[a+m:]...)
	v2 = append(v2, v1[a:a+m]...)
	for i := range a {
		it := v1[i]
		if i%7 == 0 {
			it = item(i, "changed")
		}
		v2 = append(v2, it)
	}
	for i := 2*a + m; i < 2*a+m+70; i++ {
		v2 = append(v2, item(i, "new"))
	}
	// Version 3: reversed.
	v3 := slices.Clone(v2)
	slices.Reverse(v3)

	for n, items := range [][]*evalrun.Item{v1, v2, v3} {
		v, created, err := s.ImportDataset(t.Context(), "ds", items)
		if err != nil || !created || v.Version != n+1 || v.ItemCount != len(items) {
			t.Fatalf("import %d: %+v created=%v err=%v", n+1, v, created, err)
		}
	}
	if v, _, err := s.ImportDataset(t.Context(), "ds", v3); err != nil || v.Version != 3 {
		t.Fatalf("re-import of version 3: %+v %v", v, err)
	}
	for n, want := range [][]*evalrun.Item{v1, v2, v3} {
		i := 0
		err := s.ScanItems(t.Context(), "ds", n+1, func(it *evalrun.Item) error {
			if i >= len(want) {
				return fmt.Errorf("more than %d items", len(want))
			}
			w := want[i]
			if it.ID != w.ID || string(it.Input) != string(w.Input) || string(it.Expected) != string(w.Expected) || it.Metadata["n"] != w.Metadata["n"] {
				return fmt.Errorf("item %d = %s %s %s %v, want %s %s %s %v", i, it.ID, it.Input, it.Expected, it.Metadata, w.ID, w.Input, w.Expected, w.Metadata)
			}
			i++
			return nil
		})
		if err != nil {
			t.Fatalf("version %d: %v", n+1, err)
		}
		if i != len(want) {
			t.Fatalf("version %d: %d items, want %d", n+1, i, len(want))
		}
	}
}
