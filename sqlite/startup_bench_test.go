package sqlite_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/sqlite"
)

// BenchmarkFreshStart is what `evalrun run` does before its first item on
// workload W1 of docs/benchmarks.md: open (create and migrate) a fresh
// database file, import a 1,000-item JSONL file, then close it (the WAL
// checkpoint of the tail): go test -run '^$' -bench FreshStart ./sqlite/
func BenchmarkFreshStart(b *testing.B) {
	const n = 1000
	dir := b.TempDir()
	path := filepath.Join(dir, "items.jsonl")
	var buf bytes.Buffer
	for i := range n {
		in := fmt.Sprintf("item %06d: what is %d + %d?", i, i%97, i%89)
		fmt.Fprintf(&buf, `{"id":"i%06d","input":%q,"expected_output":%q}`+"\n", i, in, in)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		db := filepath.Join(dir, fmt.Sprintf("fresh%d.db", i))
		s, err := sqlite.Open(b.Context(), db)
		if err != nil {
			b.Fatal(err)
		}
		v, created, err := dataset.Import(b.Context(), s, "w1", path)
		if err != nil || !created || v.ItemCount != n {
			b.Fatalf("import: %+v created=%v %v", v, created, err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
