package etcdlab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal/etcdtest"
	"github.com/zklockviz/zklockviz/lab/labtest"
)

// Two clients on a real etcd: the waiter gets the lock when the holder
// lets go, with a later token, and the holder's session is still live.
func TestLocker(t *testing.T) {
	srv := etcdtest.ForTest(t)
	dial := func() *Locker {
		l, err := Dial([]string{srv.Endpoint()}, "/lab/lock", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	a, b := dial(), dial()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// Past the lease: a keeps its session alive while b waits.
	labtest.Handoff(t, ctx, a, b, 1500*time.Millisecond)
	if err := b.Release(); err != nil {
		t.Errorf("b's release: %v", err)
	}
}

func TestTTLSeconds(t *testing.T) {
	for _, tc := range []struct {
		ttl  time.Duration
		want int
	}{{time.Second, 1}, {3 * time.Second, 3}, {1500 * time.Millisecond, 0}, {500 * time.Millisecond, 0}, {0, 0}} {
		got, err := TTLSeconds(tc.ttl)
		if got != tc.want || (tc.want == 0) != (err != nil) {
			t.Errorf("TTLSeconds(%v) = %d, %v; want %d", tc.ttl, got, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "want whole seconds, 1s or more") {
			t.Errorf("TTLSeconds(%v): %v", tc.ttl, err)
		}
	}
}
