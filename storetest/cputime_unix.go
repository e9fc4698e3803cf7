//go:build unix

package storetest

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) the process has used, for
// benchmarks on shared machines where wall time varies with the load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
