package web

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/hub"
)

var tableRow = regexp.MustCompile(`<tr data-row="([^"]+)"`)

// The lock page of a 100,000-node queue, and the parts its script fetches,
// answer with the page of the table asked for: the rows of that page in
// queue order, the node picked by name and its page, the queue's counts,
// and a filter's matches. Each answer costs the page it shows: after the
// first question about a snapshot, a page of the table allocates a small
// part of what one pass keeping a position per node does.
func TestBigLockPageShowsItsPage(t *testing.T) {
	const path, n = "/big", 100_000
	snap := gozkFolder(path, n).snapshot()
	ts := pageServer(t, false, snap)
	name := func(i int) string { return snap.Nodes[i].Name }
	far := name(73_210)
	for _, tc := range []struct {
		what, url   string
		first, rows int    // the rows: the nodes at first, first+1, ...
		info        string // the pager's words
		details     string // the node the detail pane shows
	}{
		{"page 538 of the table", "/parts/lock?page=537&size=100&path=" + path, 53_700, 100, "rows 53701–53800 of 100,000 · page 538/1000", ""},
		{"the last page", "/parts/lock?page=999&size=100&path=" + path, 99_900, 100, "rows 99901–100000 of 100,000 · page 1000/1000", ""},
		{"a page past the end, the last", "/parts/lock?page=5000&size=500&path=" + path, 99_500, 500, "rows 99501–100000 of 100,000 · page 200/200", ""},
		{"a node picked in the table", "/parts/lock?page=0&size=100&selected=" + url.QueryEscape(far) + "&show=" + url.QueryEscape(far) + "&path=" + path, 73_200, 100, "rows 73201–73300 of 100,000 · page 733/1000", far},
		{"the page opened on a node", "/lock?path=" + path + "&node=" + url.QueryEscape(far), 73_200, 100, "rows 73201–73300 of 100,000 · page 733/1000", far},
		{"the page opened", "/lock?path=" + path, 0, 100, "rows 1–100 of 100,000 · page 1/1000", ""},
		{"a filter", "/parts/lock?size=100&q=" + url.QueryEscape(name(4_242)) + "&path=" + path, 4_242, 1, "rows 1–1 of 1 · page 1/1", ""},
	} {
		t.Run(tc.what, func(t *testing.T) {
			_, body := pageGet(t, ts.URL+tc.url, nil)
			got := tableRow.FindAllStringSubmatch(body, -1)
			if len(got) != tc.rows {
				t.Fatalf("%d rows, want %d", len(got), tc.rows)
			}
			for k, m := range got {
				if want := name(tc.first + k); m[1] != want {
					t.Fatalf("row %d is %s, want the queue's node %d, %s", k, m[1], tc.first+k, want)
				}
			}
			if !strings.Contains(body, `data-info="`+tc.info+`"`) {
				t.Errorf("the pager does not say %q", tc.info)
			}
			for _, want := range []string{`data-stat="holding"><b>1</b>`, `data-stat="waiting"><b>99,999</b>`} {
				if !strings.Contains(body, want) {
					t.Errorf("the summary lacks %s", want)
				}
			}
			if tc.details != "" && !strings.Contains(body, fmt.Sprintf(`class="node-details" data-node="%s"`, tc.details)) {
				t.Errorf("the detail pane does not show %s", tc.details)
			}
		})
	}

	// Bytes allocated per page of the table, in this process: a pass over
	// the queue keeping each node's position is 0.8 MB and more for
	// 100,000 nodes, and the pages used to cost 5 MB each.
	pageGet(t, ts.URL+"/parts/lock?page=1&size=100&path="+path, nil)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const pages = 5
	for p := range pages {
		pageGet(t, ts.URL+fmt.Sprintf("/parts/lock?page=%d&size=100&path=%s", 600+p, path), nil)
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / pages
	t.Logf("%d bytes allocated per page of the table", per)
	if per > 2<<20 {
		t.Errorf("a page of 100 rows of a 100,000-node queue allocated %d bytes; want at most 2 MB", per)
	}
}

var firstFrameScript = regexp.MustCompile(`<script id="first-frame" type="application/json">([^<]*)</script>`)

// The lock page of a long queue carries the first message its socket
// sends for the window the page opens on (the table's first page, and the
// node in the URL), byte for byte, so the page draws the queue before the
// socket is open; a short queue's page, or a past moment's, carries none.
func TestBigLockPageCarriesItsFirstFrame(t *testing.T) {
	h := hub.New()
	reg := zkRegistry(nil, nil)
	srv, err := New(Config{Hub: h, Services: reg, Pages: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	e := &testEnv{hub: h, srv: srv, ts: ts}
	big := gozkFolder("/big", 100_000)
	big.watchPred = true
	h.Publish(big.snapshot())
	h.Publish(gozkFolder("/short", windowWholeUpTo).snapshot())
	whole, _ := h.Latest("/big")
	far := whole.Nodes[73_210].Name

	for _, tc := range []struct{ page, socket string }{
		{"/lock?path=/big", "/big&window=0:100"},
		{"/lock?path=/big&node=" + url.QueryEscape(far), "/big&window=0:100&node=" + url.QueryEscape(far)},
	} {
		_, body := pageGet(t, ts.URL+tc.page, nil)
		m := firstFrameScript.FindStringSubmatch(body)
		if m == nil {
			t.Errorf("%s: no first frame", tc.page)
			continue
		}
		v := e.mustDial(t, tc.socket)
		v.next()
		// (templ writes the JSON with a newline after it.)
		if strings.TrimSpace(m[1]) != string(v.last) {
			t.Errorf("%s: the page's first frame (%d bytes) is not the socket's (%d bytes)", tc.page, len(m[1]), len(v.last))
		}
		var f Frame
		if err := json.Unmarshal([]byte(m[1]), &f); err != nil || f.Snapshot == nil {
			t.Fatalf("%s: the first frame is no snapshot: %v", tc.page, err)
		}
		checkWindow(t, *f.Snapshot, f.Window, whole)
	}
	_, body := pageGet(t, ts.URL+"/lock?path=/short", nil)
	if firstFrameScript.MatchString(body) {
		t.Error("a short queue's page carries a first frame; its socket sends it whole")
	}
}
