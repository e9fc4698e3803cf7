package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

func testImportNew(t *testing.T, s evalrun.Store) {
	before := time.Now().Add(-time.Second)
	items := makeItems(3)
	v, created := mustImport(t, s, "qa", cloneItems(items))
	if !created || v.Version != 1 || v.Dataset != "qa" || v.ItemCount != 3 || v.Added != 3 || v.Changed != 0 || v.Removed != 0 {
		t.Fatalf("first import = %+v, created=%v; want version 1 of qa, 3 items, 3 added", v, created)
	}
	checkTime(t, "version CreatedAt", v.CreatedAt, v.CreatedAt.UTC())
	if v.CreatedAt.Before(before) {
		t.Fatalf("version CreatedAt %v is before the import", v.CreatedAt)
	}
	d, err := s.GetDataset(t.Context(), "qa")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "qa" || d.LatestVersion != 1 || d.ItemCount != 3 || d.CreatedAt.IsZero() || d.UpdatedAt.IsZero() {
		t.Fatalf("GetDataset = %+v", d)
	}
	vs, err := s.ListDatasetVersions(t.Context(), "qa")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Version != 1 || vs[0].ItemCount != 3 || vs[0].Added != 3 {
		t.Fatalf("ListDatasetVersions = %+v", vs)
	}
	diffItems(t, scanAll(t, s, "qa", 0), items)
	diffItems(t, scanAll(t, s, "qa", 1), items)
	if n := countRows(t, s, "qa"); n != 3 {
		t.Fatalf("item rows = %d, want 3", n)
	}
}

func testImportUnchanged(t *testing.T, s evalrun.Store) {
	items := makeItems(5)
	items[2].Metadata = map[string]any{"tags": []any{"a", "b"}, "n": 1.5}
	v1, _ := mustImport(t, s, "qa", cloneItems(items))
	rows := countRows(t, s, "qa")
	v, created := mustImport(t, s, "qa", cloneItems(items))
	if created || v.Version != 1 || v.ItemCount != 5 {
		t.Fatalf("identical re-import = %+v, created=%v; want version 1, not created", v, created)
	}
	if !v.CreatedAt.Equal(v1.CreatedAt) {
		t.Fatalf("identical re-import returned CreatedAt %v, want the first version's %v", v.CreatedAt, v1.CreatedAt)
	}
	vs, err := s.ListDatasetVersions(t.Context(), "qa")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 {
		t.Fatalf("%d versions after an identical re-import, want 1", len(vs))
	}
	if n := countRows(t, s, "qa"); n != rows {
		t.Fatalf("item rows = %d after an identical re-import, want %d", n, rows)
	}
}

func testImportChanged(t *testing.T, s evalrun.Store) {
	v1items := makeItems(4)
	mustImport(t, s, "qa", cloneItems(v1items))

	v2items := cloneItems(v1items)
	v2items[1] = item(v1items[1].ID, "question 1", "a better answer") // changed
	v2items = append(v2items[:2], v2items[3:]...)                     // item-0002 removed
	v2items = append(v2items, item("new", "new question", ""))        // added, no expected
	v, created := mustImport(t, s, "qa", cloneItems(v2items))
	if !created || v.Version != 2 || v.ItemCount != 4 || v.Added != 1 || v.Changed != 1 || v.Removed != 1 {
		t.Fatalf("second import = %+v, created=%v; want version 2, 4 items, +1 ~1 -1", v, created)
	}
	// The changed and the added item add one row each.
	if n := countRows(t, s, "qa"); n != 6 {
		t.Fatalf("item rows = %d, want 6 (4 + 1 changed + 1 added)", n)
	}
	diffItems(t, scanAll(t, s, "qa", 1), v1items)
	diffItems(t, scanAll(t, s, "qa", 2), v2items)
	diffItems(t, scanAll(t, s, "qa", 0), v2items)

	d, err := s.GetDataset(t.Context(), "qa")
	if err != nil {
		t.Fatal(err)
	}
	if d.LatestVersion != 2 || d.ItemCount != 4 {
		t.Fatalf("GetDataset = %+v, want latest version 2 with 4 items", d)
	}
	vs, err := s.ListDatasetVersions(t.Context(), "qa")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Version != 1 || vs[1].Version != 2 || vs[1].Changed != 1 || vs[0].ItemCount != 4 {
		t.Fatalf("ListDatasetVersions = %+v %+v", vs[0], vs[len(vs)-1])
	}
	if vs[1].CreatedAt.Before(vs[0].CreatedAt) {
		t.Fatalf("version 2 created at %v, before version 1 at %v", vs[1].CreatedAt, vs[0].CreatedAt)
	}

	// Going back to the first content is a new version too.
	v3, created := mustImport(t, s, "qa", cloneItems(v1items))
	if !created || v3.Version != 3 {
		t.Fatalf("third import = %+v, created=%v; want version 3", v3, created)
	}
	diffItems(t, scanAll(t, s, "qa", 3), v1items)
	diffItems(t, scanAll(t, s, "qa", 2), v2items)
}

