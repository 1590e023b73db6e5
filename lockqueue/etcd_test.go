package lockqueue

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// key is a leased key with a healthy lease (10 s granted, 9 s left).
func key(name string, rev, lease int64) EtcdKey {
	return EtcdKey{Name: name, CreateRevision: rev, Lease: lease, LeaseTTL: 10 * time.Second, LeaseLeft: 9 * time.Second}
}

// describe writes a snapshot's queue as "name:H" (holder) or
// "name>waitsFor", in order, and its alert kinds.
func describe(s Snapshot) (queue string, alerts []string) {
	var parts []string
	for _, n := range s.Nodes {
		switch {
		case n.Foreign:
			parts = append(parts, n.Name+":F")
		case n.Holding:
			parts = append(parts, n.Name+":H")
		default:
			parts = append(parts, n.Name+">"+n.WaitsFor)
		}
	}
	for _, a := range s.Alerts {
		alerts = append(alerts, a.Kind)
	}
	return strings.Join(parts, " "), alerts
}

func TestBuildEtcd(t *testing.T) {
	short := key("1a", 5, 0x1a)
	short.LeaseLeft = 4 * time.Second // below half of 10 s
	shortWaiter := key("2b", 6, 0x2b)
	shortWaiter.LeaseLeft = 1 * time.Second
	unread := EtcdKey{Name: "1a", CreateRevision: 5, Lease: 0x1a} // lease not read yet
	gone := key("2b", 6, 0x2b)
	gone.LeaseGone = true

	for _, tc := range []struct {
		name   string
		keys   []EtcdKey
		recipe Recipe
		queue  string
		alerts []string
	}{
		{"free", nil, NoRecipe, "", nil},
		{"mutex, given out of order", []EtcdKey{key("3c", 9, 0x3c), key("1a", 5, 0x1a), key("2b", 7, 0x2b)},
			EtcdMutex, "1a:H 2b>1a 3c>2b", nil},
		// The order is etcd's create revision, not the lease ids' order.
		{"create revision beats name", []EtcdKey{key("ff", 3, 0xff), key("0a", 4, 0x0a)},
			EtcdMutex, "ff:H 0a>ff", nil},
		{"rw: readers share until a writer", []EtcdKey{
			key("read/100", 2, 1), key("read/101", 3, 2), key("write/102", 4, 3), key("read/103", 5, 4), key("write/104", 6, 5)},
			EtcdRWMutex, "read/100:H read/101:H write/102>read/101 read/103>write/102 write/104>read/103", nil},
		{"rw: writer first blocks readers, each on the newest older writer", []EtcdKey{
			key("write/1", 2, 1), key("read/2", 3, 2), key("write/3", 4, 3), key("read/4", 5, 4)},
			EtcdRWMutex, "write/1:H read/2>write/1 write/3>read/2 read/4>write/3", nil},
		{"foreign keys neither hold nor wait", []EtcdKey{key("notes", 1, 0), key("1a", 5, 0x1a), key("sub/ff", 2, 7)},
			EtcdMutex, "1a:H notes:F sub/ff:F", []string{AlertForeign}},
		{"mixed recipes", []EtcdKey{key("1a", 5, 0x1a), key("read/9", 6, 2)}, Mixed, "1a:H read/9:H", []string{AlertMixed}},
		{"holder lease running out", []EtcdKey{short, key("2b", 6, 0x2b)}, EtcdMutex, "1a:H 2b>1a", []string{AlertLeaseExpiring}},
		// A waiter whose lease runs out leaves the queue by itself; only a
		// holder's keeps the lock from moving.
		{"waiter lease running out is no alert", []EtcdKey{key("1a", 5, 0x1a), shortWaiter}, EtcdMutex, "1a:H 2b>1a", nil},
		{"lease not read yet is no alert", []EtcdKey{unread}, EtcdMutex, "1a:H", nil},
		{"key without lease", []EtcdKey{key("1a", 5, 0), key("2b", 6, 0x2b)}, EtcdMutex, "1a:H 2b>1a", []string{AlertNoLease}},
		{"key whose lease is gone", []EtcdKey{key("1a", 5, 0x1a), gone}, EtcdMutex, "1a:H 2b>1a", []string{AlertLeaseGone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := BuildEtcd("/locks/x", tc.keys)
			queue, alerts := describe(s)
			if queue != tc.queue {
				t.Errorf("queue %q, want %q", queue, tc.queue)
			}
			if !slices.Equal(alerts, tc.alerts) {
				t.Errorf("alerts %v, want %v (%v)", alerts, tc.alerts, s.Alerts)
			}
			if s.Recipe != tc.recipe {
				t.Errorf("recipe %q, want %q", s.Recipe, tc.recipe)
			}
			if s.Service != Etcd || s.Path != "/locks/x" {
				t.Errorf("service %q path %q", s.Service, s.Path)
			}
			for _, n := range s.Nodes {
				if n.WaitsFor != "" && n.WaitsForSource() != ByRule {
					t.Errorf("%s waits for %s vouched by %q, want the rule: etcd keeps no watcher list", n.Name, n.WaitsFor, n.WaitsForSource())
				}
			}
		})
	}
}

