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
// dataset) and the writer's queue (bounded in bytes, see
// engine.Options.WriterBufferBytes): a few MB whatever the dataset's size.
// The report built after the run from storage holds its accumulators, a
// few bytes per result (see reportMemoryLimit).
// But every result passes through several short-lived copies (the
// response body, the decoded output, its JSON, the scorer's text, the
// store's argument copy, the report's scan reading it back): garbage of a
// few times each output's size. With GOGC's default the heap may grow to twice
// the live heap between collections, and on a busy machine the collector
// falls behind the allocation. A soft limit makes the collector run before
// the garbage piles up, for some CPU (see docs/benchmarks.md, "Scale:
// memory").
const (
	// memLimitFloor is the least limit: the live heap of a run (items in
	// flight, the writer's queue of at most noRetainWriterBytes) plus
	// garbage between collections. Measured on W3 at 100,000 items
	// (docs/benchmarks.md, "Scale: memory"): with the writer's 8 MB and
	// 44 MiB, 71–72 MB of RSS; with 2 MiB and 24 MiB, 57 MB, for less CPU
	// than before once the http target and Text stopped making most of
	// the garbage (a 32 MiB limit no longer bound: the heap stayed under
	// it, 62 MB of RSS).
	memLimitFloor = 24 << 20
	// reportLimitFloor is the least limit while the report of a
	// --no-retain run is built from storage: the store's scan and the
	// report's fixed parts (~10 MB) plus room for garbage. Measured on M1
	// of docs/benchmarks.md (1,000,000 results, one scorer): the limit of
	// the run (44 MiB + 16 MB) let the report pass peak at 91 MB of RSS;
	// a 20 MiB floor (a 35 MiB limit) 82.1 MB, 16 MiB (31 MiB) 78.4 MB,
	// for the same CPU (medians of 3).
	reportLimitFloor = 16 << 20
)

// noRetainWriterBytes bounds the bytes of results a --no-retain run's
// writer queues (engine.Options.WriterBufferBytes) instead of the engine's
// 8 MB: that queue is most of such a run's live heap, and the soft limit
// (memLimitFloor) must leave it room. 2 MiB is ~200 results of 10 KB, a
// full batch for the store; results of 200 bytes are bounded by the
// queue's count (engine.DefaultWriterBuffer) before this.
const noRetainWriterBytes = 2 << 20

// noRetainMemoryLimit is the soft memory limit of a --no-retain run while
// it executes: the live heap does not grow with the dataset.
func noRetainMemoryLimit() int64 { return memLimitFloor }

// reportMemoryLimit is the soft memory limit while the report of a
// --no-retain run of executions results and scorers scorers is built from
// storage: reportLimitFloor plus what its accumulators keep per result, a
// latency and an overall score per scorer (8 bytes each) for the
// percentiles, so that a huge run's live heap stays under the limit (above
// it, the collector would run continuously, up to its CPU cap of about half
// the process's CPU). Tags add a score per cohort, repeats 4 bytes per
// item and scorer: the limit is soft, they cost only some collection.
func reportMemoryLimit(executions, scorers int) int64 {
	return reportLimitFloor + 8*int64(1+scorers)*int64(executions)
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
