package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// liveViewer reads frames in its own goroutine and applies them as a
// browser would; it reports a frame it cannot apply.
type liveViewer struct {
	c *websocket.Conn

	mu     sync.Mutex
	snap   lockqueue.Snapshot
	frames int
	err    error
	wake   chan struct{}
}

func (v *liveViewer) loop() {
	for {
		_, b, err := v.c.Read(context.Background())
		if err != nil {
			return
		}
		var f Frame
		err = json.Unmarshal(b, &f)
		v.mu.Lock()
		switch {
		case err != nil:
		case f.Type == FrameSnapshot && f.Snapshot != nil:
			v.snap = *f.Snapshot
		case f.Type == FrameDelta && f.Delta != nil:
			v.snap, err = ApplyDelta(v.snap, f.Delta)
		default:
			err = fmt.Errorf("bad frame %.200s", b)
		}
		v.frames++
		if err != nil && v.err == nil {
			v.err = err
		}
		v.mu.Unlock()
		select {
		case v.wake <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// waitFor waits until the viewer's state satisfies ok.
func (v *liveViewer) waitFor(t *testing.T, what string, ok func(lockqueue.Snapshot) bool) {
	t.Helper()
	deadline := time.After(readTimeout)
	for {
		v.mu.Lock()
		done, err := v.frames > 0 && ok(v.snap), v.err
		v.mu.Unlock()
		if err != nil {
			t.Fatalf("viewer: %v", err)
		}
		if done {
			return
		}
		select {
		case <-v.wake:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// 1,000 websocket viewers on one lock: all get the first snapshot, then
// follow a series of changes, some of them published faster than viewers
// read (so viewers are coalesced to different bases), and all end with
// exactly the hub's final state.
func TestThousandViewers(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 sockets")
	}
	const n = 1000
	e := newEnv(t, Config{})
	f := gozkFolder("/crowd", 50)
	f.watchPred = true
	e.hub.Publish(f.snapshot())

	viewers := make([]*liveViewer, n)
	var wg sync.WaitGroup
	for i := range viewers {
		v := e.mustDial(t, "/crowd")
		viewers[i] = &liveViewer{c: v.c, wake: make(chan struct{}, 1)}
		wg.Go(viewers[i].loop)
	}
	defer func() {
		for _, v := range viewers {
			v.c.CloseNow()
		}
		wg.Wait()
	}()
	first := f.snapshot()
	for _, v := range viewers {
		v.waitFor(t, "the first snapshot", func(s lockqueue.Snapshot) bool { return s.Revision == first.Revision })
	}
	if got := e.srv.Viewers(); got != n {
		t.Fatalf("%d viewers open, want %d", got, n)
	}

	next := 50
	for step := range 30 {
		switch step % 3 {
		case 0:
			f.add(next)
			next++
		case 1:
			f.remove(f.kids[0].Name) // the holder releases
		case 2:
			f.kids[len(f.kids)/2].Data = fmt.Appendf(nil, "token %d", step)
		}
		f.rev++
		e.hub.Publish(f.snapshot())
		if step%5 == 4 {
			time.Sleep(20 * time.Millisecond) // let some catch up, others not
		}
	}
	f.conn = lockqueue.Reconnecting
	f.rev++
	e.hub.Publish(f.snapshot())
	final, _ := e.hub.Latest("/crowd")
	want, _ := json.Marshal(wireSnapshot(final))
	frames := 0
	for i, v := range viewers {
		v.waitFor(t, fmt.Sprintf("viewer %d to reach the final revision", i), func(s lockqueue.Snapshot) bool {
			return s.Revision == final.Revision && s.Connection == lockqueue.Reconnecting
		})
		v.mu.Lock()
		got, _ := json.Marshal(v.snap)
		frames += v.frames
		v.mu.Unlock()
		if !bytes.Equal(got, want) {
			t.Fatalf("viewer %d ends with\n%.1000s\nwant\n%.1000s", i, got, want)
		}
	}
	st := e.hub.Stats()
	t.Logf("%d viewers converged: %d frames in all (%.1f each for 32 snapshots), %d coalesced", n, frames, float64(frames)/n, st.Coalesced)
	if st.Pending > st.Viewers {
		t.Errorf("hub holds %d pending snapshots for %d viewers", st.Pending, st.Viewers)
	}
}

// A viewer that stops reading is dropped once a write to it has been stuck
// for the write timeout, while the others receive every change; the hub
// never holds more than one pending snapshot per viewer meanwhile.
func TestStuckViewerDropped(t *testing.T) {
	e := newEnv(t, Config{WriteTimeout: 300 * time.Millisecond})
	e.hub.Publish(bulky(1, 200))
	stuck := e.mustDial(t, "/busy") // never reads
	var fast []*viewer
	for range 3 {
		v := e.mustDial(t, "/busy")
		v.next()
		fast = append(fast, v)
	}
	if got := e.srv.Viewers(); got != 4 {
		t.Fatalf("%d viewers, want 4", got)
	}
	start := time.Now()
	rev := int64(1)
	for e.srv.Viewers() == 4 {
		if time.Since(start) > readTimeout {
			t.Fatalf("the stuck viewer was never dropped: %+v", e.hub.Stats())
		}
		rev++
		e.hub.Publish(bulky(rev, 200))
		for _, v := range fast {
			v.next()
			if v.snap.Revision != rev {
				t.Fatalf("a reading viewer got revision %d, want %d", v.snap.Revision, rev)
			}
		}
		if st := e.hub.Stats(); st.Pending > st.Viewers {
			t.Fatalf("hub holds %d pending snapshots for %d viewers: unbounded", st.Pending, st.Viewers)
		}
	}
	dropped := time.Since(start)
	// The others go on.
	for range 5 {
		rev++
		e.hub.Publish(bulky(rev, 200))
		for _, v := range fast {
			v.next()
			if v.snap.Revision != rev {
				t.Fatalf("after the drop, a viewer got revision %d, want %d", v.snap.Revision, rev)
			}
		}
	}
	deadline := time.Now().Add(readTimeout)
	for e.hub.Stats().Viewers != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("hub still counts %d subscriptions, want 3", e.hub.Stats().Viewers)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The stuck viewer's connection is gone: reading now drains what was
	// buffered and then fails.
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	for {
		if _, _, err := stuck.c.Read(ctx); err != nil {
			break
		}
	}
	t.Logf("stuck viewer dropped after %v and %d revisions (write timeout 300ms); %+v", dropped, rev, e.hub.Stats())
}

// BenchmarkFanout is the web side of a change alone: from a one-node change
// published to a 1,000-node queue to the frame read by every one of 100
// websocket viewers (offering permessage-deflate, as browsers do). ms/op is
// the time until the last viewer has it.
//
//	go test ./web -run '^$' -bench BenchmarkFanout
func BenchmarkFanout(b *testing.B) {
	const viewers = 100
	e := newEnv(b, Config{Logger: slog.New(slog.DiscardHandler)})
	f := gozkFolder("/fan", 1000)
	f.watchPred = true
	e.hub.Publish(f.snapshot())
	var got sync.WaitGroup
	var wg sync.WaitGroup
	for range viewers {
		v, resp, err := e.dial(b, "/fan", &websocket.DialOptions{CompressionMode: websocket.CompressionNoContextTakeover})
		if err != nil {
			b.Fatalf("dial: %v (%s)", err, statusOfResp(resp))
		}
		if _, _, err := v.c.Read(context.Background()); err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			for {
				if _, _, err := v.c.Read(context.Background()); err != nil {
					return
				}
				got.Done()
			}
		})
	}
	next := 1000
	var total time.Duration
	for b.Loop() {
		if next%2 == 0 {
			f.add(next)
		} else {
			f.remove(f.kids[len(f.kids)-1].Name)
		}
		next++
		f.rev++
		snap := f.snapshot()
		got.Add(viewers)
		start := time.Now()
		e.hub.Publish(snap)
		got.Wait()
		total += time.Since(start)
	}
	b.ReportMetric(float64(total)/float64(b.N)/1e6, "ms/op")
	e.srv.CloseWebsockets()
	wg.Wait()
}
