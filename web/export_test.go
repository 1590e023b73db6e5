package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockservice"
)

// replayPages serves the fixture service with its pages and a real
// history store that recorded the fixture's lock "orders" handed a → b → c,
// a second apart from fixtureEpoch.
func replayPages(t *testing.T) *httptest.Server {
	t.Helper()
	ts, _ := countedReplay(t)
	return ts
}

// pagesWithHistory serves the API and the pages of reg's services over
// the history in store.
func pagesWithHistory(t testing.TB, h *hub.Hub, reg *lockservice.Registry, store history.Source) *httptest.Server {
	t.Helper()
	srv, err := New(Config{Hub: h, Services: reg, History: store, Logger: testLogger(t), Pages: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

// recordFixture registers the fixture service of seam_test.go and records
// its lock "orders" handed a → b → c into store, a second apart from
// fixtureEpoch.
func recordFixture(t *testing.T, store *history.Store, reg *lockservice.Registry, h *hub.Hub) {
	t.Helper()
	svc, r := fixtureService(h)
	if err := reg.Register(svc); err != nil {
		t.Fatal(err)
	}
	for released := range 3 {
		if _, err := store.Record(r.queue("orders", released)); err != nil {
			t.Fatal(err)
		}
	}
}

// rowState is the state a rendered table gives a node's row.
func rowState(body, name string) string {
	m := regexp.MustCompile(`data-row="` + regexp.QuoteMeta(name) + `" data-state="([a-z-]+)"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// The lock page and its parts answer for a past moment from the history,
// and say which moment it is.
func TestLockPageAtAMoment(t *testing.T) {
	ts := replayPages(t)
	ms := func(d time.Duration) string { return fmt.Sprint(fixtureEpoch.Add(d).UnixMilli()) }
	for _, tc := range []struct {
		name, url string
		code      int
		holding   string
		waiting   string
		says      string
	}{
		{"page before the first hand-off", "/lock?service=fixture&path=orders&at=" + ms(500*time.Millisecond), 200, "a", "b", "as it was at 2026-01-02 03:04:05 UTC"},
		{"parts after it", "/parts/lock?service=fixture&path=orders&at=" + ms(1500*time.Millisecond), 200, "b", "c", "as it was at 2026-01-02 03:04:06 UTC"},
		{"page at an RFC 3339 time", "/lock?service=fixture&path=orders&at=" + url.QueryEscape(fixtureEpoch.Add(2500*time.Millisecond).Format(time.RFC3339Nano)), 200, "c", "", "as it was at"},
		{"before the history", "/lock?service=fixture&path=orders&at=" + ms(-time.Hour), 200, "", "", "No history of this lock"},
		{"a bad moment", "/lock?service=fixture&path=orders&at=yesterday", 400, "", "", "RFC 3339"},
		{"the summary says the moment is read from the history", "/lock?service=fixture&path=orders&at=" + ms(1500*time.Millisecond), 200, "", "", `data-stat="read from">read from <b>history</b></div>`},
		{"text at a moment", "/parts/lock-text?service=fixture&path=orders&at=" + ms(1500*time.Millisecond), 200, "", "", "read from history"},
		{"the lane's snapshot", "/parts/lock-at?service=fixture&path=orders&at=" + ms(1500*time.Millisecond), 200, "", "", `"known":true,"snapshot":{"service":"fixture","path":"orders"`},
		{"the lane's snapshot before the history", "/parts/lock-at?service=fixture&path=orders&at=" + ms(-time.Hour), 200, "", "", `"known":false`},
		{"parts at a bad moment", "/parts/lock?service=fixture&path=orders&at=yesterday", 400, "", "", "RFC 3339"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, b := do(t, http.MethodGet, ts.URL+tc.url, "", nil)
			body := string(b)
			if code != tc.code {
				t.Fatalf("status %d, want %d: %s", code, tc.code, body)
			}
			if !strings.Contains(body, tc.says) {
				t.Errorf("the answer does not say %q:\n%s", tc.says, body)
			}
			if tc.holding != "" && rowState(body, tc.holding) != "holding" {
				t.Errorf("%s is %q, want holding", tc.holding, rowState(body, tc.holding))
			}
			if tc.waiting != "" && rowState(body, tc.waiting) != "waiting" {
				t.Errorf("%s is %q, want waiting", tc.waiting, rowState(body, tc.waiting))
			}
		})
	}
}

// The incident is one HTML file, an attachment, that loads nothing from
// anywhere: every change of the window with the queue after it, and the
// figures.
func TestIncidentExport(t *testing.T) {
	ts := replayPages(t)
	ms := func(d time.Duration) string { return fmt.Sprint(fixtureEpoch.Add(d).UnixMilli()) }
	window := "service=fixture&path=orders&from=" + ms(500*time.Millisecond) + "&to=" + ms(time.Minute)
	code, h, b := do(t, http.MethodGet, ts.URL+"/api/v1/lock/export?"+window, "", nil)
	body := string(b)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	if cd := h.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, ".html") {
		t.Errorf("Content-Disposition %q, want an .html attachment", cd)
	}
	if strings.Count(body, `data-change="`) != 3 {
		t.Errorf("%d changes, want 3 (the queue at the start and two hand-offs)", strings.Count(body, `data-change="`))
	}
	for _, want := range []string{"the queue as the window starts", "acquired b", "left a (released)", `data-figure="wait" data-count="2"`, "<style>", `<script type="module">`, `<script type="importmap">`} {
		if !strings.Contains(body, want) {
			t.Errorf("the incident does not say %q", want)
		}
	}
	// Nothing to fetch: no external script, stylesheet, image or font.
	if m := regexp.MustCompile(`(?i)(src|href)=|url\(|@import`).FindString(body); m != "" {
		t.Errorf("the incident refers to something outside it: %q", m)
	}

	off := newEnv(t, Config{})
	for _, tc := range []struct {
		name, url string
		code      int
	}{
		{"from after to", ts.URL + "/api/v1/lock/export?service=fixture&path=orders&from=" + ms(time.Minute) + "&to=" + ms(0), http.StatusBadRequest},
		{"history off", off.ts.URL + "/api/v1/lock/export?path=/locks/orders", http.StatusNotFound},
	} {
		if code, _, b := do(t, http.MethodGet, tc.url, "", nil); code != tc.code {
			t.Errorf("%s: status %d, want %d: %s", tc.name, code, tc.code, b)
		}
	}
}
