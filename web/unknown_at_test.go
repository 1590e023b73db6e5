package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// GET /api/v1/lock?at= for a moment inside a stretch the history did not
// see says the lock was not known from the stretch's start on, whether the
// reader was disconnected then or zklockviz was not running (a gap learnt
// of afterwards, which follows a state that was live); a moment outside
// one is the lock as it was, live.
func TestLockAtInAGapSaysUnknownSince(t *testing.T) {
	now := fixtureEpoch
	clock := func() time.Time { return now }
	dir := t.TempDir()
	store, err := history.Open(history.Options{Dir: dir, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	reg := zkRegistry(nil, nil)
	svc, r := fixtureService(h)
	if err := reg.Register(svc); err != nil {
		t.Fatal(err)
	}
	record := func(d time.Duration, s lockqueue.Snapshot) {
		t.Helper()
		now = fixtureEpoch.Add(d)
		s.UpdatedAt = now
		if _, err := store.Record(s); err != nil {
			t.Fatal(err)
		}
	}
	record(0, r.queue("orders", 0))
	lost := r.queue("orders", 0)
	lost.Connection, lost.UnknownSince = lockqueue.Reconnecting, fixtureEpoch.Add(10*time.Second)
	record(10*time.Second, lost)
	record(20*time.Second, r.queue("orders", 1))
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	// zklockviz does not run from 20s to 10m.
	now = fixtureEpoch.Add(10 * time.Minute)
	if store, err = history.Open(history.Options{Dir: dir, Now: clock}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	record(10*time.Minute+time.Second, r.queue("orders", 2))
	e := newEnv(t, Config{Services: reg, History: store})

	for _, tc := range []struct {
		name  string
		at    time.Duration
		since time.Duration // -1: known
	}{
		{"before the reader lost the server", 5 * time.Second, -1},
		{"while the reader was reconnecting", 15 * time.Second, 10 * time.Second},
		{"while zklockviz was not running", 5 * time.Minute, 20 * time.Second},
		{"after it ran again", 10*time.Minute + 2*time.Second, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{"service": {fixtureName}, "path": {"orders"}, "at": {fmt.Sprint(fixtureEpoch.Add(tc.at).UnixMilli())}}
			code, b := historyGet(t, e, "/api/v1/lock", q)
			var snap lockqueue.Snapshot
			if code != http.StatusOK || json.Unmarshal(b, &snap) != nil {
				t.Fatalf("status %d: %s", code, b)
			}
			if tc.since < 0 {
				if !snap.Live() || !snap.UnknownSince.IsZero() {
					t.Errorf("connection %q error %q unknownSince %v, want live and known", snap.Connection, snap.Error, snap.UnknownSince)
				}
				return
			}
			want := fixtureEpoch.Add(tc.since)
			if snap.Live() || !snap.UnknownSince.Equal(want) {
				t.Errorf("connection %q error %q unknownSince %v, want not live, unknown since %v", snap.Connection, snap.Error, snap.UnknownSince, want)
			}
		})
	}
}