func testImportReorderAndInsert(t *testing.T, s evalrun.Store) {
	items := makeItems(50)
	mustImport(t, s, "qa", cloneItems(items))

	// Moving one item creates a version and adds one row.
	moved := append([]*evalrun.Item{items[40]}, append(cloneItems(items[:40]), items[41:]...)...)
	v, created := mustImport(t, s, "qa", cloneItems(moved))
	if !created || v.Version != 2 || v.Added+v.Changed+v.Removed != 0 {
		t.Fatalf("reorder = %+v, created=%v; want version 2 with no item added, changed or removed", v, created)
	}
	if n := countRows(t, s, "qa"); n != 51 {
		t.Fatalf("item rows = %d after moving one item, want 51", n)
	}
	diffItems(t, scanAll(t, s, "qa", 2), moved)
	diffItems(t, scanAll(t, s, "qa", 1), items)

	// Inserting one item in the middle adds one row.
	inserted := cloneItems(moved)
	inserted = append(inserted[:25], append([]*evalrun.Item{item("mid", "inserted", "x")}, inserted[25:]...)...)
	if _, created := mustImport(t, s, "qa", cloneItems(inserted)); !created {
		t.Fatal("insert created no version")
	}
	if n := countRows(t, s, "qa"); n != 52 {
		t.Fatalf("item rows = %d after inserting one item, want 52", n)
	}
	diffItems(t, scanAll(t, s, "qa", 3), inserted)
	diffItems(t, scanAll(t, s, "qa", 2), moved)
}

func testImportRemoveAll(t *testing.T, s evalrun.Store) {
	mustImport(t, s, "qa", makeItems(3))
	v, created := mustImport(t, s, "qa", nil)
	if !created || v.Version != 2 || v.ItemCount != 0 || v.Removed != 3 {
		t.Fatalf("empty import = %+v, created=%v; want version 2 with 3 removed", v, created)
	}
	if got := scanAll(t, s, "qa", 2); len(got) != 0 {
		t.Fatalf("version 2 lists %d items, want 0", len(got))
	}
	if got := scanAll(t, s, "qa", 1); len(got) != 3 {
		t.Fatalf("version 1 lists %d items, want 3", len(got))
	}
	if v, created := mustImport(t, s, "qa", nil); created || v.Version != 2 {
		t.Fatalf("second empty import = %+v, created=%v; want version 2, not created", v, created)
	}
	// A new dataset may start empty.
	if v, created := mustImport(t, s, "empty", nil); !created || v.Version != 1 || v.ItemCount != 0 {
		t.Fatalf("empty new dataset = %+v, created=%v; want version 1", v, created)
	}
}

func testImportInvalid(t *testing.T, s evalrun.Store) {
	good := makeItems(3)
	mustImport(t, s, "qa", cloneItems(good))
	rows := countRows(t, s, "qa")
	cases := []struct {
		name  string
		items []*evalrun.Item
	}{
		{"empty id", append(cloneItems(good), item("", "x", ""))},
		{"duplicate id", append(cloneItems(good), item(good[0].ID, "x", ""))},
		{"empty input", append(cloneItems(good), &evalrun.Item{ID: "z"})},
		{"nil item", append(cloneItems(good), nil)},
		{"metadata not JSON", append(cloneItems(good), &evalrun.Item{ID: "m", Input: evalrun.String("x"), Metadata: map[string]any{"f": func() {}}})},
	}
	for _, c := range cases {
		_, created, err := s.ImportDataset(t.Context(), "qa", c.items)
		wantErr(t, c.name, err, evalrun.ErrInvalid)
		if created {
			t.Fatalf("%s: created = true on error", c.name)
		}
		_, _, err = s.ImportDataset(t.Context(), "fresh", c.items)
		wantErr(t, c.name+" (new dataset)", err, evalrun.ErrInvalid)
	}
	_, _, err := s.ImportDataset(t.Context(), "", good)
	wantErr(t, "empty dataset name", err, evalrun.ErrInvalid)

	// Nothing was written.
	vs, err := s.ListDatasetVersions(t.Context(), "qa")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 {
		t.Fatalf("%d versions after rejected imports, want 1", len(vs))
	}
	if n := countRows(t, s, "qa"); n != rows {
		t.Fatalf("item rows = %d after rejected imports, want %d", n, rows)
	}
	_, err = s.GetDataset(t.Context(), "fresh")
	wantErr(t, "dataset of rejected imports", err, evalrun.ErrNotFound)
	if n := countRows(t, s, "fresh"); n != 0 {
		t.Fatalf("item rows of a rejected dataset = %d, want 0", n)
	}
	ds, err := s.ListDatasets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 {
		t.Fatalf("ListDatasets = %d datasets, want 1", len(ds))
	}
}

