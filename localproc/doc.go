// Package localproc is the child-process machinery shared by the packages
// that run real, throwaway servers for tests, demos and the classroom
// (zklocal, redislocal, etcdlocal, pglocal): free loopback ports, a temporary
// directory that disappears even when this process is killed with SIGKILL,
// a child bound to this process with PR_SET_PDEATHSIG, a bounded capture of
// its output for error messages, and a readiness wait bounded by a context.
//
// Nothing may be left behind. Close stops the child and removes its
// directory; if this process dies instead (a crash, Ctrl-C without a handler,
// kill -9), the kernel sends the child SIGKILL (Pdeathsig) and a small reaper
// shell, which holds the read end of a pipe whose only write end lives in
// this process, sees end-of-file and removes the directory.
package localproc
