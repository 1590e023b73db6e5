package redislock_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/redis/redislocal"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
	"github.com/zklockviz/zklockviz/redis/redislock"
)

// Discovery by pattern as a least-privilege ACL user: with +scan +dbsize
// the walk finds a lock key, and an ACL without +psubscribe, or that does
// not name the pattern's keyspace channel as written, refuses only the
// pattern's PSUBSCRIBE (ACL LOG shows nothing else refused): the named
// locks keep following their keyspace events. With the pattern's channel allowed as written, nothing is
// refused.
func TestDiscoveryLeastPrivilege(t *testing.T) {
	srv := redistest.ForTestWith(t, redislocal.Options{Args: []string{"--notify-keyspace-events", "KEA"}})
	setupLocks(t, srv.Addr())
	cli(t, srv.Addr(), "SET", "found:a", "tok-a", "NX", "PX", "600000")
	discover := append(slices.Clone(viewerNotify), "+scan", "+dbsize")
	for _, tc := range []struct {
		user    string
		rules   []string
		refused []string
	}{
		{"viewer-walk", discover, []string{"psubscribe"}},
		{"viewer-channels", append(slices.Clone(discover), "+psubscribe"), []string{"__keyspace@0__:found:*"}},
		{"viewer-events", append(slices.Clone(discover), "+psubscribe", "&__keyspace@0__:found:*"), nil},
	} {
		t.Run(tc.user, func(t *testing.T) {
			acl(t, srv.Addr(), tc.user, "s3cret", tc.rules...)
			c := client(t, srv.Addr())
			if err := c.Do(context.Background(), "ACL", "LOG", "RESET").Err(); err != nil {
				t.Fatal(err)
			}
			r, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Username: tc.user, Password: "s3cret",
				Names: roNames, Patterns: []string{"found:*"}, ScanCount: 10})
			waitAll(t, s, "keyspace")
			s.waitSnap(t, "found:a", "found:a found and held by tok-a", func(snap lockqueue.Snapshot) bool { return held("tok-a")(snap) })
			if !slices.Contains(r.Watched(), "found:a") {
				t.Errorf("Watched %v lacks found:a", r.Watched())
			}
			if err := r.Unwatch("found:a"); err == nil {
				t.Errorf("Unwatch of a key found by a pattern: no error")
			}
			// The pattern's PSUBSCRIBE follows the first keyspace event.
			for deadline := time.Now().Add(waitTimeout); tc.refused != nil && len(refusedTo(t, c, tc.user)) == 0 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			if got := refusedTo(t, c, tc.user); !slices.Equal(got, tc.refused) {
				t.Errorf("ACL LOG: refused to %s: %v, want %v", tc.user, got, tc.refused)
			}
			if err := r.Err(); err != nil {
				t.Errorf("Err = %v", err)
			}
		})
	}
}

// A key found by a pattern is followed while it is a lock: deleted, it is
// published free once, then the hub is told to forget it and the reader
// no longer lists it; a key of another type is never followed.
func TestDiscoveredKeyLeaves(t *testing.T) {
	srv := redistest.ForTest(t)
	cli(t, srv.Addr(), "SET", "found:a", "tok-a", "NX", "PX", "600000")
	cli(t, srv.Addr(), "RPUSH", "found:list", "x")
	forgot := make(chan string, 4)
	r, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Patterns: []string{"found:*"},
		Forget: func(key string) { forgot <- key }})
	s.waitSnap(t, "found:a", "found:a held by tok-a", held("tok-a"))
	cli(t, srv.Addr(), "DEL", "found:a")
	s.waitSnap(t, "found:a", "found:a free", free)
	select {
	case key := <-forgot:
		if key != "redis:found:a" {
			t.Errorf("Forget(%q), want redis:found:a", key)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the hub was not told to forget found:a")
	}
	if got := r.Watched(); len(got) != 0 {
		t.Errorf("Watched = %v after the key went, want none (and never the list)", got)
	}
}

// A key found by a pattern and lost in a restart without persistence is
// not let go with the key: its owner may still believe it holds, so the
// lock stays followed, with lost-in-restart, until its lease would have run
// out, and only then is the hub told to forget it.
func TestDiscoveredKeyLostInRestartStays(t *testing.T) {
	srv := redistest.ForTest(t)
	const lease = 4 * time.Second
	forgot := make(chan time.Time, 4)
	r, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Patterns: []string{"found:*"},
		Poll: 100 * time.Millisecond, Forget: func(string) { forgot <- time.Now() }})
	set := time.Now()
	cli(t, srv.Addr(), "SET", "found:orders", "tok-A", "NX", "PX", strconv.Itoa(int(lease.Milliseconds())))
	s.waitSnap(t, "found:orders", "found:orders held by tok-A", held("tok-A"))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.waitSnap(t, "found:orders", "the loss told", func(s lockqueue.Snapshot) bool {
		return s.Live() && slices.Contains(alertKinds(s), redislock.AlertLostInRestart)
	})
	if time.Since(set) >= lease {
		t.Skip("the restart took longer than the lease: nothing left to show")
	}
	if got := r.Watched(); !slices.Contains(got, "found:orders") {
		t.Errorf("Watched = %v while its loss is shown, want found:orders", got)
	}
	select {
	case at := <-forgot:
		if at.Before(set.Add(lease)) {
			t.Errorf("forgotten %v after the SET, before its lease of %v would have run out", at.Sub(set), lease)
		}
	case <-time.After(lease + waitTimeout):
		t.Fatal("the lost key was never forgotten after its lease")
	}
	all := s.since("found:orders", 0)
	last := all[len(all)-1]
	if slices.Contains(alertKinds(last), redislock.AlertLostInRestart) {
		t.Errorf("last snapshot still says lost-in-restart after the lease: %v", last.Alerts)
	}
}
