package postgres_test

import (
	"fmt"
	"testing"

	"github.com/evalrun/evalrun/storetest"
)

// BenchmarkWriteResults:
// TEST_DATABASE_URL=... go test -run '^$' -bench WriteResults ./postgres/
func BenchmarkWriteResults(b *testing.B) {
	for _, batch := range []int{256, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			storetest.BenchWriteResults(b, openTemp(b), batch)
		})
	}
}

// BenchmarkScanResults: a full scan of a finished 100,000-result run (three
// scorers, items joined):
// TEST_DATABASE_URL=... go test -run '^$' -bench ScanResults -benchtime 5x ./postgres/
func BenchmarkScanResults(b *testing.B) {
	storetest.BenchScanResults(b, openTemp(b), 100_000)
}
