package web

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/hub"
)

// readCountingSource is the real store, counting the reads the figures
// are computed with: their statistics, and walks of their window. (A
// moment's page reads a minute of events after it, to tell a gap.)
type readCountingSource struct {
	history.Source
	reads atomic.Int64
}

func (c *readCountingSource) Walk(lock string, from, to time.Time, fn func(history.Event) error) error {
	c.reads.Add(1)
	return c.Source.Walk(lock, from, to, fn)
}

func (c *readCountingSource) Stats(lock string, from, to time.Time) (history.Stats, error) {
	c.reads.Add(1)
	return c.Source.Stats(lock, from, to)
}

// The lock page answers without reading its figures' window of the
// history: it has a place for them, which the page fills from
// /parts/lock-figures once shown. (An hour of a big queue's history kept
// the page's HTML back for seconds.) Live or replaying a moment alike.
func TestLockPageDoesNotWaitForItsFigures(t *testing.T) {
	store, err := history.Open(history.Options{Dir: t.TempDir(), Now: func() time.Time { return fixtureEpoch }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	reg := zkRegistry(nil, nil)
	h := hub.New()
	src := &readCountingSource{Source: store}
	ts := pagesWithHistory(t, h, reg, src)
	recordFixture(t, store, reg, h)

	get := func(u string) string {
		t.Helper()
		res, err := http.Get(ts.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", u, res.StatusCode, b)
		}
		return string(b)
	}
	at := fixtureEpoch.Add(2500 * time.Millisecond)
	for _, u := range []string{"/lock?service=fixture&path=orders", fmt.Sprintf("/lock?service=fixture&path=orders&at=%d", at.UnixMilli())} {
		before := src.reads.Load()
		body := get(u)
		if n := src.reads.Load() - before; n != 0 {
			t.Errorf("GET %s read a window of the history %d times, want none: the figures are the page's to fetch", u, n)
		}
		if !strings.Contains(body, `id="figures"`) || !strings.Contains(body, "data-pending") {
			t.Errorf("GET %s has no place for the figures (#figures[data-pending])", u)
		}
	}
	// The part the page fills them from has them: the fixture's two
	// hand-offs.
	q := fmt.Sprintf("service=fixture&path=orders&from=%d&to=%d", fixtureEpoch.Add(-time.Minute).UnixMilli(), fixtureEpoch.Add(time.Minute).UnixMilli())
	part := get("/parts/lock-figures?" + q)
	if !strings.Contains(part, `data-stat="released"><b>2</b>`) || strings.Contains(part, "data-pending") {
		t.Errorf("/parts/lock-figures: want the figures with 2 releases, got\n%s", part)
	}
}
