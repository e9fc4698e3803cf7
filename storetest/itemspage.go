package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/evalrun/evalrun"
)

// testItemsPage walks versions page by page: every page size gives the
// version's items once, in order, including an older version after a
// reorder and insert; bad arguments and unknown names are refused.
func testItemsPage(t *testing.T, s evalrun.Store) {
	ctx := context.Background()
	v1 := makeItems(7)
	if _, _, err := s.ImportDataset(ctx, "pages", v1); err != nil {
		t.Fatal(err)
	}
	// Version 2: reversed, one changed, one inserted in the middle.
	v2 := slices.Clone(v1)
	slices.Reverse(v2)
	v2[2] = item(v2[2].ID, "changed", "")
	v2 = slices.Insert(v2, 4, item("new-one", "x", ""))
	if _, _, err := s.ImportDataset(ctx, "pages", v2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version int
		want    []*evalrun.Item
	}{{1, v1}, {2, v2}} {
		for _, size := range []int{1, 2, 3, len(tc.want), len(tc.want) + 5} {
			var got []string
			var after []byte
			for pages := 0; ; pages++ {
				if pages > len(tc.want)+1 {
					t.Fatalf("v%d size %d: more pages than items", tc.version, size)
				}
				items, next, err := s.ItemsPage(ctx, "pages", tc.version, after, size)
				if err != nil {
					t.Fatalf("v%d size %d: %v", tc.version, size, err)
				}
				if len(items) > size {
					t.Fatalf("v%d size %d: page of %d", tc.version, size, len(items))
				}
				if len(items) == 0 {
					if next != nil {
						t.Fatalf("v%d: empty page with cursor %q", tc.version, next)
					}
					break
				}
				for _, it := range items {
					got = append(got, it.ID+"="+string(it.Input))
				}
				after = next
			}
			var want []string
			for _, it := range tc.want {
				want = append(want, it.ID+"="+string(it.Input))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("v%d size %d:\n got %v\nwant %v", tc.version, size, got, want)
			}
		}
	}
	if _, _, err := s.ItemsPage(ctx, "pages", 0, nil, 5); !errors.Is(err, evalrun.ErrInvalid) {
		t.Errorf("version 0: %v, want ErrInvalid", err)
	}
	if _, _, err := s.ItemsPage(ctx, "pages", 1, nil, 0); !errors.Is(err, evalrun.ErrInvalid) {
		t.Errorf("limit 0: %v, want ErrInvalid", err)
	}
	if _, _, err := s.ItemsPage(ctx, "pages", 3, nil, 5); !errors.Is(err, evalrun.ErrNotFound) {
		t.Errorf("version 3: %v, want ErrNotFound", err)
	}
	if _, _, err := s.ItemsPage(ctx, "nope", 1, nil, 5); !errors.Is(err, evalrun.ErrNotFound) {
		t.Errorf("unknown dataset: %v, want ErrNotFound", err)
	}
}
