//go:build unix

package cli

import (
	"errors"
	"syscall"
)

// processGone reports whether no process has the given pid (signal 0
// checks existence without signalling).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
