package inmem_test

import (
	"fmt"
	"testing"

	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/storetest"
)

// BenchmarkWriteResults: go test -run '^$' -bench WriteResults ./inmem/
func BenchmarkWriteResults(b *testing.B) {
	for _, batch := range []int{256, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			storetest.BenchWriteResults(b, inmem.New(), batch)
		})
	}
}

// BenchmarkScanResults: a full scan of a finished 100,000-result run (three
// scorers, items joined): go test -run '^$' -bench ScanResults -benchtime 5x ./inmem/
func BenchmarkScanResults(b *testing.B) {
	storetest.BenchScanResults(b, inmem.New(), 100_000)
}
