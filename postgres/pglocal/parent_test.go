package pglocal

import (
	"os"
	"syscall"
	"testing"
)

// Server directories go to a RAM-backed /dev/shm only when nobody chose a
// $TMPDIR and it is a world-writable tmpfs with room.
func TestChooseParent(t *testing.T) {
	if got := chooseParent("/somewhere", memParent); got != "" {
		t.Errorf("with $TMPDIR set: %q, want \"\" (os.TempDir())", got)
	}
	if got := chooseParent("", t.TempDir()); got != "" {
		t.Errorf("a private directory on %s: %q, want \"\"", os.TempDir(), got)
	}
	if got := chooseParent("", "/no/such/dir"); got != "" {
		t.Errorf("a missing directory: %q, want \"\"", got)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(memParent, &st); err != nil || st.Type != tmpfsMagic || st.Bavail*uint64(st.Bsize) < memRoom {
		t.Skipf("%s is not a tmpfs with %d bytes free here", memParent, memRoom)
	}
	if got := chooseParent("", memParent); got != memParent {
		t.Errorf("chooseParent(%q) = %q, want it", memParent, got)
	}
}
