package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// partsServer serves the pages of h and returns them, to count renders.
func partsServer(t *testing.T, h *hub.Hub) (*httptest.Server, *pages) {
	t.Helper()
	reg := zkRegistry(nil, nil)
	srv, err := New(Config{Hub: h, Services: reg, Pages: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	p := srv.pages
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts, p
}

// The viewers of a lock who ask for the same parts of the same snapshot
// share one render, revalidate by ETag, and get a new render once the lock
// changes; a lock's old snapshots and the least recently asked locks beyond
// the bound are forgotten.
func TestLockPartsCached(t *testing.T) {
	const path = "/locks/cached"
	h := hub.New()
	snap := pageSnapshot(path, lockqueue.Connected, "R_0000000001", "W_0000000002")
	h.Publish(snap)
	ts, p := partsServer(t, h)
	u := ts.URL + "/parts/lock?path=" + path

	const viewers = 20
	bodies := make([]string, viewers)
	etags := make([]string, viewers)
	var wg sync.WaitGroup
	for i := range viewers {
		wg.Go(func() {
			res, body := pageGet(t, u, nil)
			if res.StatusCode != http.StatusOK {
				t.Errorf("viewer %d: %s", i, res.Status)
			}
			bodies[i], etags[i] = body, res.Header.Get("ETag")
		})
	}
	wg.Wait()
	if n := p.partRenders.Load(); n != 1 {
		t.Errorf("%d viewers of one snapshot: %d renders, want 1", viewers, n)
	}
	for i := range viewers {
		if bodies[i] != bodies[0] || etags[i] != etags[0] || etags[0] == "" {
			t.Fatalf("viewer %d got another answer (ETag %q, first %q)", i, etags[i], etags[0])
		}
	}
	if !strings.Contains(bodies[0], "W_0000000002") {
		t.Fatalf("parts lack the waiter:\n%s", bodies[0])
	}

	for _, tc := range []struct {
		name    string
		url     string
		etag    string
		status  int
		renders int64
	}{
		{"revalidated", u, etags[0], http.StatusNotModified, 1},
		{"another view", u + "&selected=W_0000000002", "", http.StatusOK, 2},
		{"that view again", u + "&selected=W_0000000002", "", http.StatusOK, 2},
	} {
		hdr := http.Header{}
		if tc.etag != "" {
			hdr.Set("If-None-Match", tc.etag)
		}
		res, _ := pageGet(t, tc.url, hdr)
		if res.StatusCode != tc.status || p.partRenders.Load() != tc.renders {
			t.Errorf("%s: %s after %d renders, want %d after %d", tc.name, res.Status, p.partRenders.Load(), tc.status, tc.renders)
		}
	}

	next := pageSnapshot(path, lockqueue.Connected, "R_0000000001", "W_0000000002", "W_0000000003")
	next.Revision = snap.Revision + 1
	h.Publish(next)
	res, body := pageGet(t, u, http.Header{"If-None-Match": {etags[0]}})
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "W_0000000003") || res.Header.Get("ETag") == etags[0] {
		t.Errorf("after a change: %s, ETag %q (was %q), new node shown: %v", res.Status, res.Header.Get("ETag"), etags[0], strings.Contains(body, "W_0000000003"))
	}
	if n := p.partRenders.Load(); n != 3 {
		t.Errorf("after a change: %d renders, want 3", n)
	}

	// Past the bound of locks, the one asked for longest ago is rendered anew.
	for i := range maxCachedLocks {
		other := fmt.Sprintf("/locks/other%d", i)
		h.Publish(pageSnapshot(other, lockqueue.Connected, "W_0000000001"))
		pageGet(t, ts.URL+"/parts/lock?path="+other, nil)
	}
	before := p.partRenders.Load()
	pageGet(t, u, nil)
	if n := p.partRenders.Load() - before; n != 1 {
		t.Errorf("a lock evicted by %d others: %d renders, want 1", maxCachedLocks, n)
	}
}
