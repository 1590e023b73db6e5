package hub

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// queue builds a real go-zookeeper style queue of n nodes at path, with the
// given revision, through the domain model.
func queue(path string, rev int64, n int) lockqueue.Snapshot {
	kids := make([]lockqueue.Child, n)
	for i := range kids {
		kids[i] = lockqueue.Child{
			Name:           lockqueue.SeqName(fmt.Sprintf("_c_%032x-lock-", i+1), int64(i)),
			Czxid:          int64(100 + i),
			EphemeralOwner: int64(0x1000 + i),
		}
	}
	s := lockqueue.Build(path, kids, lockqueue.Options{})
	s.Revision = rev
	s.Connection = lockqueue.Connected
	return s
}

func TestLatestListRemove(t *testing.T) {
	h := New()
	if _, ok := h.Latest("/a"); ok {
		t.Fatal("Latest on an empty hub reported a snapshot")
	}
	h.Publish(lockqueue.Snapshot{}) // no path: dropped
	for _, p := range []string{"/b", "/a", "/c/d"} {
		h.Publish(queue(p, 1, 2))
	}
	h.Publish(queue("/a", 2, 3))

	got, ok := h.Latest("/a")
	if !ok || got.Revision != 2 || len(got.Nodes) != 3 {
		t.Fatalf("Latest(/a) = rev %d, %d nodes, %v; want rev 2, 3 nodes", got.Revision, len(got.Nodes), ok)
	}
	var paths []string
	for _, s := range h.List() {
		paths = append(paths, s.Path)
	}
	if fmt.Sprint(paths) != "[/a /b /c/d]" {
		t.Fatalf("List paths = %v, want [/a /b /c/d]", paths)
	}

	sub := h.Subscribe("/b")
	h.Remove("/b")
	select {
	case <-sub.Done():
	default:
		t.Fatal("Remove did not end the subscription")
	}
	if _, ok := sub.Next(); ok {
		t.Error("a removed subscription still has a snapshot")
	}
	sub.Close() // after Remove: must not count the viewer twice
	if _, ok := h.Latest("/b"); ok {
		t.Error("Latest(/b) after Remove reported a snapshot")
	}
	st := h.Stats()
	if st.Topics != 2 || st.Viewers != 0 || st.Published != 4 {
		t.Errorf("Stats = %+v, want 2 topics, 0 viewers, 4 published", st)
	}
}

func TestSubscribe(t *testing.T) {
	tests := []struct {
		name      string
		before    []int64 // revisions published before Subscribe
		after     []int64 // and after, without taking any
		want      int64   // revision Next returns; 0: empty mailbox
		coalesced int64
	}{
		{name: "nothing yet", want: 0},
		{name: "current state at once", before: []int64{1, 2}, want: 2},
		{name: "first publish after subscribe", after: []int64{7}, want: 7},
		{name: "slow reader gets the newest", before: []int64{1}, after: []int64{2, 3, 4}, want: 4, coalesced: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := New()
			for _, r := range tc.before {
				h.Publish(queue("/l", r, 1))
			}
			sub := h.Subscribe("/l")
			defer sub.Close()
			for _, r := range tc.after {
				h.Publish(queue("/l", r, 1))
			}
			if st := h.Stats(); st.Viewers != 1 || st.Coalesced != tc.coalesced || st.Pending > st.Viewers {
				t.Errorf("Stats = %+v, want 1 viewer, %d coalesced, pending <= viewers", st, tc.coalesced)
			}
			if tc.want == 0 {
				select {
				case <-sub.C():
					t.Fatal("signal without a snapshot")
				default:
				}
				if _, ok := sub.Next(); ok {
					t.Fatal("Next returned a snapshot before any was published")
				}
				return
			}
			<-sub.C()
			got, ok := sub.Next()
			if !ok || got.Revision != tc.want {
				t.Fatalf("Next = rev %d, %v; want rev %d", got.Revision, ok, tc.want)
			}
			if _, ok := sub.Next(); ok {
				t.Fatal("mailbox not empty after Next")
			}
		})
	}
}

