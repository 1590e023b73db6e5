package pglocal

import (
	"context"
	"testing"

	"github.com/zklockviz/zklockviz/localproc"
)

func TestNotInstalled(t *testing.T) {
	// Debian keeps PostgreSQL's binaries off $PATH; hide those too.
	old := debianBinGlob
	debianBinGlob = t.TempDir() + "/*/bin"
	t.Cleanup(func() { debianBinGlob = old })
	localproc.CheckNotInstalled(t, ErrNotInstalled, "postgresql", func(ctx context.Context) error {
		_, err := Start(ctx, Options{})
		return err
	})
}
