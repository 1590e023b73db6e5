//go:build !linux

package localproc

import "syscall"

// sysProcAttr starts the child in its own process group, as cred. Only
// Linux has a death signal (Pdeathsig), so elsewhere (make dist's darwin
// binaries, whose demo starts a ZooKeeper) a child may outlive a zklockviz
// killed with kill -9; the reaper (dir.go) still removes its directory.
// Close stops it as on Linux.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}
