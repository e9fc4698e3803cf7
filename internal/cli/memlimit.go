package cli

import (
	"os"
	"runtime/debug"
)

// Soft memory limit of --no-retain runs.
//
// A run that keeps no results (execution.retain_results: false) has a small
// live heap: the items in flight and those whose results wait for the
// store (the engine streams items from the store, it does not hold the
// dataset), the writer's queue (bounded in bytes, see
// engine.Options.WriterBufferBytes) and, when the report is built after
// the run, its accumulators (about reportPerExecution bytes per result).
// But every result passes through several short-lived copies (the
// response body, the decoded output, its JSON, the scorer's text, the
// store's argument copy, the report's scan reading it back): ~60 KB of
// garbage per 10 KB output. With GOGC's default the heap may grow to twice
// the live heap between collections, and on a busy machine the collector
// falls behind the allocation. A soft limit makes the collector run before
// the garbage piles up, for some CPU (see docs/benchmarks.md, "Scale:
// memory").
const (
	// memLimitFloor is the least limit: the live heap of a run (items in
	// flight, the writer's queue) plus ~20 MB of garbage between
	// collections. Measured on W3 (medians of 3, docs/benchmarks.md,
	// when the CLI still held the items): no limit 120 MB of RSS and
	// 33 s of CPU; 48 MiB 99.7 MB, 34 s; 44 MiB 94 MB, 39 s; 40 MiB
	// 89 MB, 42 s.
	memLimitFloor = 44 << 20
	// reportPerExecution is what the report built after the run keeps per
	// result: its latency and one score per scorer for the percentiles
	// (overall and its cohort), the repeat counters (~40 bytes with one
	// scorer), rounded up.
	reportPerExecution = 48
)

// noRetainMemoryLimit returns the soft memory limit of a --no-retain run
// of executions item executions: memLimitFloor plus what the report's
// accumulators hold, so that a huge run's live heap stays under the limit
// (above it, the collector would run continuously, up to its CPU cap of
// about half the process's CPU).
func noRetainMemoryLimit(executions int) int64 {
	return memLimitFloor + reportPerExecution*int64(executions)
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
