package dataset_test

import (
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/sqlite"
)

// Import streams a file into a store in passes; what it stores and what it
// refuses are what Read gives for the same file.
func TestImportStreamsLikeRead(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.Open(t.Context(), filepath.Join(dir, "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	base := dataset.DeriveID(&evalrun.Item{Input: []byte(`{"a":1,"b":2}`)})
	files := []struct{ name, content string }{
		{"derived.jsonl", `{"input": {"b": 2, "a": 1.0}}` + "\n" + `{"input": "other"}` + "\n" + `{"input": {"a":1,"b":2}}` + "\n" +
			`{"id": "` + base + `-2", "input": "taken"}` + "\n" + `{"input": {"a":1,"b":2}}` + "\n" + `{"id": "` + base + `", "input": "mine"}` + "\n"},
		{"repeats.jsonl", "{\"input\":\"x\"}\n{\"input\":\"x\"}\n{\"id\":\"q\",\"input\":\"x\"}\n{\"input\":\"x\"}\n"},
		{"dup.jsonl", "{\"id\":\"a\",\"input\":1}\n{\"id\":\"b\",\"input\":2}\n\n{\"id\":\"a\",\"input\":3}\n"},
		{"dup-derived.jsonl", "{\"input\":1}\n{\"id\":\"q\",\"input\":2}\n{\"id\":\"q\",\"input\":1}\n"},
		{"dup.json", `[{"id":"a","input":1},` + "\n\n" + `{"id":"a","input":2}]`},
		{"dup.csv", "id,input\na,x\nb,y\na,z\n"},
		{"malformed-after-dup.jsonl", "{\"id\":\"a\",\"input\":1}\n{\"id\":\"a\",\"input\":2}\n{\"input\":\n"},
		{"empty.jsonl", "\n\n"},
	}
	for i, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, []byte(f.content), 0o644); err != nil {
			t.Fatal(err)
		}
		want, wantErr := dataset.ReadFile(path)
		name := string(rune('a' + i))
		v, created, err := dataset.Import(t.Context(), s, name, path)
		if wantErr != nil {
			if err == nil || err.Error() != wantErr.Error() || !errors.Is(err, evalrun.ErrInvalid) || created {
				t.Fatalf("%s: Import = created %v, %v; want Read's error %v", f.name, created, err, wantErr)
			}
			if _, err := s.GetDataset(t.Context(), name); !errors.Is(err, evalrun.ErrNotFound) {
				t.Fatalf("%s: a refused file left dataset %s: %v", f.name, name, err)
			}
			continue
		}
		if err != nil || !created || v.ItemCount != len(want) {
			t.Fatalf("%s: Import = %+v, created %v, %v; want %d items", f.name, v, created, err, len(want))
		}
		var got []*evalrun.Item
		if err := s.ScanItems(t.Context(), name, 0, func(it *evalrun.Item) error {
			got = append(got, it)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for j := range want {
			if got[j].ID != want[j].ID || string(got[j].Input) != string(want[j].Input) {
				t.Fatalf("%s: item %d = %q %s, Read gives %q %s", f.name, j, got[j].ID, got[j].Input, want[j].ID, want[j].Input)
			}
		}
	}
}

// rewritingStore rewrites the file being imported when the import's
// second pass starts: the file changed between the passes.
type rewritingStore struct {
	evalrun.Store
	path, content string
}

func (r *rewritingStore) ImportItems(ctx context.Context, name string, items iter.Seq2[*evalrun.Item, error]) (evalrun.DatasetVersion, bool, error) {
	if err := os.WriteFile(r.path, []byte(r.content), 0o644); err != nil {
		return evalrun.DatasetVersion{}, false, err
	}
	return r.Store.ImportItems(ctx, name, items)
}

// A file changed between the passes so that two items without an id
// derive the same id (the first pass planned no repeat) is reported as
// changed, not as a "duplicate id" the user never wrote; nothing is
// stored.
func TestImportFileChangedIntoRepeats(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.Open(t.Context(), filepath.Join(dir, "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	path := filepath.Join(dir, "f.jsonl")
	if err := os.WriteFile(path, []byte("{\"input\":1}\n{\"input\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := &rewritingStore{Store: s, path: path, content: "{\"input\":1}\n{\"input\":1}\n"}
	_, _, err = dataset.Import(t.Context(), store, "d", path)
	if err == nil || !strings.Contains(err.Error(), "changed while being imported") || strings.Contains(err.Error(), "duplicate id") {
		t.Errorf("import of a file changed into repeats: %v, want it reported as changed while being imported", err)
	}
	if _, err := s.ListDatasetVersions(t.Context(), "d"); !errors.Is(err, evalrun.ErrNotFound) {
		t.Errorf("after the refused import: %v, want no dataset", err)
	}
}
