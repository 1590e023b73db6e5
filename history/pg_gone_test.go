package history_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/fault"
	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
)

// A history database that goes away: the status a page asks for after a
// change says that change was not recorded (SyncedStatus waits for it,
// where Status may answer before the recorder tried), and every read
// says the database cannot be read, as fault.Unavailable.
func TestPGGoneIsUnavailable(t *testing.T) {
	pg := pgtest.ForTest(t)
	s := openPGWith(t, history.PGOptions{URL: pg.DSN()})
	r := history.NewRecorder(s, nil, 0, nil)
	defer r.Close()
	const lock = "/locks/pg-gone"
	snap := func(holder string) lockqueue.Snapshot {
		return lockqueue.Snapshot{Path: lock, Connection: lockqueue.Connected, Exists: true, UpdatedAt: time.Now(),
			Nodes: []lockqueue.Node{{Name: holder, Holding: true}}}
	}
	r.Offer(snap("a"))
	r.Sync()
	if st := r.Status(); !st.Recording {
		t.Fatalf("not recording with the database there: %+v", st)
	}

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	r.Offer(snap("b"))
	if st := r.SyncedStatus(5 * time.Second); st.Recording || st.Why == "" {
		t.Errorf("the status after a change the database could not take: %+v, want not recording and why", st)
	}
	_, evErr := s.Events(lock, time.Now().Add(-time.Hour), time.Now())
	_, atErr := s.At(lock, time.Now())
	_, locksErr := s.Locks()
	_, statsErr := s.Stats(lock, time.Now().Add(-time.Hour), time.Now())
	for name, err := range map[string]error{"Events": evErr, "At": atErr, "Locks": locksErr, "Stats": statsErr} {
		if !errors.Is(err, fault.Unavailable) || !strings.Contains(err.Error(), "history database cannot be read") {
			t.Errorf("%s with the database gone: %v, want fault.Unavailable saying the database cannot be read", name, err)
		}
	}
}
