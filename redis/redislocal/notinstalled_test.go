package redislocal_test

import (
	"context"
	"testing"

	"github.com/zklockviz/zklockviz/localproc/proctest"
	"github.com/zklockviz/zklockviz/redis/redislocal"
)

func TestNotInstalled(t *testing.T) {
	proctest.CheckNotInstalled(t, redislocal.ErrNotInstalled, "redis-server", func(ctx context.Context) error {
		_, err := redislocal.Start(ctx, redislocal.Options{})
		return err
	})
}
