package history_test

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
)

// dbDial is a history database to test: the built-in store (its segments a
// minute long) or PostgreSQL.
type dbDial struct {
	name string
	open func(t *testing.T, c *clock) history.DB
}

// eachDB runs f on each history database, in a subtest: with the clock c
// at start and the key of path on a cluster of the subtest's own.
func eachDB(t *testing.T, path string, start time.Time, f func(t *testing.T, c *clock, s history.DB, cluster, key string)) {
	for _, tc := range bothDBs(t) {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock(start)
			cluster := "c-" + tc.name + "-" + t.Name()
			f(t, c, tc.open(t, c), cluster, history.Key(cluster, path))
		})
	}
}

func bothDBs(t *testing.T) []dbDial {
	pg := pgtest.ForTest(t)
	return []dbDial{
		{"store", func(t *testing.T, c *clock) history.DB {
			return openStore(t, history.Options{Dir: t.TempDir(), Now: c.Now, SegmentAge: time.Minute})
		}},
		{"postgres", func(t *testing.T, c *clock) history.DB { return openPG(t, pg.DSN(), c) }},
	}
}

// whoQueue is a queue whose nodes say who they are as each service does:
// data (a long text and a binary one among them), a label, a lease.
func whoQueue(cluster string, at time.Time, names ...string) lockqueue.Snapshot {
	s := queue("/locks/who", at, names...)
	s.Cluster = cluster
	for i := range s.Nodes {
		n := &s.Nodes[i]
		switch n.Name {
		case "long":
			n.Data = strings.Repeat("é", history.MaxData) // 2 bytes each
		case "bin":
			n.Data, n.DataBinary = base64.StdEncoding.EncodeToString(make([]byte, 1000)), true
		default:
			n.Data = "owner " + n.Name
		}
		n.SetLabel("app-" + n.Name)
		n.SetLeaseID("lease-" + n.Name)
	}
	return s
}

