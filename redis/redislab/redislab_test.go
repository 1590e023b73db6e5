package redislab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/lab/labtest"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
)

// The scripts on a real redis-server, step by step: a token only with the
// key, in order, never to a client that found the key held; the value
// names the owner and its token; release deletes only the owner's key.
func TestScripts(t *testing.T) {
	srv := redistest.ForTest(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	ctx := t.Context()
	const key = "lab:lock"
	const ttl = 300 * time.Millisecond
	steps := []struct {
		name      string
		do        func() (int64, error)
		want      int64
		value     string // the key's value after the step; "" absent
		nextToken string // the counter after the step
	}{
		{"c1 takes the free key: token 1", func() (int64, error) { return TryAcquire(ctx, rdb, key, "c1", ttl) }, 1, "c1:1", "1"},
		{"c2 finds it held: no token, the counter untouched", func() (int64, error) { return TryAcquire(ctx, rdb, key, "c2", ttl) }, 0, "c1:1", "1"},
		{"c1 takes it again while it holds: no token (no reentrancy)", func() (int64, error) { return TryAcquire(ctx, rdb, key, "c1", ttl) }, 0, "c1:1", "1"},
		{"after the TTL c2 takes it: token 2", func() (int64, error) {
			time.Sleep(ttl + 50*time.Millisecond)
			return TryAcquire(ctx, rdb, key, "c2", ttl)
		}, 2, "c2:2", "2"},
		{"c1's late release leaves c2's key", func() (int64, error) { return boolInt(Release(ctx, rdb, key, "c1:1")) }, 0, "c2:2", "2"},
		{"c2 releases its own", func() (int64, error) { return boolInt(Release(ctx, rdb, key, "c2:2")) }, 1, "", "2"},
		{"c1 takes the free key: token 3", func() (int64, error) { return TryAcquire(ctx, rdb, key, "c1", ttl) }, 3, "c1:3", "3"},
	}
	for _, s := range steps {
		got, err := s.do()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		value, err := rdb.Get(ctx, key).Result()
		if err == redis.Nil {
			value, err = "", nil
		}
		counter, cerr := rdb.Get(ctx, key+TokenSuffix).Result()
		if err != nil || cerr != nil {
			t.Fatalf("%s: read back: %v, %v", s.name, err, cerr)
		}
		if got != s.want || value != s.value || counter != s.nextToken {
			t.Errorf("%s: got %d, key %q, counter %s; want %d, %q, %s", s.name, got, value, counter, s.want, s.value, s.nextToken)
		}
	}
	// The key expires; the counter never does, or tokens would start over.
	if pttl := rdb.PTTL(ctx, key).Val(); pttl <= 0 || pttl > ttl {
		t.Errorf("the key's PTTL is %v, want up to %v", pttl, ttl)
	}
	if pttl := rdb.PTTL(ctx, key+TokenSuffix).Val(); pttl >= 0 {
		t.Errorf("the counter's PTTL is %v, want none", pttl)
	}
}

func boolInt(ok bool, err error) (int64, error) {
	if ok {
		return 1, err
	}
	return 0, err
}

// A Locker's hold: a waiter gets the key when the holder lets go; a holder
// that outlives its TTL is told it lost the lock, and its release then
// says the TTL ran out.
func TestLocker(t *testing.T) {
	srv := redistest.ForTest(t)
	dial := func(id string) *Locker {
		l, err := Dial(srv.Addr(), "lab:locker", id, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	a, b := dial("a"), dial("b")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	ha := labtest.Acquire(t, ctx, a)
	ta, lostA := ha.Token, ha.Lost
	// The holder is the key's value, as zklockviz's lane names the owner.
	if v := a.rdb.Get(ctx, "lab:locker").Val(); ha.Holder != v || v != Owner("a", ta) {
		t.Errorf("a holds by %q, the key's value is %q", ha.Holder, v)
	}
	got := labtest.Waiter(t, ctx, b)
	select {
	case <-lostA:
	case <-time.After(time.Second):
		t.Fatal("a was not told it lost the lock after its TTL")
	}
	tb := (<-got).Token
	if tb <= ta {
		t.Errorf("b's token %d after a's %d: want a later one", tb, ta)
	}
	if err := a.Release(); err == nil || !strings.Contains(err.Error(), "TTL of 200ms ran out") {
		t.Errorf("a's late release: %v, want the TTL ran out", err)
	}
	if err := b.Release(); err != nil {
		t.Errorf("b's release: %v", err)
	}
}

func TestDialBadTTL(t *testing.T) {
	if _, err := Dial("127.0.0.1:1", "k", "c1", 0); err == nil || !strings.Contains(err.Error(), "want 1ms or more") {
		t.Errorf("Dial with TTL 0: %v", err)
	}
}
