package cli

import (
	"fmt"
	"io"
)

// The open-file limit (RLIMIT_NOFILE) bounds the items in flight: an item
// of a network target holds a connection, and a judge's or an embedder's
// call another, each a file descriptor; an exec target's program holds
// nine while it starts (see fdsPerItem). Past the limit, dials and spawns
// fail with "too many open files" and the items fail for nothing. Go raises the soft
// limit to the hard one at start-up (since Go 1.19), so what remains is
// the hard limit, which only an administrator raises.
const (
	// fdReserve is kept for everything else: the standard streams, the
	// store (SQLite's database, WAL and shared-memory files, or a
	// PostgreSQL pool), report files, the runtime's own.
	fdReserve = 64
)

// fdsPerItem is how many file descriptors an item in flight may hold for
// a target kind; 0 means none (nothing to clamp).
func fdsPerItem(kind string) int {
	switch kind {
	case "echo", "outputs":
		return 0
	case "exec":
		// Its peak, while the program starts: three pipes (six
		// descriptors until the child's ends are closed), the runtime's
		// fork status pipe (two) and a pidfd.
		return 9
	default:
		return 2
	}
}

// clampToOpenFiles returns the concurrency a run of a target kind can keep
// in flight under an open-file limit of limit descriptors (0: unknown or
// unlimited), and whether it had to be lowered.
func clampToOpenFiles(concurrency int, kind string, limit uint64) (int, bool) {
	per := fdsPerItem(kind)
	if per == 0 || limit == 0 {
		return concurrency, false
	}
	fit := 1
	if limit > fdReserve {
		fit = max(int(min((limit-fdReserve)/uint64(per), uint64(concurrency))), 1)
	}
	return fit, fit < concurrency
}

// fitConcurrency returns concurrency clamped to the process's open-file
// limit for a target kind, printing a one-line warning to w when it lowers
// it.
func fitConcurrency(w io.Writer, concurrency int, kind string) int {
	limit, ok := openFileLimit()
	if !ok {
		return concurrency
	}
	fit, lowered := clampToOpenFiles(concurrency, kind, limit)
	if lowered {
		fmt.Fprintf(w, "warning: concurrency %d needs more open files than the limit of %d (ulimit -n): running %d items at once; raise the hard limit to run more\n",
			concurrency, limit, fit)
	}
	return fit
}
