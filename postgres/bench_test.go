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
