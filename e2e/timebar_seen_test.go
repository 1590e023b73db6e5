package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
)

// The time bar reaches the lock's first sight, the read that began its
// history: a lock first seen 21 minutes ago whose one change came 11
// minutes later starts the hour's bar at its first sight, Home and ← go to
// it, with who held then, and → to the change; a lock that never changed
// since its first sight fills the bar and the strip from it. The history
// API's default window lists the first sight's nodes.
func TestTimeBarReachesTheFirstSight(t *testing.T) {
	need(t)
	const changed, quiet = "/e2e/timebar/seen", "/e2e/timebar/quiet"
	rc := recordQueue(t, changed, 2, 10*time.Minute, 2)
	rq := recordQueue(t, quiet, 1, 20*time.Minute, 2)
	if rc.changes != 1 || rq.changes != 0 {
		t.Fatalf("recorded %d and %d changes, want 1 and none", rc.changes, rq.changes)
	}

	open := func(path string, r queueRecord) (*server, *tab) {
		return openRecorded(t, path, r, "the first sight's mark", fmt.Sprintf(`!!document.querySelector('#tb-ticks button.k-seen[data-seen="%d"]')`, r.start.UnixMilli()))
	}
	at := func(tb *tab, what string, t time.Time) {
		tb.until(what, fmt.Sprintf(`document.getElementById('timebar').dataset.at === '%[1]d' && document.getElementById('replay-status').dataset.at === '%[1]d'`, t.UnixMilli()))
	}
	barFrom := func(tb *tab) int64 {
		return int64(eval[float64](tb, `Number(document.getElementById('tb-scrub').min)`))
	}

	srv, tb := open(changed, rc)
	if got := barFrom(tb); got != rc.start.UnixMilli() {
		t.Errorf("the bar starts %v after the first sight, want at it", time.Duration(got-rc.start.UnixMilli())*time.Millisecond)
	}
	tb.key(kb.Home)
	at(tb, "Home: the first sight", rc.start)
	tb.until("the info says it is the first sight", `document.getElementById('tb-info').textContent.includes('first seen')`)
	tb.until("the lane shows who held then", `document.querySelector('#lane [data-node][data-state=holding]')?.dataset.node === 'lock-0000000000'`)
	tb.key(kb.ArrowRight)
	at(tb, "→: the change", rc.first)
	tb.until("the lane shows the next holder", `document.querySelector('#lane [data-node][data-state=holding]')?.dataset.node === 'lock-0000000001'`)
	tb.key(kb.ArrowLeft)
	at(tb, "←: back to the first sight", rc.start)

	// The history API's default window (the last hour) began before the
	// history: its nodes are the first sight's, and the newcomer's.
	res, err := http.Get(srv.URL + "/api/v1/lock/history?path=" + url.QueryEscape(changed))
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Nodes []struct {
			Node        string `json:"node"`
			WaitUnknown bool   `json:"waitUnknown"`
		} `json:"nodes"`
	}
	err = json.NewDecoder(res.Body).Decode(&h)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Nodes) != 3 || h.Nodes[0].Node != "lock-0000000000" || !h.Nodes[0].WaitUnknown || h.Nodes[1].Node != "lock-0000000001" || h.Nodes[2].Node != "lock-0000000002" {
		t.Errorf("the default window's nodes %+v, want lock-0000000000 (held at first sight), lock-0000000001 and lock-0000000002", h.Nodes)
	}

	_, tb = open(quiet, rq)
	if got := barFrom(tb); got != rq.start.UnixMilli() {
		t.Errorf("a lock without changes: the bar starts %v after its first sight, want at it", time.Duration(got-rq.start.UnixMilli())*time.Millisecond)
	}
	tb.until("the strip's every bucket has the queue", `(() => { const s = document.getElementById('strip-chart'); return Number(s.dataset.buckets) > 0 && s.querySelectorAll('g.bar').length === Number(s.dataset.buckets) && s.dataset.from === '`+fmt.Sprint(rq.start.UnixMilli())+`'; })()`)
	tb.key(kb.Home)
	at(tb, "Home: the first sight of a lock without changes", rq.start)
}

// openRecorded serves r's history and opens path's live lock page on it,
// until ready holds.
func openRecorded(t *testing.T, path string, r queueRecord, what, ready string) (*server, *tab) {
	t.Helper()
	srv := startServer(t, "--data-dir", r.dir)
	tb := newTab(t)
	tb.open(fmt.Sprintf("%s/lock?path=%s", srv.URL, url.QueryEscape(path)))
	tb.until(path+": "+what, ready)
	return srv, tb
}
