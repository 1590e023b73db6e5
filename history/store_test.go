package history_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

var t0 = time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)

// clock is a settable clock for the store, so segment rotation and
// retention follow the test's time, not the wall's.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock(t time.Time) *clock { return &clock{now: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// queue builds a ZooKeeper-style exclusive queue: the first node holds,
// each other waits for the one before it. A name ending in "!" is a zombie.
func queue(path string, at time.Time, names ...string) lockqueue.Snapshot {
	s := lockqueue.Snapshot{Path: path, Connection: lockqueue.Connected, Exists: true, Recipe: lockqueue.Kazoo, UpdatedAt: at,
		Nodes: make([]lockqueue.Node, 0, len(names))}
	for i, n := range names {
		name, zombie := strings.CutSuffix(n, "!")
		node := lockqueue.Node{Name: name, Mode: lockqueue.Exclusive, Holding: i == 0, Zombie: zombie, Session: "0x" + name}
		if i > 0 {
			node.WaitsFor = s.Nodes[i-1].Name
			node.Edge = lockqueue.EdgeConfirmed
		}
		s.Nodes = append(s.Nodes, node)
	}
	if len(names) > 0 && strings.HasSuffix(names[0], "!") {
		s.Alerts = []lockqueue.Alert{{Kind: lockqueue.AlertZombie, Nodes: []string{s.Nodes[0].Name}, Message: "zombie"}}
	}
	return s
}

