package redislocal_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/redislocal"
)

func TestNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := redislocal.Start(context.Background(), redislocal.Options{})
	if !errors.Is(err, redislocal.ErrNotInstalled) {
		t.Fatalf("Start without the binary: %v, want ErrNotInstalled", err)
	}
	if !strings.Contains(err.Error(), "apt-get install redis-server") {
		t.Errorf("error %q does not name the package", err)
	}
}
