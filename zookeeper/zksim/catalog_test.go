package zksim

import (
	"errors"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator"
)

// TestCatalog: ZooKeeper's built-ins come in the teaching order, and an
// unknown name is a bad scenario that lists them.
func TestCatalog(t *testing.T) {
	if got := Catalog.Names(); len(got) == 0 || got[0] != "lock1-5" {
		t.Errorf("ZooKeeper's built-ins %v, want lock1-5 first", got)
	}
	_, err := Catalog.Load("lock6")
	if want := `unknown scenario "lock6": built-ins are lock1-5,`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load(lock6) error %v, want one saying %q", err, want)
	}
	if !errors.Is(err, simulator.ErrInvalid) {
		t.Errorf("Load(lock6) error %v is not ErrInvalid (sim's exit 2)", err)
	}
}
