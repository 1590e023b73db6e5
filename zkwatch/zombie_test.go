package zkwatch

import (
	"context"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/proxy"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// A ZooKeeper killed and started again restores every session, none of
// them connected yet, so the first watch table after it calls every
// holder a zombie; so does one read while a client's connection is down
// for a moment. A holder whose client reconnects and lets go before the
// next table did not lose its lock: the history says released (issue 37,
// the lab's word check found it recorded as expired). One whose client
// never comes back loses it at its session's end: expired.
//
// The holder goes through a proxy, cut across the restart, so the watcher
// (connected directly) sees its session restored and not connected; a
// watch-table poll longer than the holder's reconnect and release leaves
// no table read between the two.
func TestZombieLeaves(t *testing.T) {
	const poll = 4 * time.Second
	for _, tc := range []struct {
		name string
		// timeout: the holder's session, long enough for the first
		// table after the restart (up to a poll) to show it a zombie.
		timeout time.Duration
		restart bool // the server is killed and started again
		back    bool // the holder's client reconnects and releases
		want    history.How
	}{
		{"restart, reconnects and releases", 20 * time.Second, true, true, history.Released},
		{"restart, never reconnects", 10 * time.Second, true, false, history.Expired},
		{"cut off, reconnects and releases", 20 * time.Second, false, true, history.Released},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := zktest.ForTest(t)
			p, err := proxy.New(s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			path := fresh("/restored/lock")
			_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path},
				SessionTimeout: 30 * time.Second, Poll: poll})
			holder := connect(t, []string{p.Addr()}, tc.timeout)
			l, done := lockAsync(t, rec, holder, path, 1)
			if err := <-done; err != nil {
				t.Fatalf("lock: %v", err)
			}
			rec.wait(t, path, 0, "the holder live, no zombie", func(s lockqueue.Snapshot) bool {
				return s.Live() && len(s.Nodes) == 1 && s.Nodes[0].Holding && !s.Nodes[0].Zombie
			})

			mark := rec.mark(path)
			p.Cut()
			if tc.restart {
				restart(t, s)
			}
			rec.wait(t, path, mark, "the holder a zombie", func(s lockqueue.Snapshot) bool {
				return s.Live() && len(s.Nodes) == 1 && s.Nodes[0].Zombie
			})
			if tc.back {
				p.Restore()
				waitHasSession(t, holder)
				if err := l.Unlock(); err != nil {
					t.Fatalf("unlock: %v", err)
				}
			}
			rec.wait(t, path, mark, "the holder gone", func(s lockqueue.Snapshot) bool {
				return s.Live() && s.Exists && len(s.Nodes) == 0
			})
			if got := howLeft(t, rec.all(path)); got != tc.want {
				t.Errorf("the holder's node left %q; want %q", got, tc.want)
			}
		})
	}
}

// restart kills s (kill -9, as the lab's nemesis does) and starts it again
// on its port with its data.
func restart(t *testing.T, s *zklocal.Server) {
	t.Helper()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

// howLeft records snaps in a history and says how its one node left.
func howLeft(t *testing.T, snaps []lockqueue.Snapshot) history.How {
	t.Helper()
	st, err := history.Open(history.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, s := range snaps {
		if _, err := st.Record(s); err != nil {
			t.Fatalf("record: %v", err)
		}
	}
	key := history.KeyOf(snaps[0])
	evs, err := st.Events(key, snaps[0].UpdatedAt.Add(-time.Minute), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var how history.How
	for _, e := range evs {
		if e.Kind != history.Left {
			continue
		}
		if how != "" {
			t.Fatalf("more than one node left: %+v", evs)
		}
		how = e.How
	}
	return how
}