func TestBuildEtcdNodeFields(t *testing.T) {
	seen := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
	k := EtcdKey{Name: "694d8b2f1c3a5e07", CreateRevision: 42, Lease: 0x694d8b2f1c3a5e07, Value: []byte("host-a"),
		LeaseTTL: 10 * time.Second, LeaseLeft: 7500 * time.Millisecond, Seen: seen}
	n := BuildEtcd("/locks/x", []EtcdKey{k}).Nodes[0]
	want := Node{Name: k.Name, Seq: -1, Mode: Exclusive, Recipe: EtcdMutex, Holding: true, Data: "host-a", Ctime: seen,
		Rare: &Rare{Order: 42, Client: "694d8b2f1c3a5e07", LeaseID: "694d8b2f1c3a5e07", LeaseTTLMs: 10_000, LeaseLeftMs: 7500}}
	if !n.Equal(want) {
		t.Errorf("node\n %+v\nwant\n %+v", n, want)
	}
	// An RWMutex key's name tells when it was made; a Mutex key's does not.
	rw := BuildEtcd("/locks/x", []EtcdKey{key("read/1795000000123456789", 3, 1), key("1a", 4, 0x1a)})
	if got := rw.Nodes[0].Ctime; !got.Equal(time.Unix(0, 1795000000123456789)) {
		t.Errorf("RWMutex key's ctime %v", got)
	}
	if got := rw.Nodes[1].Ctime; !got.IsZero() {
		t.Errorf("Mutex key's ctime %v, want unknown", got)
	}
	// A node's place survives a websocket client's re-sort (NodeLess).
	s := BuildEtcd("/locks/x", []EtcdKey{key("ff", 3, 0xff), key("0a", 4, 0x0a), key("zz", 1, 0)})
	sorted := slices.Clone(s.Nodes)
	slices.Reverse(sorted)
	SortNodes(sorted)
	for i := range sorted {
		if sorted[i].Name != s.Nodes[i].Name {
			t.Fatalf("re-sorted %v, built %v", names(sorted), names(s.Nodes))
		}
	}
}

func names(ns []Node) string {
	var b strings.Builder
	for _, n := range ns {
		fmt.Fprintf(&b, "%s ", n.Name)
	}
	return b.String()
}

func TestEtcdLockOf(t *testing.T) {
	for _, tc := range []struct {
		key, lock string
		ok        bool
	}{
		{"/locks/orders/694d8b2f1c3a5e07", "/locks/orders", true},
		{"mylock/694d8b2f1c3a5e07", "mylock", true},
		{"/locks/rw/write/1700000000000000000", "/locks/rw", true},
		{"/locks/rw/read/1700000000000000000", "/locks/rw", true},
		{"/locks/rw/read/notanumber", "", false},
		{"/locks/config/timeout", "", false},
		{"694d8b2f1c3a5e07", "", false},
		{"/694d8b2f1c3a5e07", "", false},
	} {
		lock, ok := EtcdLockOf(tc.key)
		if lock != tc.lock || ok != tc.ok {
			t.Errorf("EtcdLockOf(%q) = %q, %v; want %q, %v", tc.key, lock, ok, tc.lock, tc.ok)
		}
	}
}

func TestExpiredHolder(t *testing.T) {
	// a's lease ran out while it held; b, then c hold after it.
	e := &ExpiredHolder{Name: "1a", LeaseID: "1a"}
	for _, step := range []struct {
		keys  []EtcdKey
		alert bool
	}{
		{[]EtcdKey{key("2b", 6, 0x2b), key("3c", 7, 0x3c)}, true}, // b holds now
		{[]EtcdKey{key("2b", 6, 0x2b), key("3c", 7, 0x3c), key("4d", 8, 0x4d)}, true},
		{[]EtcdKey{key("3c", 7, 0x3c), key("4d", 8, 0x4d)}, false}, // b released: over
	} {
		s := BuildEtcd("/locks/x", step.keys)
		if got := e.Apply(&s); got != step.alert {
			t.Fatalf("Apply with holders %v = %v, want %v", s.Holders(), got, step.alert)
		}
		if kinds := alertKinds(s); step.alert != slices.Contains(kinds, AlertHolderExpired) {
			t.Errorf("holders %v: alerts %v", s.Holders(), kinds)
		}
		if step.alert && !strings.Contains(s.Alerts[len(s.Alerts)-1].Message, "2b holds it now") {
			t.Errorf("message: %s", s.Alerts[len(s.Alerts)-1].Message)
		}
	}
	// No one holds after the expiry: the alert stays until someone has
	// held and let go.
	e = &ExpiredHolder{Name: "1a", LeaseID: "1a"}
	empty := BuildEtcd("/locks/x", nil)
	if !e.Apply(&empty) || !strings.Contains(empty.Alerts[0].Message, "no one holds it now") {
		t.Errorf("empty lock after the expiry: %v", empty.Alerts)
	}
}

func alertKinds(s Snapshot) []string {
	var out []string
	for _, a := range s.Alerts {
		out = append(out, a.Kind)
	}
	return out
}
