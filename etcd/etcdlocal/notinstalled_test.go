package etcdlocal_test

import (
	"context"
	"testing"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/localproc/proctest"
)

func TestNotInstalled(t *testing.T) {
	proctest.CheckNotInstalled(t, etcdlocal.ErrNotInstalled, "etcd-server", func(ctx context.Context) error {
		_, err := etcdlocal.Start(ctx, etcdlocal.Options{})
		return err
	})
}
