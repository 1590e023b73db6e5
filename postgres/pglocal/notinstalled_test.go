package pglocal

import (
	"context"
	"testing"

	"github.com/zklockviz/zklockviz/localproc/proctest"
)

func TestNotInstalled(t *testing.T) {
	// Debian keeps PostgreSQL's binaries off $PATH; hide those too.
	old := debianBinGlob
	debianBinGlob = t.TempDir() + "/*/bin"
	t.Cleanup(func() { debianBinGlob = old })
	proctest.CheckNotInstalled(t, ErrNotInstalled, "postgresql", func(ctx context.Context) error {
		_, err := Start(ctx, Options{})
		return err
	})
	// Installed says the same without starting anything (the classroom's
	// scenario list marks PostgreSQL's scenarios unavailable with it).
	proctest.CheckNotInstalled(t, ErrNotInstalled, "postgresql", func(context.Context) error { return Installed() })
}
