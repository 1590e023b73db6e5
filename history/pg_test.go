package history_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
)

func openPG(t *testing.T, dsn string, c *clock) *history.PGStore {
	t.Helper()
	return openPGWith(t, history.PGOptions{URL: dsn, Now: c.Now, KeyframeEvery: time.Minute})
}

func openPGWith(t *testing.T, opts history.PGOptions) *history.PGStore {
	t.Helper()
	s, err := history.OpenPG(context.Background(), opts)
	if err != nil {
		t.Fatalf("OpenPG: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The same session in a real PostgreSQL: the same events, the same queue
// at each moment, the same figures; reopening recovers each lock's state
// and records the time it was closed as a gap; retention drops the oldest.
func TestPGStore(t *testing.T) {
	pg := pgtest.ForTest(t)
	c := newClock(t0)
	t.Run("session", func(t *testing.T) {
		s := openPG(t, pg.DSN(), c)
		checkSession(t, s)
		ids, err := s.Locks()
		if want := (history.Lock{LockID: lockqueue.LockID{Service: lockqueue.ZooKeeper, Name: "/locks/orders"}, Cluster: history.UnknownCluster}); err != nil || !slices.Contains(ids, want) {
			t.Errorf("Locks: %+v, %v; want %+v among them", ids, err, want)
		}
	})

	t.Run("reopen and keyframes", func(t *testing.T) {
		const p = "/locks/pg-rotating"
		s := openPG(t, pg.DSN(), c)
		rotate(t, s, c, p, func() {})
		s.Close()
		c.set(t0.Add(time.Hour))
		s = openPG(t, pg.DSN(), c)
		checkHolders(t, s, p, 2, 150, 299)
		st, err := s.Stats(p, t0, c.Now())
		if err != nil {
			t.Fatal(err)
		}
		if st.Wait.P50 != 2 || st.Acquisitions != 298 || len(st.Gaps) != 1 || !st.Gaps[0].To.Equal(c.Now()) {
			t.Errorf("figures after reopening: wait %+v, %d acquisitions, gaps %+v", st.Wait, st.Acquisitions, st.Gaps)
		}
		// A week on, everything is past the retention.
		c.set(t0.Add(8 * 24 * time.Hour))
		if err := s.Retain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.At(p, t0.Add(time.Minute)); !errors.Is(err, history.ErrNoHistory) {
			t.Errorf("At after retention: %v, want ErrNoHistory", err)
		}
	})
}

// newDatabase creates an empty database in pg and returns its DSN, so a
// test's sizes count only its own rows.
func newDatabase(t *testing.T, pg *pglocal.Server, name string) string {
	t.Helper()
	ctx := context.Background()
	su, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	if _, err := su.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	return pg.DSNFor(pglocal.User, name)
}

// Size retention in PostgreSQL deletes the oldest rows first, as the
// embedded store drops its oldest segments: what is left is the newest run
// of the events, under the bound, and the recent past still replays.
func TestPGSizeRetention(t *testing.T) {
	pg := pgtest.ForTest(t)
	ctx := context.Background()
	const p, maxSize = "/locks/pg-sized", 64 << 10
	c := newClock(t0)
	s := openPGWith(t, history.PGOptions{URL: newDatabase(t, pg, "sized"), Now: c.Now, KeyframeEvery: time.Minute, MaxSize: maxSize})
	rotate(t, s, c, p, func() {})
	all, err := s.Events(p, t0, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before <= 2*maxSize {
		t.Fatalf("recorded %d bytes, want well over the %d bound for the test to mean anything", before, maxSize)
	}
	t.Logf("%d events, %d bytes before retention", len(all), before)
	// Retention runs once a minute, deleting at most ten tenths a round:
	// a few rounds bring any excess under the bound.
	for range 3 {
		if err := s.Retain(ctx); err != nil {
			t.Fatal(err)
		}
	}
	after, err := s.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after > maxSize {
		t.Errorf("%d bytes stored after retention, want at most %d", after, maxSize)
	}
	kept, err := s.Events(p, t0, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events, %d bytes after", len(kept), after)
	if len(kept) == 0 || len(kept) >= len(all) {
		t.Fatalf("kept %d of %d events, want some but not all", len(kept), len(all))
	}
	if gone := all[:len(all)-len(kept)]; !slices.EqualFunc(kept, all[len(gone):], func(a, b history.Event) bool {
		return a.Time.Equal(b.Time) && a.Kind == b.Kind && a.Node == b.Node
	}) {
		t.Errorf("kept events from %s on are not the newest %d of the %d recorded: the oldest did not go first",
			kept[0].Time.Format(time.TimeOnly), len(kept), len(all))
	}
	// Every moment kept replays: what is left starts with a keyframe.
	if _, err := s.At(p, kept[0].Time); err != nil {
		t.Errorf("At the oldest event kept (%s): %v", kept[0].Time.Format(time.TimeOnly), err)
	}
	if _, err := s.At(p, t0.Add(time.Second)); !errors.Is(err, history.ErrNoHistory) {
		t.Errorf("At the first second after retention: %v, want ErrNoHistory", err)
	}
	checkHolders(t, s, p, 295, 299)
}
