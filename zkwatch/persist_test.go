package zkwatch

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/proxy"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// watchModes are the two ways the watcher learns of changes: a persistent
// recursive watch per lock parent (ZooKeeper 3.6+, the default), and
// one-shot children watches (older servers, or ChildrenWatchesOnly).
var watchModes = []struct {
	name         string
	childrenOnly bool
}{
	{"persistent watch", false},
	{"children watches", true},
}

// A waiter joining and leaving a 1,000-node queue, in both watch modes:
// every change is shown, and the bytes ZooKeeper sends the watcher for it
// (counted on a proxy between them) are those of the change with a
// persistent watch, and a listing of every child with children watches.
func TestChangeCost(t *testing.T) {
	s := sharedServer(t)
	const nodes, changes = 1000, 5
	for _, mode := range watchModes {
		t.Run(mode.name, func(t *testing.T) {
			path := fresh("/cost/lock")
			c := connect(t, []string{s.Addr()}, 30*time.Second)
			mkdirs(t, c, path)
			ops := make([]any, nodes)
			for i := range ops {
				ops[i] = &zk.CreateRequest{Path: path + "/lock-", Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence}
			}
			if _, err := c.Multi(ops...); err != nil {
				t.Fatal(err)
			}
			p, err := proxy.New(s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			// No watch-table polls through the proxy while it counts.
			_, rec := startWatcher(t, Config{Servers: []string{p.Addr()}, Paths: []string{path}, Poll: time.Hour,
				ChildrenWatchesOnly: mode.childrenOnly})
			rec.wait(t, path, 0, fmt.Sprintf("%d nodes", nodes), func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == nodes })

			// Each change's bytes on their own, and the median of them: a
			// reconnect on a loaded machine lists the queue once more, which
			// is not what a change costs.
			var costs []int64
			last := p.FromTarget()
			cost := func() {
				now := p.FromTarget()
				costs = append(costs, now-last)
				last = now
			}
			for range changes {
				mark := rec.mark(path)
				name, err := c.Create(path+"/lock-", []byte("joiner"), zk.FlagEphemeral|zk.FlagSequence, acl)
				if err != nil {
					t.Fatal(err)
				}
				name = name[len(path)+1:]
				rec.wait(t, path, mark, "the joiner, with its data", func(s lockqueue.Snapshot) bool {
					i := slices.IndexFunc(s.Nodes, func(n lockqueue.Node) bool { return n.Name == name })
					return s.Live() && len(s.Nodes) == nodes+1 && i == nodes && s.Nodes[i].Data == "joiner" && !s.Nodes[i].Holding
				})
				cost()
				mark = rec.mark(path)
				if err := c.Delete(path+"/"+name, -1); err != nil {
					t.Fatal(err)
				}
				rec.wait(t, path, mark, "the joiner gone", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == nodes })
				cost()
			}
			sorted := slices.Sorted(slices.Values(costs))
			perChange := sorted[len(sorted)/2]
			// A listing of 1,000 names of 15 bytes is 19 KB; a new
			// child's data and a parent's stat are about 200 bytes.
			if mode.childrenOnly && perChange < 9_000 {
				t.Errorf("%d bytes per change with children watches, want a listing's (over 9,000)", perChange)
			}
			if !mode.childrenOnly && perChange > 1_000 {
				t.Errorf("%d bytes per change with a persistent watch, want under 1,000 (no listing)", perChange)
			}
			t.Logf("%s: %d bytes from ZooKeeper per change at the median (each: %v)", mode.name, perChange, costs)
		})
	}
}

