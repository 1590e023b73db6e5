package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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

// countedReplay serves the pages over the fixture's recorded history
// (replayPages), counting the moments rebuilt from it.
func countedReplay(t *testing.T) (*httptest.Server, *countingSource) {
	t.Helper()
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
	return ts, src
}

// A scrub frame asks for a moment's snapshot and its parts at once: the
// history rebuilds the moment once for both, and another moment anew.
func TestMomentRebuiltOnceForBothParts(t *testing.T) {
	ts, src := countedReplay(t)

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

// A scrub frame's one request (?parts=1) answers the moment's snapshot,
// in a JSON element, and then what /parts/lock answers for the same query,
// from one rebuild of the moment.
func TestMomentWithItsParts(t *testing.T) {
	ts, src := countedReplay(t)

	get := func(u string) string {
		t.Helper()
		res, err := http.Get(ts.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v: %.300s", u, res.StatusCode, err, b)
		}
		return string(b)
	}
	q := "?service=fixture&path=orders&page=0&size=100&selected=b&at=" + fmt.Sprint(fixtureEpoch.Add(1500*time.Millisecond).UnixMilli())
	both := get("/parts/lock-at" + q + "&parts=1")
	const open, end = `<script type="application/json" id="moment">`, "</script>\n"
	snapJSON, parts, ok := strings.Cut(strings.TrimPrefix(both, open), end)
	if !strings.HasPrefix(both, open) || !ok {
		t.Fatalf("the answer does not start with the moment's JSON element: %.300s", both)
	}
	var got struct {
		Known    bool `json:"known"`
		Snapshot struct {
			Nodes []struct {
				Name string `json:"name"`
			} `json:"nodes"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal([]byte(snapJSON), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Known || len(got.Snapshot.Nodes) == 0 {
		t.Errorf("known %v with %d nodes, want the moment's queue", got.Known, len(got.Snapshot.Nodes))
	}
	if n := src.ats.Load(); n != 1 {
		t.Errorf("the moment was rebuilt %d times for its snapshot and parts, want once", n)
	}
	want := get("/parts/lock" + q)
	if parts != want {
		t.Errorf("parts differ from /parts/lock's:\n%.400s\nwant\n%.400s", parts, want)
	}
	if !strings.Contains(want, `id="replay-status"`) || !strings.Contains(want, `data-row="b"`) {
		t.Errorf("the parts lack the replay status or the table's rows: %.400s", want)
	}

	// Without ?parts=1 the answer is the snapshot's JSON alone, as before.
	if b := get("/parts/lock-at" + q); !strings.HasPrefix(b, `{"known":true`) {
		t.Errorf("without ?parts=1: %.200s", b)
	}
}
