package zkwatch

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// A big queue is published from its listing first: the first snapshot
// has every node in order with the holder and whom each waiter waits for,
// and says it is filling, with no node's data or session claimed; the
// holders and the first screenful are read next, then the rest, and no
// snapshot says it is complete before every node has its data.
func TestBigQueueNamesFirst(t *testing.T) {
	s := sharedServer(t)
	c := connect(t, []string{s.Addr()}, 30*time.Second)
	const nodes = 20_000
	path := fresh("/big")
	mkdirs(t, c, path)
	// Persistent sequential nodes of one client, made in transactions,
	// each named with its own random-looking prefix (go-zookeeper's Lock
	// names), so the listing's order is not the queue's.
	data := map[string]string{} // node name → its data
	var lowest string
	for start := 0; start < nodes; start += 1000 {
		var ops []any
		for i := start; i < min(nodes, start+1000); i++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/_c_%032x-lock-", path, (i*7919)%nodes),
				Data: fmt.Appendf(nil, "worker-%d", i), Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagSequence})
		}
		res, err := c.Multi(ops...)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		for i, r := range res {
			name := r.String[len(path)+1:]
			data[name] = fmt.Sprintf("worker-%d", start+i)
			if lowest == "" {
				lowest = name
			}
		}
	}

	type seen struct {
		filling *lockqueue.Filling
		nodes   []lockqueue.Node
	}
	var (
		mu    sync.Mutex
		snaps []seen
		done  = make(chan struct{})
	)
	publish := func(snap lockqueue.Snapshot) {
		if snap.Path != path || len(snap.Nodes) == 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		snaps = append(snaps, seen{snap.Filling, snap.Nodes})
		if snap.Filling == nil && len(snaps) > 0 && len(snap.Nodes) == nodes {
			select {
			case <-done:
			default:
				close(done)
			}
		}
	}
	startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}, Publish: publish, Poll: time.Hour})
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatalf("no complete snapshot of %d nodes after %v", nodes, waitTimeout)
	}
	mu.Lock()
	defer mu.Unlock()

	first := snaps[0]
	if first.filling == nil || first.filling.Of != nodes || first.filling.Read != 0 {
		t.Fatalf("first snapshot's filling %+v, want 0 of %d read", first.filling, nodes)
	}
	checkOrder(t, "first snapshot", first.nodes, lowest, nodes)
	for _, n := range first.nodes {
		if n.Data != "" || n.Session != "" || n.Czxid != 0 {
			t.Fatalf("first snapshot claims %s's data %q, session %q, czxid %d before reading them", n.Name, n.Data, n.Session, n.Czxid)
		}
	}

	// The holder and the first screenful are read before the rest.
	if len(snaps) < 3 {
		t.Fatalf("%d snapshots, want the listing's, the head's and the complete one", len(snaps))
	}
	head := snaps[1]
	if head.filling == nil || head.filling.Read < screenful || head.filling.Read >= nodes {
		t.Fatalf("second snapshot's filling %+v, want the first %d of %d read", head.filling, screenful, nodes)
	}
	for i, n := range head.nodes[:screenful] {
		if n.Data != data[n.Name] {
			t.Fatalf("second snapshot's node %d (%s) has data %q, want %q", i, n.Name, n.Data, data[n.Name])
		}
	}

	for i, sn := range snaps {
		unread := 0
		for _, n := range sn.nodes {
			if n.Data == "" {
				unread++
			}
		}
		switch {
		case sn.filling == nil && unread > 0:
			t.Fatalf("snapshot %d says it is complete with %d nodes unread", i, unread)
		case sn.filling != nil && sn.filling.Of-sn.filling.Read != unread:
			t.Fatalf("snapshot %d's filling %+v, but %d nodes are unread", i, sn.filling, unread)
		}
	}
	last := snaps[len(snaps)-1]
	checkOrder(t, "complete snapshot", last.nodes, lowest, nodes)
	for _, n := range last.nodes {
		if n.Data != data[n.Name] || n.Session != "0x0" || n.Czxid == 0 {
			t.Fatalf("complete snapshot's %s: data %q session %q czxid %d, want data %q of a persistent node", n.Name, n.Data, n.Session, n.Czxid, data[n.Name])
		}
	}
	t.Logf("%d snapshots; filling: %v", len(snaps), func() (out []string) {
		for _, sn := range snaps {
			if sn.filling != nil {
				out = append(out, fmt.Sprintf("%d/%d", sn.filling.Read, sn.filling.Of))
			}
		}
		return out
	}())
}

// checkOrder checks that nodes are the queue in sequence order, held by
// holder, each waiter waiting for the node before it.
func checkOrder(t *testing.T, what string, nodes []lockqueue.Node, holder string, want int) {
	t.Helper()
	if len(nodes) != want {
		t.Fatalf("%s has %d nodes, want %d", what, len(nodes), want)
	}
	if !slices.IsSortedFunc(nodes, func(a, b lockqueue.Node) int { return int(a.Seq - b.Seq) }) {
		t.Fatalf("%s is not in sequence order", what)
	}
	if nodes[0].Name != holder || !nodes[0].Holding {
		t.Fatalf("%s: first node %s holding %t, want %s holding", what, nodes[0].Name, nodes[0].Holding, holder)
	}
	for i := 1; i < len(nodes); i++ {
		if nodes[i].Holding || nodes[i].WaitsFor != nodes[i-1].Name {
			t.Fatalf("%s: node %d %s holding %t waits for %q, want waiting for %s", what, i, nodes[i].Name, nodes[i].Holding, nodes[i].WaitsFor, nodes[i-1].Name)
		}
	}
}
