package history_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/pglocal"
)

func openPG(t *testing.T, dsn string, c *clock) *history.PGStore {
	t.Helper()
	s, err := history.OpenPG(context.Background(), history.PGOptions{URL: dsn, Now: c.Now, KeyframeEvery: time.Minute})
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
	pg := pglocal.ForTest(t)
	c := newClock(t0)
	t.Run("session", func(t *testing.T) {
		s := openPG(t, pg.DSN(), c)
		checkSession(t, s)
		ids, err := s.Locks()
		if want := (lockqueue.LockID{Service: lockqueue.ZooKeeper, Name: "/locks/orders"}); err != nil || !slices.Contains(ids, want) {
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
