//go:build unix

package cli

import "golang.org/x/sys/unix"

// openFileLimit returns the process's soft open-file limit (which Go has
// raised to the hard limit at start-up); false when it cannot be read or
// is unlimited.
func openFileLimit() (uint64, bool) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY {
		return 0, false
	}
	return uint64(lim.Cur), true
}
