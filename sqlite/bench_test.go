package sqlite_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/sqlite"
	"github.com/evalrun/evalrun/storetest"
)

// BenchmarkWriteResults: go test -run '^$' -bench WriteResults ./sqlite/
func BenchmarkWriteResults(b *testing.B) {
	for _, batch := range []int{256, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchWriteResults(b, s, batch)
		})
	}
}

// BenchmarkImportJSONL: read a 100,000-item JSONL file and import it as a
// new dataset: go test -run '^$' -bench ImportJSONL -benchtime 3x ./sqlite/
func BenchmarkImportJSONL(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	path := filepath.Join(dir, "items.jsonl")
	var buf bytes.Buffer
	for i := range n {
		fmt.Fprintf(&buf, `{"id":"q%06d","input":{"question":"What is %d + %d?","context":"arithmetic"},"expected_output":"%d","metadata":{"tags":["math","easy"]}}`+"\n", i, i, i, 2*i)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := sqlite.Open(b.Context(), filepath.Join(dir, "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.SetBytes(int64(buf.Len()))
	i := 0
	for b.Loop() {
		i++
		v, created, err := dataset.Import(b.Context(), s, fmt.Sprintf("ds%d", i), path)
		if err != nil || !created || v.ItemCount != n {
			b.Fatalf("import: %+v created=%v %v", v, created, err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(i), "s/import")
}

// BenchmarkReimportJSONL: re-import a 100,000-item JSONL file into its
// dataset, unchanged and with one item changed:
// go test -run '^$' -bench ReimportJSONL -benchtime 3x ./sqlite/
func BenchmarkReimportJSONL(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	write := func(name string, changed int) string {
		var buf bytes.Buffer
		for i := range n {
			answer := fmt.Sprint(2 * i)
			if i == changed {
				answer = "changed"
			}
			fmt.Fprintf(&buf, `{"id":"q%06d","input":{"question":"What is %d + %d?","context":"arithmetic"},"expected_output":"%s","metadata":{"tags":["math","easy"]}}`+"\n", i, i, i, answer)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		return path
	}
	same, changed := write("same.jsonl", -1), write("changed.jsonl", n/2)
	s, err := sqlite.Open(b.Context(), filepath.Join(dir, "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, _, err := dataset.Import(b.Context(), s, "ds", same); err != nil {
		b.Fatal(err)
	}
	b.Run("unchanged", func(b *testing.B) {
		for b.Loop() {
			if _, created, err := dataset.Import(b.Context(), s, "ds", same); err != nil || created {
				b.Fatalf("re-import: created=%v %v", created, err)
			}
		}
	})
	i := 0 // the benchmark function may run more than once: alternate across runs
	b.Run("one-changed", func(b *testing.B) {
		for b.Loop() {
			path := same
			if i%2 == 0 {
				path = changed
			}
			i++
			if _, created, err := dataset.Import(b.Context(), s, "ds", path); err != nil || !created {
				b.Fatalf("re-import: created=%v %v", created, err)
			}
		}
	})
}

// BenchmarkScanResults: a full scan of a finished 100,000-result run (three
// scorers, items joined): go test -run '^$' -bench ScanResults -benchtime 5x ./sqlite/
func BenchmarkScanResults(b *testing.B) {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchScanResults(b, s, 100_000)
}
