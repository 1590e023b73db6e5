package lockqueue

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestLockKey(t *testing.T) {
	for _, tc := range []struct {
		snap Snapshot
		want string
	}{
		{Snapshot{Path: "/locks/a"}, "/locks/a"},
		{Snapshot{Service: ZooKeeper, Path: "/locks/a"}, "/locks/a"},
		{Snapshot{Service: "etcd", Path: "/locks/a"}, "etcd:/locks/a"},
		{Snapshot{Service: "redis", Path: "orders-lock"}, "redis:orders-lock"},
	} {
		if got := tc.snap.Key(); got != tc.want {
			t.Errorf("%q %q: key %q, want %q", tc.snap.Service, tc.snap.Path, got, tc.want)
		}
		if got := tc.snap.Lock().Service; got == "" {
			t.Errorf("%q %q: Lock() names no service", tc.snap.Service, tc.snap.Path)
		}
	}
}

func TestWaitEdges(t *testing.T) {
	for _, tc := range []struct {
		name string
		node Node
		want []WaitEdge
	}{
		{"holder", Node{Holding: true}, nil},
		{"zookeeper rule, table silent", Node{WaitsFor: "a", Edge: EdgeUnknown}, []WaitEdge{{"a", ByRule}}},
		{"zookeeper rule, table confirms", Node{WaitsFor: "a", Edge: EdgeConfirmed}, []WaitEdge{{"a", ByServer}}},
		{"etcd predecessor", Node{WaitsFor: "a", Rare: &Rare{WaitsForSource: ByRule}}, []WaitEdge{{"a", ByRule}}},
		{"postgres blockers", Node{WaitsFor: "a", Rare: &Rare{WaitsForSource: ByServer, BlockedBy: []string{"a", "b"}}},
			[]WaitEdge{{"a", ByServer}, {"b", ByServer}}},
	} {
		if got := tc.node.WaitEdges(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: edges %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The service-neutral fields are additive: a ZooKeeper snapshot's JSON
// carries none of them.
func TestServiceFieldsLeftOutForZooKeeper(t *testing.T) {
	s := Build("/locks/a", []Child{{Name: "lock-0000000001", EphemeralOwner: 1}, {Name: "lock-0000000002", EphemeralOwner: 2}}, Options{})
	b, err := json.Marshal(s.WithWaitEdges())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"service"`, `"order"`, `"client"`, `"waitsForSource"`, `"blockedBy"`, `"leaseId"`, `"leaseTtlMs"`, `"leaseLeftMs"`, `"waitEdges"`} {
		if strings.Contains(string(b), key) {
			t.Errorf("a ZooKeeper snapshot's JSON has %s: %s", key, b)
		}
	}
}

// WithWaitEdges stamps the edges on a neutral snapshot's copy, leaving the
// (possibly shared) original alone.
func TestWithWaitEdges(t *testing.T) {
	orig := Snapshot{Service: "postgres", Nodes: []Node{
		{Name: "a", Holding: true, Rare: &Rare{Client: "1"}},
		{Name: "b", WaitsFor: "a", Rare: &Rare{WaitsForSource: ByServer, BlockedBy: []string{"a", "c"}, Client: "2"}},
		{Name: "c", WaitsFor: "b", Rare: &Rare{Client: "3"}},
	}}
	got := orig.WithWaitEdges()
	for i, want := range [][]WaitEdge{nil, {{"a", ByServer}, {"c", ByServer}}, {{"b", ByRule}}} {
		if !slices.Equal(got.Nodes[i].ShownEdges(), want) {
			t.Errorf("%s: shown edges %v, want %v", got.Nodes[i].Name, got.Nodes[i].ShownEdges(), want)
		}
		if orig.Nodes[i].ShownEdges() != nil {
			t.Errorf("%s: the original node was stamped", orig.Nodes[i].Name)
		}
	}
}

// TestLockQuery: ZooKeeper's locks name no service on the wire, every
// other service's do.
func TestLockQuery(t *testing.T) {
	for _, tc := range []struct {
		id   LockID
		want string
	}{
		{LockID{Service: ZooKeeper, Name: "/locks/a b"}, "path=%2Flocks%2Fa+b"},
		{LockID{Name: "/locks/a"}, "path=%2Flocks%2Fa"},
		{LockID{Service: "redis", Name: "orders"}, "path=orders&service=redis"},
	} {
		if got := tc.id.Query().Encode(); got != tc.want {
			t.Errorf("%+v: query %q, want %q", tc.id, got, tc.want)
		}
		if got, want := tc.id.WireService() == "", tc.id.Service == "" || tc.id.Service == ZooKeeper; got != want {
			t.Errorf("%+v: wire service %q", tc.id, tc.id.WireService())
		}
	}
}
