package cli

import (
	"runtime/debug"
	"testing"
)

// TestNoRetainMemoryLimit checks the limit's floor and that it grows with
// the report's accumulators only (items are streamed, not held).
func TestNoRetainMemoryLimit(t *testing.T) {
	if got := noRetainMemoryLimit(0); got != memLimitFloor {
		t.Errorf("no executions: %d, want the floor %d", got, memLimitFloor)
	}
	// 1,000,000 executions: ~48 MB of report accumulators on top.
	if got, want := noRetainMemoryLimit(1_000_000), int64(memLimitFloor+48_000_000); got != want {
		t.Errorf("1,000,000 executions: %d, want %d", got, want)
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
