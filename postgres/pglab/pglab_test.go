package pglab

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zklockviz/zklockviz/lab/labtest"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
)

// Two clients on a real PostgreSQL: the waiter gets the lock when the
// holder lets go, with a later token; a holder whose backend the server
// ends is told it lost the lock, and the waiter gets it.
func TestLocker(t *testing.T) {
	srv := pgtest.ForTest(t)
	if err := Prepare(srv.DSN(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	dial := func(id string) *Locker {
		l, err := Dial(srv.DSN(), "advisory/42", id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	a, b, c := dial("a"), dial("b"), dial("c")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	hb := labtest.Handoff(t, ctx, a, b, 300*time.Millisecond)
	gotC := labtest.Waiter(t, ctx, c)
	admin, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	// The holder is b's backend, as zklockviz's lane names it.
	var pid uint32
	if err := admin.QueryRow(ctx, "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = 42").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if hb.Holder != Holder(pid) || hb.Holder != fmt.Sprintf("pid-%d", pid) {
		t.Errorf("b holds by %q; the server grants the lock to backend %d", hb.Holder, pid)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'b'"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hb.Lost:
	case <-time.After(2 * time.Second):
		t.Fatal("b was not told it lost the lock when its backend ended")
	}
	if tc := (<-gotC).Token; tc <= hb.Token {
		t.Errorf("c's token %d after b's %d: want a later one", tc, hb.Token)
	}
	if err := b.Release(); err == nil {
		t.Error("b's release after its backend ended: no error")
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int64
		ok   bool
	}{{"advisory/42", 42, true}, {"advisory/-7", -7, true}, {"advisory/1/2", 0, false}, {"42", 0, false}, {"table/orders", 0, false}} {
		got, err := Key(tc.name)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("Key(%q) = %d, %v", tc.name, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "advisory/KEY") {
			t.Errorf("Key(%q): %v", tc.name, err)
		}
	}
}
