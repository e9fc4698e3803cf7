package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"

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
