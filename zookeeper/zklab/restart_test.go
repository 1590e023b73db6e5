package zklab

import (
	"context"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// A holder whose release failed while the server was down (killed, as the
// lab's server fault does) keeps its session when the server comes back
// with its data, and with it its lock node: its next Acquire deletes that
// node rather than queue behind it for ever.
func TestAcquireAfterAFailedRelease(t *testing.T) {
	srv := zktest.ForTest(t)
	l, err := Dial([]string{srv.Addr()}, 4*time.Second, "/lab/lock", "c1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	first, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err == nil {
		t.Fatal("released with the server down")
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	type result struct {
		token int64
		err   error
	}
	got := make(chan result, 1)
	go func() {
		// Acquire fails until the client has its session back.
		for ctx.Err() == nil {
			h, err := l.Acquire(ctx)
			if err == nil {
				got <- result{h.Token, nil}
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		got <- result{0, ctx.Err()}
	}()
	select {
	case r := <-got:
		if r.err != nil || r.token <= first.Token {
			t.Errorf("acquire after the restart: token %d, %v; want one above %d", r.token, r.err, first.Token)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no acquire within 20s of the restart: queued behind its own leftover node")
	}
	if kids, _, err := l.conn.Children("/lab/lock"); err != nil || len(kids) != 1 {
		t.Errorf("lock nodes %v, %v: want the new hold's alone", kids, err)
	}
}
