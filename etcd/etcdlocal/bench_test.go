package etcdlocal_test

import (
	"context"
	"testing"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/localproc/proctest"
)

// BenchmarkStart is start-to-healthy of one member.
func BenchmarkStart(b *testing.B) {
	proctest.BenchStart(b, etcdlocal.ErrNotInstalled, func(ctx context.Context) ([]*etcdlocal.Server, error) {
		s, err := etcdlocal.Start(ctx, etcdlocal.Options{})
		return []*etcdlocal.Server{s}, err
	})
}
