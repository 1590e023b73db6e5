package zkwatch

import (
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A fleet below a prefix costs few requests at start: the tree is listed
// a thousand folders a multiRead, and each held lock is read in one more
// (its data, children and their data, firstread.go), whatever the number
// of empty parents. Each lock's snapshot is whole: the holder and its
// waiter, with their sessions.
func TestFleetReads(t *testing.T) {
	s := sharedServer(t)
	c := connect(t, []string{s.Addr()}, 30*time.Second)
	const parents, held = 3000, 300
	prefix := fresh("/fleet/locks")
	want := makeFleet(t, c, prefix, parents, held)

	var mu sync.Mutex
	seen := map[string]bool{}
	all := make(chan struct{})
	publish := func(snap lockqueue.Snapshot) {
		mu.Lock()
		defer mu.Unlock()
		n := snap.Nodes
		if !want[snap.Path] || seen[snap.Path] || !snap.Live() || len(n) != 2 || !n[0].Holding || n[1].Holding ||
			n[1].WaitsFor != n[0].Name || n[0].Session == "" || snap.Recipe != lockqueue.Kazoo {
			return
		}
		if seen[snap.Path] = true; len(seen) == held {
			close(all)
		}
	}
	w, _ := startWatcher(t, Config{Servers: []string{s.Addr()}, Prefixes: []string{prefix}, Publish: publish, Poll: time.Hour})
	select {
	case <-all:
	case <-time.After(waitTimeout):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d held locks published whole", len(seen), held)
	}
	waitListed(t, w, parents-held)
	// The prefix's watch, its listing, three batches of folders, a request
	// per held lock, and a few to spare for a listing a change sent again.
	if reads, most := w.Reads(), int64(1+1+(parents+multiReadBatch-1)/multiReadBatch+held+5); reads > most {
		t.Errorf("%d requests to find %d held locks among %d parents, want at most %d", reads, held, parents, most)
	} else {
		t.Logf("%d requests for %d held locks among %d parents", reads, held, parents)
	}
	if n := len(w.Paths()); n != held {
		t.Errorf("%d lock parents watched, want the %d held", n, held)
	}
}
