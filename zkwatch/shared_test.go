package zkwatch

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// A published snapshot is never changed afterwards: the watcher shares its
// nodes with the next snapshots (a watch-table poll that changes nothing
// of a lock copies none of them) and copies them before it changes one.
// Each snapshot is encoded when published and again at the end, while a
// reader encodes them all the time, as views do: a join or a hold's clock
// written into a shared node shows as a difference here and as a race
// under -race. The queue goes through what a join changes on nodes it
// did not read: a waiter's watch seen by a later poll, its edge confirmed,
// a hand-off, and polls that change nothing.
func TestPublishedSnapshotsNeverChange(t *testing.T) {
	s := sharedServer(t)
	dir := fresh("/shared/queue")
	mkdirs(t, connect(t, []string{s.Addr()}, 10*time.Second), dir)

	type published struct {
		snap lockqueue.Snapshot
		json []byte
	}
	var (
		mu   sync.Mutex
		pubs []published
	)
	rec := newRecorder()
	publish := func(snap lockqueue.Snapshot) {
		b, err := json.Marshal(snap)
		if err != nil {
			t.Errorf("encode a published snapshot: %v", err)
		}
		mu.Lock()
		pubs = append(pubs, published{snap, b})
		mu.Unlock()
		rec.publish(snap)
	}
	// The reader reads the fields a join and a hold's clock set, plainly:
	// (encoding/json's pooled buffers would order it with the watcher's
	// own encoding in publish, and hide a race from the detector.)
	stop, read := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(read)
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			all := append([]published(nil), pubs...)
			mu.Unlock()
			for _, p := range all {
				readJoined(p.snap)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{dir}, Poll: 100 * time.Millisecond, Publish: publish})

	holder := zk.NewLock(connect(t, []string{s.Addr()}, 10*time.Second), dir, acl)
	if err := holder.Lock(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	waiterErr := make(chan error, 1)
	waiter := zk.NewLock(connect(t, []string{s.Addr()}, 10*time.Second), dir, acl)
	go func() { waiterErr <- waiter.Lock() }()
	rec.wait(t, dir, 0, "the waiter's watch confirmed", func(snap lockqueue.Snapshot) bool {
		return len(snap.Nodes) == 2 && snap.Nodes[1].Edge == lockqueue.EdgeConfirmed
	})
	// Polls that change nothing, then the hand-off and more polls.
	time.Sleep(500 * time.Millisecond)
	if err := holder.Unlock(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	if err := <-waiterErr; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	rec.wait(t, dir, 0, "the waiter holding alone", func(snap lockqueue.Snapshot) bool {
		return len(snap.Nodes) == 1 && snap.Nodes[0].Holding && !snap.Nodes[0].HeldSince().IsZero()
	})
	time.Sleep(500 * time.Millisecond)
	close(stop)
	<-read

	mu.Lock()
	defer mu.Unlock()
	for i, p := range pubs {
		b, err := json.Marshal(p.snap)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		if !bytes.Equal(b, p.json) {
			t.Errorf("snapshot %d of %d changed after it was published:\nthen %s\nnow  %s", i+1, len(pubs), p.json, b)
		}
	}
}

// readJoined reads every field of s's nodes that a join or CarryHolds sets.
func readJoined(s lockqueue.Snapshot) (n int) {
	for i := range s.Nodes {
		nd := &s.Nodes[i]
		n += len(nd.Watching) + len(nd.Edge) + len(nd.StalledOn()) + int(nd.ExpiresInMs()) +
			nd.StalledSince().Nanosecond() + nd.HeldSince().Nanosecond()
		if nd.Zombie {
			n++
		}
	}
	return n
}

// sessionID is the current session's id, 0 before Run connects.
func (s *session) sessionID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reader == nil {
		return 0
	}
	return s.reader.SessionID()
}

// fulls lists the server paths of the levels.
func (d *discovery) fulls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Collect(maps.Keys(d.levels))
}
