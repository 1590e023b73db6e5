package lab

import "syscall"

// clientAttr makes a client die with the lab (SIGKILL when the lab goes,
// even by kill -9), so no client outlives a run.
func clientAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