func testItemRoundTrip(t *testing.T, s evalrun.Store) {
	items := []*evalrun.Item{
		{ID: "obj", Input: json.RawMessage(`{"b": [1, 2.50, "x"],  "a":{"nested": true}}`), Expected: json.RawMessage(`{"k":"v"}`)},
		{ID: "str", Input: json.RawMessage(`"h\u00e9llo \"world\""`), Expected: json.RawMessage(`""`)},
		{ID: "num", Input: json.RawMessage(`42`), Expected: json.RawMessage(`null`)},
		{ID: "meta", Input: evalrun.String("x"), Metadata: map[string]any{
			"tags":   []any{"smoke", "math"},
			"level":  3.0,
			"nested": map[string]any{"k": []any{1.0, "two", nil, false}},
		}},
		{ID: "tag", Input: evalrun.String("y"), Metadata: map[string]any{"tags": "single"}},
		{ID: "ünïcode id with spaces", Input: evalrun.String("z")},
	}
	mustImport(t, s, "rt", cloneItems(items))
	got := scanAll(t, s, "rt", 1)
	diffItems(t, got, items)
	if got[5].Expected != nil {
		t.Fatalf("absent expected came back as %q, want nil", got[5].Expected)
	}
	if got[1].Expected == nil || string(got[1].Expected) != `""` {
		t.Fatalf("empty-string expected came back as %q", got[1].Expected)
	}
	if tags := got[3].Tags(); len(tags) != 2 || tags[0] != "smoke" || tags[1] != "math" {
		t.Fatalf("tags = %v", tags)
	}
	if tags := got[4].Tags(); len(tags) != 1 || tags[0] != "single" {
		t.Fatalf("tags = %v", tags)
	}
}

func testImportCopiesItems(t *testing.T, s evalrun.Store) {
	items := makeItems(2)
	mustImport(t, s, "qa", items)
	items[0].Input[1] = 'X' // the caller reuses its buffer
	items[1].ID = "changed"
	got := scanAll(t, s, "qa", 1)
	if got[0].ID != "item-0000" || string(got[0].Input) != `"question 0"` || got[1].ID != "item-0001" {
		t.Fatalf("the store kept the caller's items, not copies: %s, %s", show(got[0]), show(got[1]))
	}
	got[0].Input = evalrun.String("mutated by reader")
	if again := scanAll(t, s, "qa", 1); string(again[0].Input) != `"question 0"` {
		t.Fatalf("a reader's change reached the store: %s", show(again[0]))
	}
}

func testListDatasets(t *testing.T, s evalrun.Store) {
	ds, err := s.ListDatasets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 0 {
		t.Fatalf("empty store lists %d datasets", len(ds))
	}
	for _, name := range []string{"zeta", "alpha", "mid"} {
		mustImport(t, s, name, makeItems(2))
	}
	mustImport(t, s, "mid", makeItems(5))
	ds, err = s.ListDatasets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 3 || ds[0].Name != "alpha" || ds[1].Name != "mid" || ds[2].Name != "zeta" {
		t.Fatalf("ListDatasets = %v, want alpha, mid, zeta", names(ds))
	}
	if ds[1].LatestVersion != 2 || ds[1].ItemCount != 5 || ds[0].LatestVersion != 1 || ds[0].ItemCount != 2 {
		t.Fatalf("ListDatasets: %+v %+v", ds[0], ds[1])
	}
	if ds[1].UpdatedAt.Before(ds[1].CreatedAt) {
		t.Fatalf("dataset updated at %v, before its creation at %v", ds[1].UpdatedAt, ds[1].CreatedAt)
	}
}

func names(ds []*evalrun.Dataset) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}

