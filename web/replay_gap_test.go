package web

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/hub"
)

// A gap the recorder learns of afterwards (zklockviz was not running for
// ten minutes) is known at every moment inside it, however far from its
// end (beyond gapLookahead's short look), and not after it: the lock
// parts at ?at= say so.
func TestLockPartsInAGapRecordedAfterwards(t *testing.T) {
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
	if _, err := store.Record(r.queue("orders", 0)); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	const down = 10 * time.Minute
	now = fixtureEpoch.Add(down)
	if store, err = history.Open(history.Options{Dir: dir, Now: clock}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	now = now.Add(time.Second)
	if _, err := store.Record(r.queue("orders", 1)); err != nil {
		t.Fatal(err)
	}
	ts := pagesWithHistory(t, h, reg, store)

	for _, tc := range []struct {
		name    string
		at      time.Duration
		unknown bool
	}{
		{"early in the gap, minutes before the recorder knew", 2 * time.Minute, true},
		{"late in the gap, seconds before its end", down - 10*time.Second, true},
		{"after the gap", down + 2*time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := fixtureEpoch.Add(tc.at)
			resp, err := http.Get(fmt.Sprintf("%s/parts/lock?service=fixture&path=orders&at=%d", ts.URL, at.UnixMilli()))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if got := strings.Contains(string(b), "does not know what happened"); got != tc.unknown {
				t.Errorf("at +%v: says it does not know: %v, want %v", tc.at, got, tc.unknown)
			}
		})
	}
}
