package cli

import (
	"runtime/debug"
	"testing"
)

// TestReportMemoryLimit checks the report's limit: its floor, and 8 bytes
// per result for its latency and per scorer for its score.
func TestReportMemoryLimit(t *testing.T) {
	if got := reportMemoryLimit(0, 3); got != reportLimitFloor {
		t.Errorf("no executions: %d, want the floor %d", got, reportLimitFloor)
	}
	// M1 of docs/benchmarks.md: 1,000,000 results, one scorer: ~31 MiB,
	// the limit measured there.
	if got, want := reportMemoryLimit(1_000_000, 1), int64(reportLimitFloor+16_000_000); got != want || got > 36<<20 {
		t.Errorf("1,000,000 executions, 1 scorer: %d, want %d (at most 36 MiB)", got, want)
	}
	if reportMemoryLimit(1000, 2) <= reportMemoryLimit(1000, 1) {
		t.Error("a second scorer does not raise the limit")
	}
}

// TestSetMemoryLimit checks that the limit is set and restored, and left
// alone when GOMEMLIMIT is set.
func TestSetMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	const limit = 1 << 40
	t.Setenv("GOMEMLIMIT", "1GiB")
	restore := setMemoryLimit(limit)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("GOMEMLIMIT set: limit %d, want it unchanged (%d)", got, before)
	}
	restore()

	t.Setenv("GOMEMLIMIT", "") // empty: unset, for the runtime too
	restore = setMemoryLimit(limit)
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("GOMEMLIMIT unset: limit %d, want %d", got, limit)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after restore: limit %d, want %d", got, before)
	}
}