func testScanItemsStops(t *testing.T, s evalrun.Store) {
	mustImport(t, s, "qa", makeItems(10))
	stop := errors.New("stop")
	calls := 0
	err := s.ScanItems(t.Context(), "qa", 0, func(it *evalrun.Item) error {
		calls++
		if calls == 3 {
			return fmt.Errorf("wrapped: %w", stop)
		}
		return nil
	})
	wantErr(t, "ScanItems with a failing fn", err, stop)
	if calls != 3 {
		t.Fatalf("fn called %d times, want 3", calls)
	}
}

// testReimportLarge is the product's promise: re-importing a 100,000-item
// dataset with one item changed adds exactly one item row.
func testReimportLarge(t *testing.T, s evalrun.Store) {
	n := 100_000
	if testing.Short() {
		n = 2_000
	}
	items := make([]*evalrun.Item, n)
	for i := range items {
		items[i] = &evalrun.Item{
			ID:       fmt.Sprintf("q%06d", i),
			Input:    json.RawMessage(fmt.Sprintf(`{"question":"what is %d + %d?"}`, i, i)),
			Expected: json.RawMessage(fmt.Sprint(2 * i)),
			Metadata: map[string]any{"tags": []any{"math"}},
		}
	}
	mustImport(t, s, "big", items)
	if got := countRows(t, s, "big"); got != n {
		t.Fatalf("item rows = %d after the first import, want %d", got, n)
	}
	next := cloneItems(items)
	changed := n / 2
	next[changed] = &evalrun.Item{ID: items[changed].ID, Input: items[changed].Input, Expected: json.RawMessage(`"changed"`), Metadata: items[changed].Metadata}
	v, created := mustImport(t, s, "big", next)
	if !created || v.Version != 2 || v.Changed != 1 || v.Added != 0 || v.Removed != 0 || v.ItemCount != n {
		t.Fatalf("re-import = %+v, created=%v; want version 2 with one item changed", v, created)
	}
	if got := countRows(t, s, "big"); got != n+1 {
		t.Fatalf("item rows = %d after changing one item, want %d", got, n+1)
	}
	i := 0
	err := s.ScanItems(t.Context(), "big", 2, func(it *evalrun.Item) error {
		want := next[i]
		if it.ID != want.ID || string(it.Expected) != string(want.Expected) {
			return fmt.Errorf("item %d = %s, want %s", i, show(it), show(want))
		}
		i++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Fatalf("version 2 lists %d items, want %d", i, n)
	}
	old := scanAll(t, s, "big", 1)
	if string(old[changed].Expected) != string(items[changed].Expected) {
		t.Fatalf("version 1's item %d = %s, want it unchanged", changed, show(old[changed]))
	}
}

func testNotFound(t *testing.T, s evalrun.Store) {
	ctx := t.Context()
	mustImport(t, s, "qa", makeItems(1))
	_, err := s.GetDataset(ctx, "nope")
	wantErr(t, "GetDataset", err, evalrun.ErrNotFound)
	_, err = s.ListDatasetVersions(ctx, "nope")
	wantErr(t, "ListDatasetVersions", err, evalrun.ErrNotFound)
	called := false
	err = s.ScanItems(ctx, "nope", 0, func(*evalrun.Item) error { called = true; return nil })
	wantErr(t, "ScanItems of an unknown dataset", err, evalrun.ErrNotFound)
	err = s.ScanItems(ctx, "qa", 2, func(*evalrun.Item) error { called = true; return nil })
	wantErr(t, "ScanItems of an unknown version", err, evalrun.ErrNotFound)
	err = s.ScanItems(ctx, "qa", -1, func(*evalrun.Item) error { called = true; return nil })
	wantErr(t, "ScanItems of version -1", err, evalrun.ErrNotFound)
	_, err = s.GetRun(ctx, "nope")
	wantErr(t, "GetRun", err, evalrun.ErrNotFound)
	err = s.UpdateRun(ctx, &evalrun.Run{ID: "nope", Status: evalrun.RunRunning})
	wantErr(t, "UpdateRun", err, evalrun.ErrNotFound)
	err = s.ScanResults(ctx, "nope", evalrun.ResultQuery{}, func(*evalrun.ItemResult) error { called = true; return nil })
	wantErr(t, "ScanResults", err, evalrun.ErrNotFound)
	err = s.ScanResultKeys(ctx, "nope", func(evalrun.ResultKey) error { called = true; return nil })
	wantErr(t, "ScanResultKeys", err, evalrun.ErrNotFound)
	if called {
		t.Fatal("a scan of something missing called fn")
	}
	if _, err := s.GetRun(ctx, "nope"); err == nil || !errors.Is(err, evalrun.ErrNotFound) {
		t.Fatal("GetRun after UpdateRun of a missing run found it")
	}
}
