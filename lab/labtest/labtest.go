// Package labtest holds test helpers for the lock lab's service clients
// (each service's Locker). It is imported only from tests, so the binary
// does not link package testing.
package labtest

import (
	"context"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lab"
)

// Acquire takes l, failing the test when it cannot.
func Acquire(t testing.TB, ctx context.Context, l lab.Locker) Hold {
	t.Helper()
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	return h
}

// Hold is what an Acquire returned.
type Hold = lab.Hold

// Waiter starts l's Acquire in the background; its hold comes on the
// channel once it holds (a zero Hold after an error, which fails the
// test).
func Waiter(t testing.TB, ctx context.Context, l lab.Locker) <-chan Hold {
	got := make(chan Hold, 1)
	go func() {
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Errorf("the waiter's acquire: %v", err)
		}
		got <- h
	}()
	return got
}

// Handoff checks the ordinary hand-off: a holds; b waits and does not get
// the lock, nor does a lose it, for wait; a lets go; b gets it with a
// later token. It returns b's hold.
func Handoff(t testing.TB, ctx context.Context, a, b lab.Locker, wait time.Duration) Hold {
	t.Helper()
	ha := Acquire(t, ctx, a)
	ta, lostA := ha.Token, ha.Lost
	got := Waiter(t, ctx, b)
	select {
	case h := <-got:
		t.Fatalf("b got the lock (token %d) while a held it", h.Token)
	case <-lostA:
		t.Fatal("a was told it lost the lock while it held it")
	case <-time.After(wait):
	}
	if err := a.Release(); err != nil {
		t.Fatalf("a's release: %v", err)
	}
	hb := <-got
	if hb.Token <= ta {
		t.Errorf("b's token %d after a's %d: want a later one", hb.Token, ta)
	}
	return hb
}
