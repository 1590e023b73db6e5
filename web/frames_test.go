package web

import (
	"bytes"
	"runtime/debug"
	"testing"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// encoder turns one socket's sequence of snapshots into frames, each
// computed from scratch. The websocket handler shares frames between
// sockets instead (frames.go); encoder is the reference it must agree with.
type encoder struct {
	prev lockqueue.Snapshot
	sent bool
}

// frame encodes s as a delta against the last snapshot sent, or whole when
// that is smaller or there is nothing to patch.
func (e *encoder) frame(s lockqueue.Snapshot) ([]byte, string, error) {
	var prev *lockqueue.Snapshot
	if e.sent {
		prev = &e.prev
	}
	b, kind, err := encodeFrame(prev, s, nil)
	if err != nil {
		return nil, "", err
	}
	e.prev, e.sent = wireSnapshot(s), true
	return b, kind, nil
}

// Shared frames are byte for byte what a socket would have computed alone,
// and sockets at the same point share one encoding.
func TestSharedFramesMatchEncoder(t *testing.T) {
	// Big frames are held weakly, so a collection between two sockets'
	// takes (sequential here, concurrent in a server) would legitimately
	// end the sharing this test looks for. Keep the collector out of it.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	h := hub.New()
	s := &Server{caches: map[string]*frameCache{}}
	f := gozkFolder("/l", 300) // above exactCutoff: deltas by node count
	f.watchPred = true
	h.Publish(f.snapshot())

	type sock struct {
		sub    *hub.Sub
		frames sockFrames
		ref    encoder
		every  int // takes a snapshot every this many publishes
	}
	var socks []*sock
	for _, every := range []int{1, 1, 1, 2, 3, 7} {
		socks = append(socks, &sock{sub: h.Subscribe("/l"), frames: sockFrames{cache: s.frames("/l")}, every: every})
	}
	take := func(step int) map[*sock][]byte {
		got := map[*sock][]byte{}
		for _, k := range socks {
			if step%k.every != 0 {
				continue
			}
			snap, seq, ok := k.sub.NextSeq()
			if !ok {
				t.Fatalf("step %d: empty mailbox", step)
			}
			b, kind, err := k.frames.next(snap, seq)
			if err != nil {
				t.Fatal(err)
			}
			want, wkind, err := k.ref.frame(snap)
			if err != nil {
				t.Fatal(err)
			}
			if kind != wkind || !bytes.Equal(b, want) {
				t.Fatalf("step %d (every %d): shared %s frame differs from the socket's own %s frame\n%.500s\n%.500s", step, k.every, kind, wkind, b, want)
			}
			got[k] = b
		}
		return got
	}
	got := take(0)
	if &got[socks[0]][0] != &got[socks[1]][0] {
		t.Error("two new sockets got separately encoded first snapshots")
	}
	for step := 1; step <= 40; step++ {
		switch step % 4 {
		case 0:
			f.add(300 + step)
		case 1:
			f.remove(f.kids[0].Name)
		case 2:
			f.conn = lockqueue.Reconnecting // same revision, another snapshot
			f.rev--
		case 3:
			f.conn = lockqueue.Connected
		}
		f.rev++
		h.Publish(f.snapshot())
		got := take(step)
		if &got[socks[0]][0] != &got[socks[2]][0] {
			t.Errorf("step %d: sockets at the same point got separately encoded frames", step)
		}
	}
	for _, k := range socks {
		k.sub.Close()
		s.releaseFrames("/l", k.frames.cache)
	}
	if len(s.caches) != 0 {
		t.Errorf("%d frame caches left after every socket went", len(s.caches))
	}
}