// Who a node is goes into its Queued event once, bounded to MaxData
// bytes, and comes back in the lock at any later moment, across a
// segment's keyframe, as the live view had it; the same path recorded on
// another cluster is another lock.
func TestRecordsWhoOncePerNode(t *testing.T) {
	eachDB(t, "/locks/who", t0, func(t *testing.T, c *clock, s history.DB, cluster, key string) {
		record(t, s, whoQueue(cluster, t0, "a", "long", "bin"))
		c.set(t0.Add(2 * time.Minute)) // past a segment's end: a keyframe restates the queue
		record(t, s, whoQueue(cluster, c.Now(), "long", "bin"))
		if st, ok := s.(*history.Store); ok {
			if err := st.Flush(false); err != nil {
				t.Fatal(err)
			}
		}
		c.set(t0.Add(3 * time.Minute))
		record(t, s, whoQueue(cluster, c.Now(), "bin"))

		evs, err := s.Events(key, t0, c.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind != history.Queued && e.Kind != history.Who && (e.Data != "" || e.Label != "" || e.Lease != "") {
				t.Errorf("a %s event repeats who %s is: %+v", e.Kind, e.Node, e)
			}
		}
		st, err := s.At(key, t0.Add(150*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		snap := st.Snapshot()
		if snap.Cluster != cluster || len(snap.Nodes) != 2 {
			t.Fatalf("after the keyframe: cluster %q, nodes %+v", snap.Cluster, snap.Nodes)
		}
		long, bin := snap.Nodes[0], snap.Nodes[1]
		if want := strings.Repeat("é", history.MaxData/2); long.Data != want || long.Label() != "app-long" || long.LeaseID() != "lease-long" ||
			long.Session != "0xlong" || !long.Holding {
			t.Errorf("the long one: data %d bytes, label %q, lease %q, session %q; want its first %d bytes, app-long, lease-long, 0xlong",
				len(long.Data), long.Label(), long.LeaseID(), long.Session, history.MaxData)
		}
		if raw, err := base64.StdEncoding.DecodeString(bin.Data); err != nil || !bin.DataBinary || len(raw) != history.MaxData {
			t.Errorf("the binary one: %d bytes (binary %v, %v), want its first %d", len(raw), bin.DataBinary, err, history.MaxData)
		}
		if _, err := s.At(history.Key("another", "/locks/who"), t0.Add(150*time.Second)); !errors.Is(err, history.ErrNoHistory) {
			t.Errorf("another cluster's /locks/who: %v, want no history", err)
		}
	})
}

// A segment written before who and clusters were recorded (by the
// previous release's encoder: testdata/before-clusters) is read as it was,
// as a recording of an unknown cluster; a new recording of the same path
// with a cluster is kept apart from it.
func TestSegmentsBeforeClustersStillRead(t *testing.T) {
	dir := t.TempDir()
	ents, err := os.ReadDir("testdata/before-clusters")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata/before-clusters", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	// The old recording: /locks/x from 03:00:01, a holding (session 0x1),
	// b queued at 03:00:02, a gone and b holding at 03:00:04.
	old := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)
	c := newClock(old.Add(time.Hour))
	s := openStore(t, history.Options{Dir: dir, Now: c.Now})
	if err := s.Verify(); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	st, err := s.At("/locks/x", old.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	snap := st.Snapshot()
	if got := []string{snap.Holders()[0], snap.Nodes[0].Session, snap.Waiters()[0], snap.Cluster}; !slices.Equal(got, []string{"a", "0x1", "b", history.UnknownCluster}) {
		t.Errorf("the old recording at 03:00:03: holder, its session, waiter, cluster = %q", got)
	}
	record(t, s, whoQueue("zk-new", c.Now(), "n"))
	locks, err := s.Locks()
	if err != nil {
		t.Fatal(err)
	}
	want := []history.Lock{
		{LockID: lockqueue.LockID{Service: lockqueue.ZooKeeper, Name: "/locks/who"}, Cluster: "zk-new"},
		{LockID: lockqueue.LockID{Service: lockqueue.ZooKeeper, Name: "/locks/x"}, Cluster: history.UnknownCluster},
	}
	if !slices.Equal(locks, want) {
		t.Errorf("locks %+v, want %+v", locks, want)
	}
	if _, err := s.At(history.Key("zk-new", "/locks/x"), old.Add(3*time.Second)); !errors.Is(err, history.ErrNoHistory) {
		t.Errorf("a known cluster's /locks/x at the old moment: %v, want no history", err)
	}
}

// stalledQueue is /locks/stall with its holder a stalled since t0 on b, as
// a join words it: the holder's watch on b, its stall and the alert.
func stalledQueue(cluster string, at time.Time) lockqueue.Snapshot {
	s := queue("/locks/stall", at, "a", "b")
	s.Cluster = cluster
	s.Nodes[0].Watching = []string{"/locks/stall/b"}
	s.Nodes[0].SetStalledOn("b")
	s.Nodes[0].SetStalledSince(t0)
	s.Alerts = []lockqueue.Alert{{Kind: lockqueue.AlertStalled, Nodes: []string{"a", "b"}, Message: "a is stalled on b", Since: t0}}
	return s
}

// A stalled holder is one at any later moment too, across a keyframe, with
// its stall's start and its watch drawn as the stall, as the live view
// had them: the history keeps the stall in its alert, and a past moment
// is rebuilt from that.
func TestReplayKeepsAStall(t *testing.T) {
	eachDB(t, "/locks/stall", t0.Add(time.Second), func(t *testing.T, c *clock, s history.DB, cluster, key string) {
		record(t, s, stalledQueue(cluster, c.Now()))
		c.set(t0.Add(2 * time.Minute)) // past a segment's end: a keyframe restates the queue
		more := stalledQueue(cluster, c.Now())
		more.Nodes = append(more.Nodes, lockqueue.Node{Name: "c", Mode: lockqueue.Exclusive, Session: "0xc", WaitsFor: "b", Edge: lockqueue.EdgeConfirmed})
		record(t, s, more)
		if st, ok := s.(*history.Store); ok {
			if err := st.Flush(false); err != nil {
				t.Fatal(err)
			}
		}
		for _, at := range []time.Time{t0.Add(30 * time.Second), t0.Add(150 * time.Second)} {
			st, err := s.At(key, at)
			if err != nil {
				t.Fatal(err)
			}
			snap := st.Snapshot()
			a := snap.Nodes[0]
			if a.StalledOn() != "b" || !a.StalledSince().Equal(t0) {
				t.Errorf("at %s: the holder is stalled on %q since %s, want on b since %s", at, a.StalledOn(), a.StalledSince(), t0)
			}
			if ws := a.Watches(); len(ws) != 1 || ws[0] != (lockqueue.Watch{To: "b", Kind: lockqueue.EdgeStalled}) {
				t.Errorf("at %s: the holder's watches %+v, want its stalled one on b", at, ws)
			}
		}
	})
}

// Who a node is, as people know it, is recorded again when it changes: a
// session's label (its state: idle in transaction), or whose contender a
// node also is (PartOf), with its data then. A change of data alone is not: a reader's data carries clocks that change
// at every read (a PostgreSQL session's query times, a Redlock token's
// time left). A past moment, across a keyframe, shows who each node was.
func TestRecordsWhoChanges(t *testing.T) {
	eachDB(t, "/locks/who", t0, func(t *testing.T, c *clock, s history.DB, cluster, key string) {
		at := func(label, raw, token string) lockqueue.Snapshot {
			q := queue("/locks/who", c.Now(), "pid-1", "tok")
			q.Cluster = cluster
			q.Nodes[0].SetLabel("psql · " + label)
			q.Nodes[0].Data = `{"state":"` + label + `","queryStart":"` + raw + `"}`
			q.Nodes[1].Data = token
			if label != "active" {
				q.Nodes[1].SetPartOf("pid-1")
			}
			return q
		}
		steps := []struct {
			ms                int
			label, raw, token string
		}{
			{0, "active", "1", "held, 9s left"},
			{1000, "active", "2", "held, 8s left"}, // a new query, a clock: no change of who
			{2000, "idle in transaction", "2", "held, 7s left"},
			{121000, "idle in transaction", "3", "held, 6s left"}, // past a segment's end
		}
		for _, st := range steps {
			c.set(t0.Add(time.Duration(st.ms) * time.Millisecond))
			record(t, s, at(st.label, st.raw, st.token))
		}
		if st, ok := s.(*history.Store); ok {
			if err := st.Flush(false); err != nil {
				t.Fatal(err)
			}
		}
		evs, err := s.Events(key, t0, c.Now())
		if err != nil {
			t.Fatal(err)
		}
		var whos []string
		for _, e := range evs {
			if e.Kind == history.Who {
				whos = append(whos, fmt.Sprintf("%s %s: %s", e.Time.Sub(t0), e.Node, cmp.Or(e.Label, e.Data)))
			}
		}
		if want := []string{"2s pid-1: psql · idle in transaction", "2s tok: held, 7s left"}; !slices.Equal(whos, want) {
			t.Errorf("who events %q, want %q", whos, want)
		}
		for _, st := range steps {
			state, err := s.At(key, t0.Add(time.Duration(st.ms)*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			nodes := state.Snapshot().Nodes
			raw, token, partOf := "1", "held, 9s left", ""
			if st.ms >= 2000 {
				raw, token, partOf = "2", "held, 7s left", "pid-1" // the data as who changed
			}
			want := []string{"psql · " + st.label, `{"state":"` + st.label + `","queryStart":"` + raw + `"}`, token, partOf}
			if got := []string{nodes[0].Label(), nodes[0].Data, nodes[1].Data, nodes[1].PartOf()}; !slices.Equal(got, want) {
				t.Errorf("at +%dms: who %q, want %q", st.ms, got, want)
			}
		}
	})
}
