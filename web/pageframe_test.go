package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// Whether the history records is said by GET /api/v1/history/status, on
// the lock page (data-history-off) and with every frame of its socket that
// brings the parts; a server without a recorder says it keeps none.
func TestHistoryStatusSaid(t *testing.T) {
	since := time.Date(2026, 11, 28, 22, 10, 26, 0, time.UTC)
	var st atomic.Pointer[history.Status]
	st.Store(&history.Status{Recording: false, Why: "disk full", Since: since})
	e := newEnv(t, Config{Pages: true, HistoryStatus: func() history.Status { return *st.Load() }})
	e.hub.Publish(pageSnapshot("/off", lockqueue.Connected, "W_0000000001"))

	code, _, body := do(t, http.MethodGet, e.ts.URL+"/api/v1/history/status", "", nil)
	var got history.Status
	if err := json.Unmarshal(body, &got); code != http.StatusOK || err != nil || got.Recording || got.Why != "disk full" || !got.Since.Equal(since) {
		t.Errorf("GET /api/v1/history/status = %d %s", code, body)
	}
	want := "since 2026-11-28 22:10:26 UTC: disk full" // the page's one wording of a time
	if _, page := pageGet(t, e.ts.URL+"/lock?path=/off", nil); !strings.Contains(page, `data-history-off="`+want+`"`) {
		t.Errorf("the lock page does not say %q", want)
	}
	v := e.mustDial(t, "/off&window=0:100&parts=1")
	v.next()
	var x pageExtra
	if err := json.Unmarshal(v.last, &x); err != nil || x.HistoryOff != want {
		t.Errorf("the frame says the history is off %q (%v), want %q", x.HistoryOff, err, want)
	}

	st.Store(&history.Status{Recording: true})
	// A page opened now, on the same snapshot, once the page that asks
	// has learnt it records again, is not given the frame made while it
	// did not.
	do(t, http.MethodGet, e.ts.URL+"/api/v1/history/status", "", nil)
	again := e.mustDial(t, "/off&window=0:100&parts=1")
	again.next()
	if x := (pageExtra{}); json.Unmarshal(again.last, &x) != nil || x.HistoryOff != "" || strings.Contains(x.Parts, `data-stat="history-off"`) {
		t.Errorf("a socket opened once the history records again was told %q", x.HistoryOff)
	}
	e.hub.Publish(pageSnapshot("/off", lockqueue.Connected, "W_0000000001", "W_0000000002"))
	v.next()
	x = pageExtra{}
	if err := json.Unmarshal(v.last, &x); err != nil || x.HistoryOff != "" || x.Parts == "" {
		t.Errorf("recording again, the frame says %q (%v)", x.HistoryOff, err)
	}

	// The history stops recording while the lock does not change: once
	// the server sees it (here the API's answer; a frame's own check, as a
	// change's write is tried), the sockets are told without a change.
	st.Store(&history.Status{Recording: false, Why: "disk full again", Since: since})
	do(t, http.MethodGet, e.ts.URL+"/api/v1/history/status", "", nil)
	// (A frame of the lock offered again for the change before may come
	// first.)
	for range 3 {
		v.next()
		x = pageExtra{}
		if err := json.Unmarshal(v.last, &x); err != nil || strings.Contains(x.HistoryOff, "disk full again") {
			break
		}
	}
	if !strings.Contains(x.HistoryOff, "disk full again") {
		t.Errorf("the history off again, the socket was told %q", x.HistoryOff)
	}

	plain := newEnv(t, Config{})
	if code, _, body := do(t, http.MethodGet, plain.ts.URL+"/api/v1/history/status", "", nil); code != http.StatusNotFound || !strings.Contains(string(body), "records no history") {
		t.Errorf("without a recorder: %d %s", code, body)
	}
}

// A lock page's socket brings, after its first frame, only the sections of
// the parts a change changed: a node past the table's page whose data
// changes changes the summary (its revision) and not the page's rows; one
// joining past the page changes the table's counts and not its rows; the
// holder going changes them all. A socket opened later gets them all.
func TestPartsFramesBringWhatChanged(t *testing.T) {
	e := newEnv(t, Config{Pages: true})
	f := gozkFolder("/sections", 300)
	e.hub.Publish(f.snapshot())
	v := e.mustDial(t, "/sections&window=0:100&parts=1")
	v.next()
	first := frameParts(t, v.last)
	for _, want := range []string{`id="banner"`, `id="summary"`, `id="alerts"`, `class="table-wrap"`, `class="node-details"`} {
		if !strings.Contains(first, want) {
			t.Errorf("the first frame's parts lack %s", want)
		}
	}

	last := &f.kids[len(f.kids)-1] // far past the first page
	last.Data = []byte("client-299, again")
	f.rev++
	e.hub.Publish(f.snapshot())
	v.next()
	if tail := frameParts(t, v.last); !strings.Contains(tail, `id="summary"`) || strings.Contains(tail, `class="table-wrap"`) || strings.Contains(tail, `id="banner"`) {
		t.Errorf("a node past the page changed: the frame's parts are\n%.400s", tail)
	}

	f.add(300) // joins far past the page: the counts move, the rows do not
	f.rev++
	e.hub.Publish(f.snapshot())
	v.next()
	if join := frameParts(t, v.last); !strings.Contains(join, `<b>300</b> waiting`) || !strings.Contains(join, `class="table-meta"`) ||
		!strings.Contains(join, `data-info="rows 1–100 of 301`) || strings.Contains(join, `class="table-wrap"`) {
		t.Errorf("a node joined past the page: the frame's parts are\n%.600s", join)
	}

	f.remove(f.kids[0].Name) // the holder goes: every row of the page moves
	f.rev++
	e.hub.Publish(f.snapshot())
	v.next()
	if head := frameParts(t, v.last); !strings.Contains(head, `id="summary"`) || !strings.Contains(head, `class="table-wrap"`) {
		t.Errorf("the holder gone: the frame's parts are\n%.400s", head)
	}

	late := e.mustDial(t, "/sections&window=0:100&parts=1")
	late.next()
	if all := frameParts(t, late.last); !strings.Contains(all, `id="banner"`) || !strings.Contains(all, `class="table-wrap"`) {
		t.Errorf("a socket opened later got\n%.400s", all)
	}
}

// A socket opened with &show=1 brings the table's page that has the node
// (?node=), wherever it is, so a page that shows a node asks nothing else.
func TestPartsShowTheNodesPage(t *testing.T) {
	e := newEnv(t, Config{Pages: true})
	f := gozkFolder("/show", 300)
	e.hub.Publish(f.snapshot())
	snap, _ := e.hub.Latest("/show")
	far := snap.Nodes[250].Name
	v := e.mustDial(t, "/show&window=0:100&parts=1&show=1&node="+url.QueryEscape(far))
	v.next()
	parts := frameParts(t, v.last)
	if !strings.Contains(parts, `data-page="2"`) || !strings.Contains(parts, `<tr data-row="`+far+`"`) {
		t.Errorf("the frame's table is not the page of %s:\n%.600s", far, parts)
	}
	plain := e.mustDial(t, "/show&window=0:100&parts=1&node="+url.QueryEscape(far))
	plain.next()
	if parts := frameParts(t, plain.last); !strings.Contains(parts, `data-page="0"`) {
		t.Errorf("without show=1 the frame's table is not the first page:\n%.300s", parts)
	}
}
