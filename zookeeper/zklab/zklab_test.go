package zklab

import (
	"context"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lab/labtest"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// Two clients on a real ZooKeeper: the waiter gets the lock when the
// holder lets go, with a later token; each holder is named by its own lock
// node, the lowest child of the parent while it holds, whose data is the
// client's id (as zklockviz's lane shows it).
func TestLocker(t *testing.T) {
	srv := zktest.ForTest(t)
	const path = "/lab/lock"
	dial := func(id string) *Locker {
		l, err := Dial([]string{srv.Addr()}, 2*time.Second, path, id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	a, b := dial("a"), dial("b")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ha := labtest.Acquire(t, ctx, a)
	checkHolder(t, a.conn, path, ha, "a")
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	hb := labtest.Handoff(t, ctx, a, b, 300*time.Millisecond)
	checkHolder(t, b.conn, path, hb, "b")
	if hb.Holder == ha.Holder {
		t.Errorf("b holds by %s, a's node of before", hb.Holder)
	}
	if err := b.Release(); err != nil {
		t.Errorf("b's release: %v", err)
	}
}

// checkHolder: h's holder is the parent's lowest child, its data id.
func checkHolder(t *testing.T, conn *zk.Conn, path string, h labtest.Hold, id string) {
	t.Helper()
	kids, _, err := conn.Children(path)
	if err != nil {
		t.Fatal(err)
	}
	lowest := ""
	for _, k := range kids {
		if lowest == "" || k[len(k)-10:] < lowest[len(lowest)-10:] {
			lowest = k
		}
	}
	if h.Holder != lowest {
		t.Fatalf("%s holds by %q; the lowest child of %v is %q", id, h.Holder, kids, lowest)
	}
	data, _, err := conn.Get(path + "/" + h.Holder)
	if err != nil || string(data) != id {
		t.Errorf("%s's node %s holds %q, %v; want its id", id, h.Holder, data, err)
	}
}
