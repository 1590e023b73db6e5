package etcdlocal_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/etcdlocal"
)

func TestNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := etcdlocal.Start(context.Background(), etcdlocal.Options{})
	if !errors.Is(err, etcdlocal.ErrNotInstalled) {
		t.Fatalf("Start without the binary: %v, want ErrNotInstalled", err)
	}
	if !strings.Contains(err.Error(), "apt-get install etcd-server") {
		t.Errorf("error %q does not name the package", err)
	}
}
