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

// A window with more changes than one answer of the history lists (100,000
// events) is navigable to its end: the bar counts every moment from the
// server's density, End reaches the last change, ← the one before it, Home
// the lock's first sight and → from it the first change, and → past the
// last goes live.
func TestTimeBarReachesTheLastOfALongDay(t *testing.T) {
	need(t)
	const path, every = "/e2e/timebar/long", 2 * time.Second
	r := recordQueue(t, path, 30_000, every, 2)
	if r.events <= 100_000 {
		t.Fatalf("recorded %d events, want over 100,000 for the test to mean anything", r.events)
	}
	srv := startServer(t, "--data-dir", r.dir)
	// Reopening the store records, after the day, the time it was closed as
	// a gap: the window's last change.
	final, changes := r.last, r.changes
	res, err := http.Get(fmt.Sprintf("%s/api/v1/lock/history?path=%s&from=%d", srv.URL, url.QueryEscape(path), r.last.UnixMilli()+1))
	if err != nil {
		t.Fatal(err)
	}
	var after recorded
	err = json.NewDecoder(res.Body).Decode(&after)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range after.Events {
		if e.Time.After(final) {
			final, changes = e.Time, changes+1
		}
	}
	tb := newTab(t)
	tb.open(fmt.Sprintf("%s/lock?path=%s", srv.URL, url.QueryEscape(path)))
	tb.until("the time bar's window loaded", `Number(document.getElementById('timebar').dataset.moments) > 0`)
	tb.run(`(() => { const w = document.getElementById('tb-window'); w.value = '86400000'; w.dispatchEvent(new Event('change')); })()`)
	tb.until(fmt.Sprintf("the 24-hour window counts all %d changes", changes),
		fmt.Sprintf(`document.getElementById('timebar').dataset.moments === '%d'`, changes))

	at := func(what string, t time.Time) {
		tb.until(what, fmt.Sprintf(`document.getElementById('timebar').dataset.at === '%[1]d' && document.getElementById('replay-status').dataset.at === '%[1]d'`, t.UnixMilli()))
	}
	tb.key(kb.End)
	at("End: the last change", final)
	tb.until("the info counts it the last", fmt.Sprintf(`document.getElementById('tb-info').textContent.includes('%[1]d of %[1]d changes')`, changes))
	if changes > r.changes+1 {
		t.Fatalf("%d changes recorded after the day's, want the reopening's gap at most", changes-r.changes)
	}
	if changes > r.changes {
		tb.key(kb.ArrowLeft)
		at("←: the day's last snapshot", r.last)
	}
	tb.until("the lane shows its holder then", fmt.Sprintf(`document.querySelector('#lane [data-node][data-state=holding]')?.dataset.node === %s`, jsString(r.lastHolder)))
	tb.key(kb.ArrowLeft)
	at("←: the change before it", r.last.Add(-every))
	tb.key(kb.Home)
	at("Home: the first sight, where the day's history begins", r.start)
	tb.key(kb.ArrowRight)
	at("→: the first change", r.first)
	tb.until("the info counts it the first", fmt.Sprintf(`document.getElementById('tb-info').textContent.includes('1 of %d changes')`, changes))
	tb.key(kb.ArrowRight)
	at("→: the second change", r.first.Add(every))
	tb.key(kb.End)
	at("End again", final)
	tb.key(kb.ArrowRight)
	tb.until("→ past the last change goes live", `document.getElementById('timebar').dataset.at === '' && !new URL(location.href).searchParams.has('at')`)
}
