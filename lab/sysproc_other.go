//go:build !linux

package lab

import "syscall"

// clientAttr: only Linux has a death signal, so elsewhere (make dist's
// darwin binaries) a client may outlive a lab killed with kill -9; the lab
// stops its clients at the end of a run as on Linux.
func clientAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