// A connection lost and made again within the session: the server forgets
// the connection's watches, so the watcher sets them again, and a change
// after the reconnect is seen, in both watch modes.
func TestChangeAfterReconnect(t *testing.T) {
	s := sharedServer(t)
	for _, mode := range watchModes {
		t.Run(mode.name, func(t *testing.T) {
			p, err := proxy.New(s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			path := fresh("/reconnect/lock")
			c := connect(t, []string{s.Addr()}, 30*time.Second)
			_, rec := startWatcher(t, Config{Servers: []string{p.Addr()}, Paths: []string{path}, SessionTimeout: 30 * time.Second,
				ChildrenWatchesOnly: mode.childrenOnly})
			lockAsync(t, rec, c, path, 1)

			mark := rec.mark(path)
			p.Cut()
			rec.wait(t, path, mark, "reconnecting", func(s lockqueue.Snapshot) bool { return s.Connection == lockqueue.Reconnecting })
			mark = rec.mark(path)
			p.Restore()
			rec.wait(t, path, mark, "connected again", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 1 })

			// The watcher's reads after the reconnect set its watch
			// again, before or after this create.
			mark = rec.mark(path)
			lockAsync(t, rec, connect(t, []string{s.Addr()}, 30*time.Second), path, 2)
			rec.wait(t, path, mark, "the waiter that came after", queueIs(lockqueue.GoZookeeper, exclusive(2), lockqueue.EdgeConfirmed))
		})
	}
}

// The watcher's own watches as the server lists them (wchc).
func ownWatches(t *testing.T, addr string, w *Watcher) []string {
	t.Helper()
	reply, err := fourLetter(context.Background(), addr, "wchc")
	if err != nil {
		t.Fatal(err)
	}
	table, err := parseWchc(reply)
	if err != nil {
		t.Fatal(err)
	}
	return table[w.sess.sessionID()]
}

