package lab

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clientAttr makes a client die with the lab (SIGKILL when the lab goes,
// even by kill -9), so no client outlives a run.
func clientAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// settled waits, up to timeout, until every thread of process pid is in
// one of states (the state letters of /proc/PID/task/TID/stat: "Tt"
// stopped, "ZX" dead) or gone. kill returns once a signal is sent, and a
// client running on another core goes on for a moment: the event the lab
// records must come after the client's last, or a write or a release the
// client made after it would seem to come from a paused or dead client.
func settled(pid int, states string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if allIn(pid, states) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func allIn(pid int, states string) bool {
	stats, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "stat"))
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread is gone
		}
		// "TID (COMM) S ...": COMM may hold spaces and parentheses.
		s := string(b)
		rest := strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:])
		if rest == "" || !strings.ContainsRune(states, rune(rest[0])) {
			return false
		}
	}
	return true
}
