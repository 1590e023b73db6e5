//go:build !linux

package lab

import (
	"syscall"
	"time"
)

// clientAttr: only Linux has a death signal, so elsewhere (make dist's
// darwin binaries) a client may outlive a lab killed with kill -9; the lab
// stops its clients at the end of a run as on Linux.
func clientAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// settled: without /proc the lab cannot see a client stop; it gives the
// signal a moment to land instead.
func settled(int, string, time.Duration) bool {
	time.Sleep(5 * time.Millisecond)
	return true
}
