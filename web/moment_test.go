package web

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/hub"
)

// countingSource is the real store, counting the moments rebuilt from it.
type countingSource struct {
	history.Source
	ats atomic.Int64
}

func (c *countingSource) At(lock string, t time.Time) (history.State, error) {
	c.ats.Add(1)
	return c.Source.At(lock, t)
}

// A scrub frame asks for a moment's snapshot and its parts at once: the
// history rebuilds the moment once for both, and another moment anew.
func TestMomentRebuiltOnceForBothParts(t *testing.T) {
	store, err := history.Open(history.Options{Dir: t.TempDir(), Now: func() time.Time { return fixtureEpoch }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	reg := zkRegistry(nil, nil)
	h := hub.New()
	src := &countingSource{Source: store}
	ts := pagesWithHistory(t, h, reg, src)
	recordFixture(t, store, reg, h)

	get := func(u, want string) {
		res, err := http.Get(ts.URL + u)
		if err != nil {
			t.Error(err)
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d, want 200 with %q in %.300s", u, res.StatusCode, want, b)
		}
	}
	at := func(d time.Duration) string { return fmt.Sprint(fixtureEpoch.Add(d).UnixMilli()) }
	var wg sync.WaitGroup
	wg.Go(func() {
		get("/parts/lock-at?service=fixture&path=orders&at="+at(1500*time.Millisecond), `"known":true`)
	})
	wg.Go(func() { get("/parts/lock?service=fixture&path=orders&at="+at(1500*time.Millisecond), `data-row="b"`) })
	wg.Wait()
	if n := src.ats.Load(); n != 1 {
		t.Errorf("the moment was rebuilt %d times for its two parts, want once", n)
	}
	get("/parts/lock-at?service=fixture&path=orders&at="+at(500*time.Millisecond), `"known":true`)
	if n := src.ats.Load(); n != 2 {
		t.Errorf("%d rebuilds after another moment, want 2", n)
	}
}
