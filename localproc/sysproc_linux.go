package localproc

import "syscall"

// sysProcAttr starts the child in its own process group, as cred, with
// SIGKILL as its death signal. The kernel clears the death signal when
// credentials change, but Go sets it after switching user, so it holds for
// PostgreSQL too.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Pdeathsig:  syscall.SIGKILL,
		Setpgid:    true,
		Credential: cred,
	}
}
