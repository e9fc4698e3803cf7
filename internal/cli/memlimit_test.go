package cli

import (
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

// TestNoRetainMemoryLimit checks the limit's floor and that it grows with
// the items held, so that a big dataset's live heap stays under it.
func TestNoRetainMemoryLimit(t *testing.T) {
	if got := noRetainMemoryLimit(nil); got != memLimitFloor {
		t.Errorf("no items: %d, want the floor %d", got, memLimitFloor)
	}
	small := make([]*evalrun.Item, 1000)
	for i := range small {
		small[i] = &evalrun.Item{ID: "q", Input: evalrun.String("question")}
	}
	if got := noRetainMemoryLimit(small); got != memLimitFloor {
		t.Errorf("1,000 small items: %d, want the floor %d", got, memLimitFloor)
	}
	// W3 of docs/benchmarks.md: 100,000 items like these get the floor,
	// the limit it was measured with.
	w3 := make([]*evalrun.Item, 100_000)
	for i := range w3 {
		in := evalrun.String(fmt.Sprintf("item %d: say it back", i))
		w3[i] = &evalrun.Item{ID: fmt.Sprintf("i%06d", i), Input: in, Expected: in}
	}
	if got := noRetainMemoryLimit(w3); got != memLimitFloor {
		t.Errorf("W3's 100,000 items: %d, want the floor %d", got, memLimitFloor)
	}
	// 200,000 items of ~1 KB: ~230 MB held, the limit twice that.
	input := evalrun.String(strings.Repeat("x", 1000))
	big := make([]*evalrun.Item, 200_000)
	for i := range big {
		big[i] = &evalrun.Item{ID: "q", Input: input}
	}
	held := int64(len(big)) * (itemOverhead + 1 + int64(len(input)))
	if got := noRetainMemoryLimit(big); got != 2*held || got <= memLimitFloor {
		t.Errorf("200,000 1 KB items: %d, want %d (above the floor)", got, 2*held)
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
