package cli

import (
	"os"
	"runtime/debug"

	"github.com/evalrun/evalrun"
)

// Soft memory limit of --no-retain runs.
//
// A run that keeps no results (execution.retain_results: false) has a small
// live heap: the selected items the engine is given (~150 bytes each plus
// their input and expected output), the in-flight results and the report's
// accumulators (~60 bytes per result). But every result passes through
// several short-lived copies (the response body, the decoded output, its
// JSON, the scorer's text, the store's argument copy, the report's scan
// reading it back): ~60 KB of garbage per 10 KB output. With GOGC's default
// the heap may grow to twice the live heap between collections, and on a
// busy machine the collector falls behind the allocation: W3 of
// docs/benchmarks.md (100,000 items × 10 KB outputs) has ~25–30 MB live but
// its Go memory peaked at 95–99 MB. A soft limit makes the collector run
// before the garbage piles up, for some CPU (see docs/benchmarks.md).
const (
	// memLimitFloor is the least limit: the live heap of a run of ~100,000
	// small items plus ~20 MB of garbage between collections. Measured on
	// W3 (medians of 3, docs/benchmarks.md): no limit 120 MB of RSS and
	// 33 s of CPU; 48 MiB 99.7 MB, 34 s; 44 MiB 94 MB, 39 s; 40 MiB
	// 89 MB, 42 s. At 64 MiB the limit never binds (GOGC's heap goal,
	// twice the live heap, stays below it).
	memLimitFloor = 44 << 20
	// itemOverhead is the memory of a held item besides its id, input
	// and expected output (struct, metadata map, slice header: ~110
	// bytes measured) plus the report's accumulators for its result
	// (~60 bytes).
	itemOverhead = 170
)

// noRetainMemoryLimit returns the soft memory limit of a --no-retain run
// over items: memLimitFloor, or twice the estimated memory of the items
// when that is more, so that a big dataset's live heap stays well under
// the limit (above it, the collector would run continuously, up to its CPU
// cap of about half the process's CPU).
func noRetainMemoryLimit(items []*evalrun.Item) int64 {
	var held int64
	for _, it := range items {
		held += itemOverhead + int64(len(it.ID)+len(it.Input)+len(it.Expected))
	}
	return max(memLimitFloor, 2*held)
}

// setMemoryLimit sets the runtime's soft memory limit to limit unless the
// user set GOMEMLIMIT (non-empty, as the runtime reads it), whose value
// then stands. The returned function restores the previous limit.
func setMemoryLimit(limit int64) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }
}
