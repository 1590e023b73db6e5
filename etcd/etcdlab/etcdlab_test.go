package etcdlab

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

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
	hb := labtest.Handoff(t, ctx, a, b, 1500*time.Millisecond)
	// The holder is the key's name under the prefix, b's session's
	// lease in hex, as zklockviz's etcd lane names it.
	resp, err := b.cli.Get(ctx, "/lab/lock/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("the lock's keys: %v, %v", resp, err)
	}
	if got, want := hb.Holder, strings.TrimPrefix(string(resp.Kvs[0].Key), "/lab/lock/"); got != want || want != fmt.Sprintf("%x", b.sess.Lease()) {
		t.Errorf("b holds by %q; the first key under the prefix is %q, b's lease %x", got, want, b.sess.Lease())
	}
	if err := b.Release(); err != nil {
		t.Errorf("b's release: %v", err)
	}
}

func TestHolder(t *testing.T) {
	for _, tc := range []struct{ prefix, key, want string }{
		{"/lab/lock", "/lab/lock/694d7d1c2a3b", "694d7d1c2a3b"},
		{"/lab/lock/", "/lab/lock/694d7d1c2a3b", "694d7d1c2a3b"},
	} {
		if got := Holder(tc.prefix, tc.key); got != tc.want {
			t.Errorf("Holder(%q, %q) = %q, want %q", tc.prefix, tc.key, got, tc.want)
		}
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