// A subscription to a path nobody publishes must not leave a topic behind.
func TestUnpublishedTopicForgotten(t *testing.T) {
	h := New()
	sub := h.Subscribe("/never")
	sub.Close()
	sub.Close()
	h.mu.Lock()
	n := len(h.topics)
	h.mu.Unlock()
	if n != 0 || h.Stats().Viewers != 0 {
		t.Fatalf("%d topics, %d viewers after the only subscriber left; want 0, 0", n, h.Stats().Viewers)
	}
}

// reader takes snapshots as they are signalled, pausing after each, and
// records the revisions it saw.
func reader(sub *Sub, pause time.Duration, seen *[]int64, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case <-sub.Done():
			return
		case <-sub.C():
			if s, ok := sub.Next(); ok {
				*seen = append(*seen, s.Revision)
			}
			time.Sleep(pause)
		}
	}
}

// With fake time: a reader that keeps up sees every revision in order; one
// that is ten times slower than the publisher sees the newest state and skips
// the rest; a reader that never reads costs one snapshot; and the publisher
// finishes on schedule whatever the readers do.
func TestSlowSubscriberCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 50
		h := New()
		fast, slow, stuck := h.Subscribe("/l"), h.Subscribe("/l"), h.Subscribe("/l")
		var fastSeen, slowSeen []int64
		var wg sync.WaitGroup
		wg.Add(2)
		go reader(fast, 0, &fastSeen, &wg)
		go reader(slow, time.Second, &slowSeen, &wg)

		start := time.Now()
		for r := int64(1); r <= n; r++ {
			h.Publish(queue("/l", r, 3))
			time.Sleep(100 * time.Millisecond)
		}
		if d := time.Since(start); d != n*100*time.Millisecond {
			t.Errorf("publisher took %v of fake time, want %v: it waited on a reader", d, n*100*time.Millisecond)
		}
		time.Sleep(2 * time.Second) // let the slow reader take the last one
		synctest.Wait()

		if st := h.Stats(); st.Pending != 1 || st.Viewers != 3 {
			t.Errorf("Stats = %+v, want exactly the stuck reader's one snapshot pending", st)
		}
		if got, ok := stuck.Next(); !ok || got.Revision != n {
			t.Errorf("stuck reader's mailbox holds rev %d, %v; want the newest, %d", got.Revision, ok, n)
		}
		h.Remove("/l")
		wg.Wait()

		if len(fastSeen) != n || fastSeen[0] != 1 || fastSeen[n-1] != n {
			t.Errorf("fast reader saw %v, want 1..%d", fastSeen, n)
		}
		for i := 1; i < len(fastSeen); i++ {
			if fastSeen[i] != fastSeen[i-1]+1 {
				t.Fatalf("fast reader saw %v, want every revision in order", fastSeen)
			}
		}
		if len(slowSeen) == 0 || len(slowSeen) > n/5 || slowSeen[len(slowSeen)-1] != n {
			t.Errorf("slow reader saw %v, want a few revisions ending with %d", slowSeen, n)
		}
	})
}

// Run with -race: publishers, subscribers and removals at once.
func TestConcurrent(t *testing.T) {
	h := New()
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := int64(1); r <= 200; r++ {
				h.Publish(queue(fmt.Sprintf("/l%d", p), r, 2))
				if r%50 == 0 {
					h.Remove(fmt.Sprintf("/l%d", p))
				}
			}
		}()
	}
	for s := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				sub := h.Subscribe(fmt.Sprintf("/l%d", s%4))
				select {
				case <-sub.C():
					sub.Next()
				case <-sub.Done():
				default:
				}
				_ = h.List()
				sub.Close()
			}
		}()
	}
	wg.Wait()
	if st := h.Stats(); st.Viewers != 0 || st.Pending != 0 {
		t.Fatalf("Stats = %+v after everyone left, want 0 viewers, 0 pending", st)
	}
}

func BenchmarkPublish(b *testing.B) {
	for _, subs := range []int{0, 10, 1000} {
		b.Run(fmt.Sprintf("subs=%d", subs), func(b *testing.B) {
			h := New()
			for range subs {
				defer h.Subscribe("/l").Close()
			}
			s := queue("/l", 1, 10)
			b.ReportAllocs()
			for b.Loop() {
				h.Publish(s)
			}
		})
	}
}

