package pglocal

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestNotInstalled(t *testing.T) {
	old := debianBinGlob
	debianBinGlob = t.TempDir() + "/*/bin"
	t.Cleanup(func() { debianBinGlob = old })
	t.Setenv("PATH", t.TempDir())
	_, err := Start(context.Background(), Options{})
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("Start without PostgreSQL: %v, want ErrNotInstalled", err)
	}
	if !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Errorf("error %q does not name the package", err)
	}
}