func openStore(t testing.TB, opts history.Options) *history.Store {
	t.Helper()
	s, err := history.Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func record(t testing.TB, s history.Writer, snaps ...lockqueue.Snapshot) {
	t.Helper()
	for _, snap := range snaps {
		if _, err := s.Record(snap); err != nil {
			t.Fatalf("Record: %v", err)
		}
	}
}

func kinds(evs []history.Event) []string {
	var out []string
	for _, e := range evs {
		w := string(e.Kind)
		if e.Node != "" {
			w += " " + e.Node
		}
		if e.How != "" {
			w += " " + string(e.How)
		}
		out = append(out, w)
	}
	return out
}

// A session of a lock: hand-offs, a waiter giving up, a zombie holder
// expiring, a reader gap. The events, the queue at chosen moments and the
// figures are what the snapshots showed.
func TestRecordReplayAndFigures(t *testing.T) {
	c := newClock(t0)
	checkSession(t, openStore(t, history.Options{Dir: t.TempDir(), Now: c.Now}))
}

// checkSession records a session of a lock into s and checks what s
// answers of it.
func checkSession(t *testing.T, s history.DB) {
	const p = "/locks/orders"
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	gap := queue(p, at(60), "c", "d")
	gap.Connection = lockqueue.Reconnecting
	record(t, s,
		queue(p, at(0), "a"),            // first sight: a keyframe, not events
		queue(p, at(1), "a", "b"),       // b queues
		queue(p, at(3), "a", "b", "x"),  // x queues
		queue(p, at(10), "b", "x"),      // a released after 10s+, b waited 9s
		queue(p, at(12), "b", "x", "c"), // c queues
		queue(p, at(15), "b", "c"),      // x gave up after 12s
		queue(p, at(20), "b!", "c"),     // b's client is gone
		queue(p, at(30), "c"),           // b expired; c waited 18s
		queue(p, at(40), "c", "d"),
		gap,                        // the reader loses its session
		queue(p, at(70), "d", "e"), // c left unseen; d's acquisition came in the gap
	)

	evs, err := s.Events(p, t0, at(100))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"queued b", "waits-for b", "watch b",
		"queued x", "waits-for x", "watch x",
		"left a released", "acquired b", "waits-for b", "watch b",
		"queued c", "waits-for c", "watch c",
		"left x gave-up", "waits-for c",
		"zombie b", "alert-raised",
		"left b expired", "acquired c", "waits-for c", "watch c", "alert-cleared",
		"queued d", "waits-for d", "watch d",
		"connection",
		"connection", "left c unknown", "acquired d", "waits-for d", "watch d", "queued e", "waits-for e", "watch e",
	}
	if got := kinds(evs); !slices.Equal(got, want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}

	tests := []struct {
		at               int
		holders, waiters []string
		alerts           int
		conn             lockqueue.Connection
	}{
		{0, []string{"a"}, nil, 0, lockqueue.Connected},
		{5, []string{"a"}, []string{"b", "x"}, 0, lockqueue.Connected},
		{13, []string{"b"}, []string{"x", "c"}, 0, lockqueue.Connected},
		{25, []string{"b"}, []string{"c"}, 1, lockqueue.Connected},
		{35, []string{"c"}, nil, 0, lockqueue.Connected},
		{65, []string{"c"}, []string{"d"}, 0, lockqueue.Reconnecting},
		{99, []string{"d"}, []string{"e"}, 0, lockqueue.Connected},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("at %ds", tc.at), func(t *testing.T) {
			st, err := s.At(p, at(tc.at))
			if err != nil {
				t.Fatal(err)
			}
			snap := st.Snapshot()
			if got := snap.Holders(); !slices.Equal(got, tc.holders) {
				t.Errorf("holders %q, want %q", got, tc.holders)
			}
			if got := snap.Waiters(); !slices.Equal(got, tc.waiters) {
				t.Errorf("waiters %q, want %q", got, tc.waiters)
			}
			if len(snap.Alerts) != tc.alerts || snap.Connection != tc.conn {
				t.Errorf("alerts %v connection %s, want %d alerts, %s", snap.Alerts, snap.Connection, tc.alerts, tc.conn)
			}
			for i, n := range snap.Nodes[1:] {
				if n.WaitsFor != snap.Nodes[i].Name {
					t.Errorf("%s waits for %q, want %q", n.Name, n.WaitsFor, snap.Nodes[i].Name)
				}
			}
		})
	}

	before, err := s.At(p, t0)
	if err != nil {
		t.Fatal(err)
	}
	livesText := func(ls []history.Life) []string {
		var out []string
		for _, l := range ls {
			wait := fmt.Sprintf("%g", l.Wait)
			if l.WaitUnknown {
				wait = "?"
			}
			out = append(out, fmt.Sprintf("%s %s wait %s hold %g", l.Node, l.How, wait, l.Hold))
		}
		return out
	}
	lives := livesText(history.Lives(before, evs, at(100)))
	// a held when the history began, and d acquired while the reader was
	// reconnecting: neither wait was seen, as the figures say too.
	wantLives := []string{"a released wait ? hold 10", "b expired wait 9 hold 20", "x gave-up wait 12 hold 0",
		"c unknown wait 18 hold 40", "d  wait ? hold 30", "e  wait 30 hold 0"}
	if !slices.Equal(lives, wantLives) {
		t.Errorf("lives:\n got %q\nwant %q", lives, wantLives)
	}
	// A window that starts before the history knows nothing at its start:
	// the nodes of the first sight come from its restatements, as walked,
	// and their lives are the same.
	var walked []history.Event
	if err := s.Walk(p, t0.Add(-time.Hour), at(100), func(e history.Event) error {
		walked = append(walked, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if lives := livesText(history.Lives(history.State{}, walked, at(100))); !slices.Equal(lives, wantLives) {
		t.Errorf("lives of a window from before the first sight:\n got %q\nwant %q", lives, wantLives)
	}

	if _, err := s.At(p, t0.Add(-time.Hour)); !errors.Is(err, history.ErrNoHistory) {
		t.Errorf("At before the first record: %v, want ErrNoHistory", err)
	}

	st, err := s.Stats(p, t0, at(100))
	if err != nil {
		t.Fatal(err)
	}
	// Waits: b 9s (1→10), c 18s (12→30); d's came in the gap.
	if st.Wait.Count != 2 || st.Wait.Max != 18 || st.Wait.P50 != 9 {
		t.Errorf("wait figures %+v, want 2 waits, p50 9s, max 18s", st.Wait)
	}
	// Holds: a from first sight (0) to 10 = 10s, b 10→30 = 20s; c left unseen.
	if st.Hold.Count != 2 || st.Hold.Max != 20 || st.Hold.P50 != 10 {
		t.Errorf("hold figures %+v, want 2 holds, p50 10s, max 20s", st.Hold)
	}
	// Acquisitions: b and c; a held at first sight and d acquired in the
	// gap, when is not known.
	if st.GaveUp != 1 || st.Expired != 1 || st.Released != 1 || st.Acquisitions != 2 {
		t.Errorf("gave up %d, expired %d, released %d, acquisitions %d; want 1, 1, 1, 2", st.GaveUp, st.Expired, st.Released, st.Acquisitions)
	}
	if st.GiveUpWait.Max != 12 {
		t.Errorf("give-up wait %+v, want 12s", st.GiveUpWait)
	}
	if len(st.Gaps) != 1 || !st.Gaps[0].From.Equal(at(60)) || !st.Gaps[0].To.Equal(at(70)) {
		t.Errorf("gaps %+v, want one from 60s to 70s", st.Gaps)
	}
	if len(st.BusiestHours) != 1 || st.BusiestHours[0].Acquisitions != 2 {
		t.Errorf("busiest hours %+v, want one hour with 2 acquisitions", st.BusiestHours)
	}
}

// Segments rotate, each starting with a keyframe: the queue at a moment
// deep in a later segment is still whole, and reopening keeps it all and
// records the time the recorder was not running as a gap.
func TestSegmentsAndReopen(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	s, err := history.Open(history.Options{Dir: dir, Now: c.Now, SegmentAge: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	const p = "/locks/rotating"
	rotate(t, s, c, p, func() {
		if err := s.Flush(false); err != nil {
			t.Fatal(err)
		}
	})
	if n := len(s.Segments()); n < 5 {
		t.Errorf("%d segments after 5 minutes with SegmentAge 1m, want at least 5", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c.set(t0.Add(time.Hour))
	s = openStore(t, history.Options{Dir: dir, Now: c.Now, SegmentAge: time.Minute})
	checkHolders(t, s, p, 2, 59, 61, 150, 299)
	st, err := s.Stats(p, t0, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	// n2 acquired at 3s and so on: each waited 2s and held 1s (n0, first
	// seen holding at 1s, held 2s as far as the recorder knows).
	if st.Wait.Max != 2 || st.Wait.P50 != 2 || st.Hold.P99 != 1 || st.Acquisitions != 298 {
		t.Errorf("figures over segments: wait %+v hold %+v acquisitions %d", st.Wait, st.Hold, st.Acquisitions)
	}
	if len(st.Gaps) != 1 || !st.Gaps[0].From.Equal(t0.Add(300*time.Second)) || !st.Gaps[0].To.Equal(c.Now()) {
		t.Errorf("gaps %+v, want the hour the store was closed", st.Gaps)
	}
	// The lives of a window from before the first sight, walked with the
	// restatements of every segment's keyframe: those tell only of the
	// nodes of the first sight, never again of one whose changes were
	// seen, so each node that came later waited 2s and held 1s.
	var walked []history.Event
	if err := s.Walk(p, t0.Add(-time.Hour), c.Now(), func(e history.Event) error {
		walked = append(walked, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	lives := history.Lives(history.State{}, walked, c.Now())
	if len(lives) != 301 || lives[0].Node != "n0" || !lives[0].WaitUnknown || lives[1].Node != "n1" || lives[1].WaitUnknown {
		t.Fatalf("%d lives, first %+v: want n0 to n300, n0 held at first sight, n1 waiting then", len(lives), lives[:min(2, len(lives))])
	}
	for _, l := range lives[2:298] {
		if l.Wait != 2 || l.Hold != 1 || l.How != history.Released {
			t.Errorf("%s waited %gs, held %gs, %s; want 2s, 1s, released", l.Node, l.Wait, l.Hold, l.How)
		}
	}
	if _, err := history.Open(history.Options{Dir: dir}); !errors.Is(err, history.ErrLocked) {
		t.Errorf("a second Open of the same directory: %v, want ErrLocked", err)
	}
}

// A crash mid-write leaves a torn frame; reopening truncates it and keeps
// every whole one.
func TestTornTailTruncated(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	s, err := history.Open(history.Options{Dir: dir, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	const p = "/locks/torn"
	record(t, s, queue(p, t0, "a"), queue(p, t0.Add(time.Second), "a", "b"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	last := segs[len(segs)-1]
	f, err := os.OpenFile(last, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A frame header promising 200 bytes, and only 3 of them.
	f.Write([]byte{200, 1, 1, 2, 3, 4, 'a', 'b', 'c'})
	f.Close()
	before, _ := os.Stat(last)
	// And a newer segment with its header alone: a process that died as
	// it began it, before its first flush.
	head, _ := os.ReadFile(last)
	empty := filepath.Join(dir, fmt.Sprintf("%012d-%d.seg", 99, t0.Add(30*time.Second).UnixMilli()))
	if err := os.WriteFile(empty, head[:len("zklockviz-history 1\n")], 0o600); err != nil {
		t.Fatal(err)
	}

	c.set(t0.Add(time.Minute))
	s = openStore(t, history.Options{Dir: dir, Now: c.Now})
	after, _ := os.Stat(last)
	if after.Size() != before.Size()-9 {
		t.Errorf("segment %d bytes after reopening, want %d: the torn frame cut off", after.Size(), before.Size()-9)
	}
	if _, err := os.Stat(empty); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the segment with nothing whole in it is still there (%v)", err)
	}
	if err := s.Verify(); err != nil {
		t.Error(err)
	}
	st, err := s.At(p, t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if w := st.Snapshot().Waiters(); !slices.Equal(w, []string{"b"}) {
		t.Errorf("waiters after reopening %q, want [b]", w)
	}
}

// Retention removes the oldest segments first, by age and by size, and
// never the one being written.
func TestRetentionDeletesOldestFirst(t *testing.T) {
	tests := []struct {
		name   string
		opts   history.Options
		remain func(t *testing.T, segs []string, all int)
	}{
		{"by age", history.Options{MaxAge: 3 * time.Minute}, nil},
		{"by size", history.Options{MaxSize: 6 << 10}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock(t0)
			opts := tc.opts
			opts.Dir, opts.Now, opts.SegmentAge = t.TempDir(), c.Now, time.Minute
			s := openStore(t, opts)
			record(t, s, queue("/locks/emptied", t0, "a"), queue("/locks/emptied", t0.Add(time.Second)))
			var created []string
			seen := map[string]bool{}
			for i := 1; i <= 600; i++ {
				c.set(t0.Add(time.Duration(i) * time.Second))
				record(t, s, queue("/locks/kept", c.Now(), fmt.Sprintf("n%d", i), fmt.Sprintf("n%d", i+1)))
				if err := s.Flush(false); err != nil {
					t.Fatal(err)
				}
				for _, g := range s.Segments() {
					if !seen[g] {
						seen[g] = true
						created = append(created, g)
					}
				}
			}
			kept := s.Segments()
			if len(kept) >= len(created) || len(kept) == 0 {
				t.Fatalf("kept %d of %d segments, want some removed", len(kept), len(created))
			}
			// What is kept is the newest run of segments, in order.
			if !slices.Equal(kept, created[len(created)-len(kept):]) {
				t.Errorf("kept %q, want the newest %d of %q", kept, len(kept), created)
			}
			for _, g := range created[:len(created)-len(kept)] {
				if _, err := os.Stat(g); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("old segment %s still there (%v)", g, err)
				}
			}
			if opts.MaxSize > 0 {
				if size := s.Size(); size > opts.MaxSize+8<<10 {
					t.Errorf("store is %d bytes, want about %d at most", size, opts.MaxSize)
				}
			} else if _, err := s.At("/locks/kept", c.Now().Add(-5*time.Minute)); !errors.Is(err, history.ErrNoHistory) {
				t.Errorf("At 5 minutes ago with 3 minutes' retention: %v, want ErrNoHistory", err)
			}
			if _, err := s.At("/locks/kept", c.Now().Add(-time.Minute)); err != nil {
				t.Errorf("At a minute ago: %v", err)
			}
			if opts.MaxAge > 0 {
				// A lock emptied at the start is forgotten once the
				// retention has passed over it.
				if ids, _ := s.Locks(); slices.ContainsFunc(ids, func(id history.Lock) bool { return id.Name == "/locks/emptied" }) {
					t.Errorf("the lock empty for longer than the retention is still kept: %v", ids)
				}
			}
		})
	}
}

// A node with a lease (etcd, Redis) that goes when its lease was due ran
// out: expired; one that goes well before: released.
func TestLeaseExpiry(t *testing.T) {
	s := openStore(t, history.Options{Dir: t.TempDir(), Now: (newClock(t0)).Now})
	const p = "redis:orders"
	leased := func(at time.Time, leftMs int64, names ...string) lockqueue.Snapshot {
		snap := lockqueue.Snapshot{Service: "redis", Path: "orders", Connection: lockqueue.Connected, Exists: true, UpdatedAt: at}
		for i, n := range names {
			snap.Nodes = append(snap.Nodes, lockqueue.Node{Name: n, Holding: i == 0, Rare: &lockqueue.Rare{Client: "token-" + n, LeaseTTLMs: 10_000, LeaseLeftMs: leftMs}})
		}
		return snap
	}
	record(t, s,
		leased(t0, 10_000, "a"),
		leased(t0.Add(2*time.Second), 8_000, "a"),
		leased(t0.Add(3*time.Second), 0),                       // a released 7s early
		leased(t0.Add(4*time.Second), 10_000, "b"),             // b takes it
		leased(t0.Add(13*time.Second), 1_000, "b"),             // b's client is gone; its TTL runs down
		leased(t0.Add(14*time.Second+300*time.Millisecond), 0), // the key expired
	)
	evs, err := s.Events(p, t0, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		if e.Kind == history.Left {
			got = append(got, e.Node+" "+string(e.How))
		}
	}
	if want := []string{"a released", "b expired"}; !slices.Equal(got, want) {
		t.Errorf("left %q, want %q", got, want)
	}
	st, err := s.At(p, t0.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if snap := st.Snapshot(); snap.Service != "redis" || snap.Path != "orders" || snap.Nodes[0].Client() != "token-b" {
		t.Errorf("snapshot at 5s: service %q path %q nodes %+v", snap.Service, snap.Path, snap.Nodes)
	}
}

// rotate records 300 seconds of a lock whose holder changes every second,
// each holder having waited 2s; each runs after every snapshot.
func rotate(t *testing.T, s history.Writer, c *clock, p string, each func()) {
	t.Helper()
	names := []string{"n0"}
	for i := 1; i <= 300; i++ {
		c.set(t0.Add(time.Duration(i) * time.Second))
		names = append(names, fmt.Sprintf("n%d", i))
		if len(names) > 3 {
			names = names[1:]
		}
		record(t, s, queue(p, c.Now(), names...))
		each()
	}
}

// checkHolders checks the holder rotate left at each of secs.
func checkHolders(t *testing.T, s history.Source, p string, secs ...int) {
	t.Helper()
	for _, sec := range secs {
		st, err := s.At(p, t0.Add(time.Duration(sec)*time.Second))
		if err != nil {
			t.Fatalf("At %ds: %v", sec, err)
		}
		if h := st.Snapshot().Holders(); len(h) != 1 || h[0] != fmt.Sprintf("n%d", max(sec-2, 0)) {
			t.Errorf("holder at %ds: %q, want n%d", sec, h, max(sec-2, 0))
		}
	}
}

// Queries between records see each new record: the segment being written
// is read on from where the last query stopped.
func TestQueriesFollowTheWriter(t *testing.T) {
	c := newClock(t0)
	s := openStore(t, history.Options{Dir: t.TempDir(), Now: c.Now})
	const p = "/locks/followed"
	rotate(t, s, c, p, func() {
		st, err := s.At(p, c.Now())
		if err != nil {
			t.Fatal(err)
		}
		sec := int(c.Now().Sub(t0) / time.Second)
		if h := st.Snapshot().Holders(); len(h) != 1 || h[0] != fmt.Sprintf("n%d", max(sec-2, 0)) {
			t.Fatalf("holder at %ds, asked right after recording: %q, want n%d", sec, h, max(sec-2, 0))
		}
	})
}

// A snapshot that is not live records only the gap, whatever it shows: a
// reader that published an unreadable lock as empty, missing and without
// its alerts (as one did when its server went away) makes no release, no
// expiry, no "exists: no" and no cleared alert. The first live snapshot
// after the gap is told against the last live state: a holder gone
// meanwhile left unseen, and the figures count no release and no hold.
func TestNotLiveRecordsOnlyTheGap(t *testing.T) {
	const p = "/locks/outage"
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	held := queue(p, at(0), "a!", "b")
	for _, tc := range []struct {
		name string
		gap  lockqueue.Snapshot
	}{
		{"empty and missing", lockqueue.Snapshot{Path: p, Connection: lockqueue.Reconnecting, UpdatedAt: at(10), Nodes: []lockqueue.Node{}}},
		{"a read error", func() lockqueue.Snapshot {
			s := queue(p, at(10))
			s.Exists, s.Error = false, "connection refused"
			return s
		}()},
		{"the last known state", lockqueue.LastKnown(&held, lockqueue.Snapshot{Path: p, Connection: lockqueue.Reconnecting, UpdatedAt: at(10)})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, history.Options{Dir: t.TempDir(), Now: newClock(t0).Now})
			later := tc.gap
			later.UpdatedAt = at(20)
			later.Error += " still"
			record(t, s, held, queue(p, at(5), "a!", "b"), tc.gap, later, queue(p, at(30), "b"))
			evs, err := s.Events(p, t0, at(40))
			if err != nil {
				t.Fatal(err)
			}
			// The gap, its error changing, the reader back; then what
			// changed meanwhile.
			want := []string{"connection", "connection", "connection", "left a unknown", "acquired b", "waits-for b", "watch b", "alert-cleared"}
			if got := kinds(evs); !slices.Equal(got, want) {
				t.Errorf("events:\n got %q\nwant %q", got, want)
			}
			st, err := s.At(p, at(15))
			if err != nil {
				t.Fatal(err)
			}
			snap := st.Snapshot()
			if !slices.Equal(snap.Holders(), []string{"a"}) || !snap.Exists || len(snap.Alerts) != 1 || snap.Live() {
				t.Errorf("during the gap: %+v, want a's hold and its alert, not live", snap)
			}
			stats, err := s.Stats(p, t0, at(40))
			if err != nil {
				t.Fatal(err)
			}
			if stats.Released != 0 || stats.Expired != 0 || stats.Hold.Count != 0 || len(stats.Gaps) != 1 {
				t.Errorf("figures %+v: want no release, expiry or hold, one gap", stats)
			}
		})
	}
}

// A lock whose keyframe alone is bigger than SegmentSize (a queue of
// thousands of nodes) does not close the segment at every flush: only
// what the segment grows by past its keyframe counts, so an unchanged big
// queue is not written again and again.
func TestBigKeyframeKeepsItsSegment(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, history.Options{Dir: dir, SegmentSize: 8 << 10})
	names := make([]string, 5000)
	for i := range names {
		names[i] = fmt.Sprintf("_c_5b2c3f0e-8d7a-4f1b-9c2e-lock-%010d", i)
	}
	start := time.Now()
	record(t, s, queue("/locks/big", start, names...))
	segments := func() int {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	// The first flush writes the snapshot past SegmentSize: a new
	// segment, with the queue as its keyframe.
	if err := s.Flush(false); err != nil {
		t.Fatal(err)
	}
	after := segments()
	for range 5 {
		if err := s.Flush(false); err != nil {
			t.Fatal(err)
		}
	}
	if n := segments(); n != after {
		t.Errorf("%d segments after five flushes with nothing recorded, want %d: each flush closed the segment its keyframe filled", n, after)
	}
}