// NextSeq numbers publishes: the same number for every subscriber of one
// publish, growing, never 0.
func TestNextSeq(t *testing.T) {
	h := New()
	h.Publish(queue("/a", 1, 1))
	a, b := h.Subscribe("/a"), h.Subscribe("/a")
	defer a.Close()
	defer b.Close()
	_, sa, _ := a.NextSeq()
	_, sb, _ := b.NextSeq()
	if sa == 0 || sa != sb {
		t.Fatalf("seqs %d and %d for the same snapshot, want equal and non-zero", sa, sb)
	}
	h.Publish(queue("/other", 1, 1))
	h.Publish(queue("/a", 1, 1)) // same revision, new publish
	snap, s2, ok := a.NextSeq()
	if !ok || s2 <= sa || snap.Revision != 1 {
		t.Fatalf("after a republish: seq %d (was %d) ok %v", s2, sa, ok)
	}
	if _, s, ok := a.NextSeq(); ok || s != 0 {
		t.Fatalf("empty mailbox gave seq %d ok %v", s, ok)
	}
}

// Summaries has one summary per lock with a snapshot, the newest, however
// locks come and go.
func TestSummaries(t *testing.T) {
	h := New()
	sub := h.Subscribe("/waiting") // a topic without a snapshot: no summary
	defer sub.Close()
	for i := range 10 {
		h.Publish(queue(fmt.Sprintf("/l/%d", i), 1, i))
	}
	h.Publish(queue("/l/3", 2, 7))
	h.Remove("/l/0")
	h.Remove("/l/9")
	h.Remove("/l/5")
	h.Remove("/not/there")
	got := map[string]*lockqueue.Summary{}
	for _, s := range h.Summaries(nil) {
		if got[s.Key()] != nil {
			t.Errorf("%s summarised twice", s.Key())
		}
		got[s.Key()] = s
	}
	for i := range 10 {
		p := fmt.Sprintf("/l/%d", i)
		s, ok := got[p]
		if gone := i == 0 || i == 9 || i == 5; gone == ok {
			t.Errorf("%s summarised: %v, want %v", p, ok, !gone)
			continue
		}
		if !ok {
			continue
		}
		want, _ := h.Latest(p)
		if s.Revision != want.Revision || s.HolderCount+s.WaiterCount != len(want.Nodes) {
			t.Errorf("%s summary at revision %d with %d nodes, snapshot at %d with %d", p, s.Revision, s.HolderCount+s.WaiterCount, want.Revision, len(want.Nodes))
		}
	}
	if len(got) != 7 {
		t.Errorf("%d summaries, want 7", len(got))
	}
}

// BenchmarkIdleParentMemory publishes 100,000 empty lock parents, as the
// watcher reads a fleet's idle locks, and reports the heap they keep in
// the hub per parent (bytes/parent, after a GC). The paths' own bytes are
// not counted: the reader that publishes them holds them anyway.
//
//	go test -run '^$' -bench BenchmarkIdleParentMemory -benchtime 3x ./hub/
func BenchmarkIdleParentMemory(b *testing.B) {
	const parents = 100_000
	paths := make([]string, parents)
	for i := range paths {
		paths[i] = fmt.Sprintf("/locks/order-%06d", i)
	}
	updated := time.Now()
	var perParent float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		h := New()
		for i, p := range paths {
			s := lockqueue.Build(p, nil, lockqueue.Options{})
			s.Revision, s.Connection, s.Exists, s.WatchSource, s.UpdatedAt = int64(i+1), lockqueue.Connected, true, "4lw", updated
			h.Publish(s)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perParent = float64(after.HeapAlloc-before.HeapAlloc) / parents
		runtime.KeepAlive(h)
	}
	b.ReportMetric(perParent, "bytes/parent")
}

// Republish offers a topic's newest snapshot again, under a new sequence
// number, and nothing for a topic never published.
func TestRepublish(t *testing.T) {
	h := New()
	h.Republish("/none")
	s := queue("/a", 1, 2)
	h.Publish(s)
	sub := h.Subscribe("/a")
	defer sub.Close()
	<-sub.C()
	_, first, _ := sub.NextSeq()
	h.Republish("/a")
	<-sub.C()
	again, seq, ok := sub.NextSeq()
	if !ok || seq <= first || again.Revision != s.Revision {
		t.Errorf("republished: %v seq %d after %d, revision %d", ok, seq, first, again.Revision)
	}
}
