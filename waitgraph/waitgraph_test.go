package waitgraph_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/waitgraph"
)

// zk is a live ZooKeeper snapshot of path whose nodes are "name:session",
// the first holding and each next waiting for the one before.
func zk(path string, nodes ...string) lockqueue.Snapshot {
	s := lockqueue.Snapshot{Path: path, Connection: lockqueue.Connected, Exists: true, Cluster: "zk1:2181"}
	for i, spec := range nodes {
		name, session, _ := strings.Cut(spec, ":")
		n := lockqueue.Node{Name: name, Session: session, Holding: i == 0}
		if i > 0 {
			n.WaitsFor = s.Nodes[i-1].Name
		}
		s.Nodes = append(s.Nodes, n)
	}
	return s
}

func TestCycles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		snaps []lockqueue.Snapshot
		want  map[string][]string // lock key -> its nodes in the alert
	}{
		{"two locks, two sessions", []lockqueue.Snapshot{
			zk("/locks/a", "a1:0xA", "a2:0xB"),
			zk("/locks/b", "b1:0xB", "b2:0xA"),
		}, map[string][]string{"/locks/a": {"a1", "a2"}, "/locks/b": {"b1", "b2"}}},
		{"three locks in a ring", []lockqueue.Snapshot{
			zk("/locks/a", "a1:0xA", "a2:0xC"),
			zk("/locks/b", "b1:0xB", "b2:0xA"),
			zk("/locks/c", "c1:0xC", "c2:0xB"),
		}, map[string][]string{"/locks/a": {"a1", "a2"}, "/locks/b": {"b1", "b2"}, "/locks/c": {"c1", "c2"}}},
		{"a chain is no cycle", []lockqueue.Snapshot{
			zk("/locks/a", "a1:0xA", "a2:0xB"),
			zk("/locks/b", "b1:0xB", "b2:0xC"),
		}, nil},
		{"a session's own nodes are no wait", []lockqueue.Snapshot{
			zk("/locks/a", "a1:0xA", "a2:0xA"),
			zk("/locks/b", "b1:0xA", "b2:0xA"),
		}, nil},
		{"the same sessions on another cluster do not join", []lockqueue.Snapshot{
			zk("/locks/a", "a1:0xA", "a2:0xB"),
			func() lockqueue.Snapshot { s := zk("/locks/b", "b1:0xB", "b2:0xA"); s.Cluster = "zk9:2181"; return s }(),
		}, nil},
		{"a lock not live raises nothing", []lockqueue.Snapshot{
			zk("/locks/a", "a1:0xA", "a2:0xB"),
			func() lockqueue.Snapshot {
				s := zk("/locks/b", "b1:0xB", "b2:0xA")
				s.Connection = lockqueue.Reconnecting
				return s
			}(),
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := waitgraph.New()
			for _, s := range tc.snaps {
				g.Set(s, waitgraph.Edges(s))
			}
			changed := g.Cycles()
			if want := slices.Sorted(func(yield func(string) bool) {
				for k := range tc.want {
					if !yield(k) {
						return
					}
				}
			}); !slices.Equal(changed, want) {
				t.Errorf("changed %v, want %v", changed, want)
			}
			var msg string
			for _, s := range tc.snaps {
				a, ok := g.Alert(s.Key())
				nodes, want := a.Nodes, tc.want[s.Key()]
				if ok != (want != nil) || !slices.Equal(nodes, want) {
					t.Errorf("%s: alert %v (%v), want nodes %v", s.Path, a, ok, want)
					continue
				}
				if !ok {
					continue
				}
				if a.Kind != lockqueue.AlertDeadlock {
					t.Errorf("%s: kind %q", s.Path, a.Kind)
				}
				for _, other := range tc.snaps {
					if !strings.Contains(a.Message, other.Path) {
						t.Errorf("%s: the message does not name %s: %s", s.Path, other.Path, a.Message)
					}
				}
				if msg != "" && a.Message != msg {
					t.Errorf("the locks of one cycle say it differently:\n%s\n%s", msg, a.Message)
				}
				msg = a.Message
			}
		})
	}
}

// A cycle broken by one lock's change clears every lock's alert; nothing
// changed reports nothing.
func TestCycleClears(t *testing.T) {
	g := waitgraph.New()
	a, b := zk("/locks/a", "a1:0xA", "a2:0xB"), zk("/locks/b", "b1:0xB", "b2:0xA")
	for _, s := range []lockqueue.Snapshot{a, b} {
		g.Set(s, waitgraph.Edges(s))
	}
	if got := g.Cycles(); len(got) != 2 {
		t.Fatalf("raised on %v, want both", got)
	}
	if g.Set(a, waitgraph.Edges(a)) {
		t.Error("the same edges again reported changed")
	}
	if got := g.Cycles(); len(got) != 0 {
		t.Errorf("nothing changed, yet %v changed", got)
	}
	b = zk("/locks/b", "b1:0xB") // 0xA gave up waiting
	if !g.Set(b, waitgraph.Edges(b)) {
		t.Error("the gone wait was not a change")
	}
	if got := g.Cycles(); !slices.Equal(got, []string{"/locks/a", "/locks/b"}) {
		t.Errorf("cleared on %v, want both", got)
	}
	if _, ok := g.Alert("/locks/a"); ok {
		t.Error("/locks/a still alerted")
	}
}

