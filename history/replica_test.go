package history_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
)

func heldBy(lock, holder string, at time.Time) lockqueue.Snapshot {
	return lockqueue.Snapshot{Path: lock, Connection: lockqueue.Connected, Exists: true, UpdatedAt: at,
		Nodes: []lockqueue.Node{{Name: holder, Holding: true}}}
}

func waitRole(t *testing.T, s *history.PGStore, what string, ok func(history.Role) bool) history.Role {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := s.Role()
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: role %+v", what, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two replicas on one history database: the first records, the second
// stands by and says who records; a change both see is recorded once; when
// the recorder stops, the second takes over, recording the gap and what
// changed while it stood by.
func TestReplicasRecordOnce(t *testing.T) {
	pg := pgtest.ForTest(t)
	dsn := newDatabase(t, pg, "replicas")
	a := openPGWith(t, history.PGOptions{URL: dsn, Replica: "a"})
	b := openPGWith(t, history.PGOptions{URL: dsn, Replica: "b"})
	if r := a.Role(); !r.Recording || r.Recorder != "a" {
		t.Fatalf("the first replica's role: %+v, want recording", r)
	}
	waitRole(t, b, "b to learn that a records", func(r history.Role) bool { return !r.Recording && r.Recorder == "a" && !r.Since.IsZero() })

	const lock = "/locks/replicated"
	start := time.Now().Add(-time.Second)
	for _, holder := range []string{"n1", "n2"} {
		at := time.Now()
		for _, s := range []*history.PGStore{a, b} {
			if _, err := s.Record(heldBy(lock, holder, at)); err != nil {
				t.Fatal(err)
			}
		}
	}
	evs, err := b.Events(lock, start, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := countKind(evs, history.Acquired); got != 1 {
		t.Errorf("%d acquisitions recorded by two replicas seeing one, want 1: %+v", got, evs)
	}

	// While a records, b sees n3 take over; a stops before it sees it.
	if _, err := b.Record(heldBy(lock, "n3", time.Now())); err != nil {
		t.Fatal(err)
	}
	a.Close()
	waitRole(t, b, "b to take over", func(r history.Role) bool { return r.Recording && r.Recorder == "b" })
	evs, err = b.Events(lock, start, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var gap *history.Event
	for i, e := range evs {
		if e.Kind == history.Gap {
			gap = &evs[i]
		}
	}
	if gap == nil || !strings.Contains(gap.Message, "b took over from a") {
		t.Fatalf("no gap saying b took over from a in %+v", evs)
	}
	if d := gap.Time.Sub(gap.Since); d < 0 || d > 5*time.Second {
		t.Errorf("the takeover's gap lasted %v, want the time from a's last heartbeat to b's takeover", d)
	}
	if got := countKind(evs, history.Acquired); got != 2 {
		t.Errorf("%d acquisitions after the takeover, want n3's recorded too: %+v", got, evs)
	}
}

// A recorder cut off from the database (its session ended there, as a
// network cut or an administrator would end it) while its process lives
// on: the other replica takes over, and what the old one tries to write
// afterwards is refused by the fence, never recorded twice.
func TestReplicaFencedAfterTakeover(t *testing.T) {
	pg := pgtest.ForTest(t)
	dsn := newDatabase(t, pg, "fenced")
	a := openPGWith(t, history.PGOptions{URL: dsn, Replica: "a"})
	b := openPGWith(t, history.PGOptions{URL: dsn, Replica: "b"})
	waitRole(t, b, "b to stand by", func(r history.Role) bool { return r.Recorder == "a" })

	ctx := context.Background()
	su, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	var ended bool
	if err := su.QueryRow(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'zklockviz recorder a'`).Scan(&ended); err != nil || !ended {
		t.Fatalf("end a's session: %v, %v", ended, err)
	}
	waitRole(t, b, "b to take over", func(r history.Role) bool { return r.Recording })

	const lock = "/locks/only-a"
	a.Record(heldBy(lock, "stale", time.Now())) // refused or kept aside: either way not recorded
	var rows []history.Event
	if err := b.Walk(lock, time.Now().Add(-time.Minute), time.Now(), func(e history.Event) error {
		rows = append(rows, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 0 {
		t.Errorf("a wrote after b took over: %+v", rows)
	}
	waitRole(t, a, "a to stand by behind b", func(r history.Role) bool { return !r.Recording && r.Recorder == "b" })
}

func countKind(evs []history.Event, k history.Kind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k {
			n++
		}
	}
	return n
}
