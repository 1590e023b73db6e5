package lab

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// settled sees a real process stop, run again and die.
func TestSettled(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Process.Kill()
	if settled(pid, "Tt", 50*time.Millisecond) {
		t.Error("a running process counted as stopped")
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	if !settled(pid, "Tt", time.Second) {
		t.Error("a stopped process not seen stopped")
	}
	cmd.Process.Signal(syscall.SIGCONT)
	if settled(pid, "Tt", 50*time.Millisecond) {
		t.Error("a resumed process still counted as stopped")
	}
	cmd.Process.Kill()
	if !settled(pid, "ZX", time.Second) {
		t.Error("a killed process not seen dead")
	}
	cmd.Wait()
	if !settled(pid, "ZX", time.Second) {
		t.Error("a reaped process (gone from /proc) not counted as dead")
	}
}