// A children watcher (a herd waiter) waits for every holder; PostgreSQL's
// nodes are joined by their backend (Client), and its server-told
// blockers are waits too.
func TestEdgesByService(t *testing.T) {
	herd := zk("/locks/h", "h1:0xA", "h2:0xB")
	herd.Nodes[1].WaitsFor, herd.Nodes[1].WaitsOn = "", lockqueue.OnChildren
	if got := waitgraph.Edges(herd); len(got) != 1 || got[0].From != "0xB" || got[0].To != "0xA" {
		t.Errorf("herd edges %+v", got)
	}
	pg := lockqueue.Snapshot{Service: "postgres", Path: "advisory/1", Connection: lockqueue.Connected, Exists: true}
	for i, pid := range []string{"25211", "25212"} {
		n := lockqueue.Node{Name: "pid-" + pid, Holding: i == 0}
		n.SetClient(pid)
		if i == 1 {
			n.SetBlockedBy([]string{"pid-25211"})
		}
		pg.Nodes = append(pg.Nodes, n)
	}
	if got := waitgraph.Edges(pg); len(got) != 1 || got[0].From != "25212" || got[0].To != "25211" {
		t.Errorf("postgres edges %+v", got)
	}
}

// A cycle whose locks' reader tells it already (PostgreSQL's wait-cycle,
// from the server's own account) keeps that alert, with the other lock of
// the cycle named on it: one cycle, one alert per lock, linked.
func TestCycleToldByTheServer(t *testing.T) {
	g := waitgraph.New()
	snaps := []lockqueue.Snapshot{zk("/locks/a", "a1:0xA", "a2:0xB"), zk("/locks/b", "b1:0xB", "b2:0xA")}
	for i := range snaps {
		snaps[i].Alerts = []lockqueue.Alert{{Kind: lockqueue.AlertWaitCycle, Message: "the server's words"}}
		g.Set(snaps[i], waitgraph.Edges(snaps[i]))
	}
	if got := g.Cycles(); len(got) != 2 {
		t.Fatalf("alerts changed on %v, want both locks", got)
	}
	for i, s := range snaps {
		a, ok := g.Alert(s.Key())
		got := waitgraph.With(s, a, ok)
		other := snaps[1-i].Path
		if len(got.Alerts) != 1 || got.Alerts[0].Kind != lockqueue.AlertWaitCycle || got.Alerts[0].Message != "the server's words" ||
			len(got.Alerts[0].Locks) != 1 || got.Alerts[0].Locks[0].Name != other {
			t.Errorf("%s's alerts %+v, want the server's wait-cycle alone, linking %s", s.Path, got.Alerts, other)
		}
		if s.Alerts[0].Locks != nil {
			t.Errorf("%s: With changed the reader's alert in place", s.Path)
		}
	}
}

// A scene of the cycle's locks is the cycle in wait order: each step's
// client holds its target and waits in the next step's lock, so a page can
// link one lock's holder to the same client's wait in the next lock.
func TestScene(t *testing.T) {
	type want struct{ lock, waiter, target string }
	for _, tc := range []struct {
		name  string
		snaps []lockqueue.Snapshot
		want  []want
	}{
		{"two locks", []lockqueue.Snapshot{
			zk("/locks/a", "a1:0xA", "a2:0xB"),
			zk("/locks/b", "b1:0xB", "b2:0xA"),
		}, []want{{"/locks/b", "b2", "b1"}, {"/locks/a", "a2", "a1"}}},
		{"three locks in a ring", []lockqueue.Snapshot{
			zk("/locks/a", "a1:0xA", "a2:0xC"),
			zk("/locks/b", "b1:0xB", "b2:0xA"),
			zk("/locks/c", "c1:0xC", "c2:0xB"),
		}, []want{{"/locks/b", "b2", "b1"}, {"/locks/c", "c2", "c1"}, {"/locks/a", "a2", "a1"}}},
		{"a chain is no scene", []lockqueue.Snapshot{
			zk("/locks/a", "a1:0xA", "a2:0xB"),
			zk("/locks/b", "b1:0xB", "b2:0xC"),
		}, nil},
		{"told by the server, still drawn", func() []lockqueue.Snapshot {
			out := []lockqueue.Snapshot{zk("/locks/a", "a1:0xA", "a2:0xB"), zk("/locks/b", "b1:0xB", "b2:0xA")}
			for i := range out {
				out[i].Alerts = []lockqueue.Alert{{Kind: lockqueue.AlertWaitCycle}}
			}
			return out
		}(), []want{{"/locks/b", "b2", "b1"}, {"/locks/a", "a2", "a1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := waitgraph.Scene(tc.snaps)
			var got []want
			for _, s := range steps {
				got = append(got, want{s.Lock, s.Waiter, s.Target})
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("scene %v, want %v", got, tc.want)
			}
			for i, s := range steps {
				if next := steps[(i+1)%len(steps)]; s.To != next.From {
					t.Errorf("step %d ends at %s, the next begins at %s: not one client", i, s.To, next.From)
				}
			}
		})
	}
}