// A lock parent no longer watched, given up by RemovePath, takes its
// persistent watch with it: the server would send its events for the
// whole session, and count it among the children watches the table
// reports. One found under a --watch-under prefix has no watch of its
// own (the prefix's recursive watch tells its reader), so its going
// removes nothing: the prefix's watch stays, and no other is left.
func TestUnwatchRemovesPersistentWatch(t *testing.T) {
	s := sharedServer(t)
	c := connect(t, []string{s.Addr()}, 10*time.Second)
	root := fresh("/unwatch")
	configured, apps := root+"/configured", root+"/apps"
	found := apps + "/svc/lock"
	for _, p := range []string{configured, found} {
		mkdirs(t, c, p)
		if _, err := c.Create(p+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
			t.Fatal(err)
		}
	}
	w, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{configured}, Prefixes: []string{apps}})
	for _, p := range []string{configured, found} {
		rec.wait(t, p, 0, "read, 1 node", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 1 })
	}
	if got := slices.Sorted(slices.Values(ownWatches(t, s.Addr(), w))); !slices.Equal(got, []string{apps, configured}) {
		t.Fatalf("the watcher's watches are %v, want the prefix's and the configured lock's: %v", got, []string{apps, configured})
	}

	if err := w.RemovePath(configured); err != nil {
		t.Fatal(err)
	}
	kids, _, err := c.Children(found)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if err := c.Delete(found+"/"+k, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(found, -1); err != nil {
		t.Fatal(err)
	}
	rec.forgotten(t, found)
	deadline := time.Now().Add(waitTimeout)
	for {
		got := ownWatches(t, s.Addr(), w)
		if slices.Equal(got, []string{apps}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher still watches %v after it stopped watching %s and %s", got, configured, found)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Discovery across a lost connection: the server forgets the connection's
// watches, so the watcher sets them again (in recursive mode the prefix's
// watch) and lists the prefix again. A lock parent made and one deleted
// while it was away are seen once it is back, and one made after, in both
// watch modes.
func TestDiscoverAfterReconnect(t *testing.T) {
	s := sharedServer(t)
	for _, mode := range watchModes {
		t.Run(mode.name, func(t *testing.T) {
			p, err := proxy.New(s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			c := connect(t, []string{s.Addr()}, 30*time.Second)
			apps := fresh("/rediscover")
			mkLock := func(path string) {
				t.Helper()
				mkdirs(t, c, path)
				if _, err := c.Create(path+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
					t.Fatal(err)
				}
			}
			before, meanwhile, after := apps+"/a/lock", apps+"/b/lock", apps+"/c/lock"
			mkLock(before)
			w, rec := startWatcher(t, Config{Servers: []string{p.Addr()}, Prefixes: []string{apps}, SessionTimeout: 30 * time.Second,
				ChildrenWatchesOnly: mode.childrenOnly})
			rec.wait(t, before, 0, "discovered", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 1 })

			mark := rec.mark(before)
			p.Cut()
			rec.wait(t, before, mark, "reconnecting", func(s lockqueue.Snapshot) bool { return s.Connection == lockqueue.Reconnecting })
			mkLock(meanwhile)
			kids, _, err := c.Children(before)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range kids {
				if err := c.Delete(before+"/"+k, -1); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Delete(before, -1); err != nil {
				t.Fatal(err)
			}
			p.Restore()
			rec.wait(t, meanwhile, 0, "made while away, discovered", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 1 })
			rec.forgotten(t, before)

			mkLock(after)
			rec.wait(t, after, 0, "made after, discovered", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 1 })
			if got := w.Paths(); !slices.Equal(got, []string{meanwhile, after}) {
				t.Errorf("Paths() = %v, want %v", got, []string{meanwhile, after})
			}
			if !mode.childrenOnly {
				if got := ownWatches(t, s.Addr(), w); !slices.Equal(got, []string{apps}) {
					t.Errorf("the watcher's watches are %v, want the prefix's alone", got)
				}
			}
		})
	}
}

// A change read from the persistent watch's events is one request, a
// multiRead of the new child's data and the parent's Stat, when the
// parent's data is small; a parent holding more is not read again at each
// change (its Stat comes from an exists beside the child's get), and the
// change reads the same.
func TestChangeRequests(t *testing.T) {
	s := sharedServer(t)
	for _, tc := range []struct {
		name       string
		parentData int
		perCreate  int64 // requests a create costs
	}{
		{"empty parent", 0, 1},
		{"4 KB parent", 4096, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := fresh("/requests/lock")
			c := connect(t, []string{s.Addr()}, 30*time.Second)
			mkdirs(t, c, path)
			if _, err := c.Set(path, make([]byte, tc.parentData), -1); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, err := c.Create(path+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
					t.Fatal(err)
				}
			}
			p, err := proxy.New(s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			w, rec := startWatcher(t, Config{Servers: []string{p.Addr()}, Paths: []string{path}, Poll: time.Hour})
			// The first watch table's answer (4lw, through the proxy too)
			// is not a change's cost.
			rec.wait(t, path, 0, "3 nodes and the watch table", func(s lockqueue.Snapshot) bool {
				return s.Live() && len(s.Nodes) == 3 && s.WatchSource != ""
			})

			var reads, bytes []int64
			for i := range 7 {
				before, fromZK := w.Reads(), p.FromTarget()
				mark := rec.mark(path)
				data := fmt.Sprintf("joiner-%d", i)
				name, err := c.Create(path+"/lock-", []byte(data), zk.FlagEphemeral|zk.FlagSequence, acl)
				if err != nil {
					t.Fatal(err)
				}
				name = name[len(path)+1:]
				rec.wait(t, path, mark, "the joiner, with its data", func(s lockqueue.Snapshot) bool {
					i := slices.IndexFunc(s.Nodes, func(n lockqueue.Node) bool { return n.Name == name })
					return s.Live() && len(s.Nodes) == 4 && i == 3 && s.Nodes[i].Data == data && s.Nodes[i].WaitsFor == s.Nodes[2].Name
				})
				reads, bytes = append(reads, w.Reads()-before), append(bytes, p.FromTarget()-fromZK)
				mark = rec.mark(path)
				if err := c.Delete(path+"/"+name, -1); err != nil {
					t.Fatal(err)
				}
				rec.wait(t, path, mark, "the joiner gone", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 3 })
			}
			// The median: a reconnect on a loaded machine lists again.
			med := slices.Sorted(slices.Values(reads))[3]
			if med != tc.perCreate {
				t.Errorf("a create cost %d requests at the median (each: %v), want %d", med, reads, tc.perCreate)
			}
			t.Logf("requests per create %v, bytes from ZooKeeper %v", reads, bytes)
			if b := slices.Sorted(slices.Values(bytes))[3]; b > 1_000 {
				t.Errorf("a create cost %d bytes from ZooKeeper at the median (each: %v), want under 1,000: not the parent's data", b, bytes)
			}
		})
	}
}
