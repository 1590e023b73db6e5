package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// SmallDisk mounts a tmpfs of size bytes for the test: a disk that can be
// filled. A full disk cannot be made without root: the test is skipped
// then, or failed when CI=true.
func SmallDisk(t testing.TB, size int) string {
	t.Helper()
	cannot := t.Skipf
	if os.Getenv("CI") == "true" {
		cannot = t.Fatalf
	}
	if os.Geteuid() != 0 {
		cannot("a full disk needs a tmpfs mount, which needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size), "tmpfs", dir).CombinedOutput(); err != nil {
		cannot("mount a tmpfs for a full disk: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// FillDisk writes a file in dir until its disk is full, and returns the
// function that frees the space again.
func FillDisk(t testing.TB, dir string) (free func()) {
	t.Helper()
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			break
		}
	}
	f.Close()
	return func() {
		t.Helper()
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
}
