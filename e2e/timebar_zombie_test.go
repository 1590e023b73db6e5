package e2e

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// A zombie holder at a past moment (its session gone, its node kept) is
// timed to the moment shown, on the lane and in its details, and stays so
// while the page is open: half an hour later it is not timed from now,
// and the next moment, 30 s on, reads 30 s more. First seen holding, it
// is timed from its creation a minute before, as the live page timed it.
func TestTimeBarZombieAtAPastMoment(t *testing.T) {
	need(t)
	const path, holder = "/e2e/timebar/zombie", "lock-0000000000"
	start := time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	dir := t.TempDir()
	now := start
	s, err := history.Open(history.Options{Dir: dir, Now: func() time.Time { return now }, SyncEvery: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// record: the holder first seen at start, a zombie from a minute on;
	// a waiter comes at 2 minutes, a change to step to.
	record := func(after time.Duration, zombie, waiter bool) {
		now = start.Add(after)
		snap := lockqueue.Snapshot{Path: path, Recipe: lockqueue.Kazoo, Connection: lockqueue.Connected, Exists: true, UpdatedAt: now,
			Nodes: []lockqueue.Node{{Name: holder, Mode: lockqueue.Exclusive, Holding: true, Session: "0x1", Ctime: start.Add(-time.Minute), Zombie: zombie}}}
		if waiter {
			snap.Nodes = append(snap.Nodes, lockqueue.Node{Name: "lock-0000000001", Seq: 1, Mode: lockqueue.Exclusive, Session: "0x2", Ctime: now, WaitsFor: holder})
		}
		if _, err := s.Record(snap); err != nil {
			t.Fatal(err)
		}
	}
	record(0, false, false)
	record(time.Minute, true, false)
	record(2*time.Minute, true, true)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	srv := startServer(t, "--data-dir", dir)
	tb := newTab(t)
	at := start.Add(90 * time.Second)
	tb.open(fmt.Sprintf("%s/lock?path=%s&at=%d&node=%s", srv.URL, url.QueryEscape(path), at.UnixMilli(), holder))
	label := fmt.Sprintf(`(document.querySelector('#lane [data-node=%s] .label.time') || {textContent: ''}).textContent`, jsString(holder))
	pane := `(document.querySelector('#details dd.time') || {textContent: ''}).textContent`
	shows := func(what string, at time.Time, held string) {
		tb.until(what, fmt.Sprintf(`document.getElementById('replay-status').dataset.at === '%d' && document.querySelector('#lane [data-node=%s]')?.classList.contains('zombie') && %s === %s && %s === %s`,
			at.UnixMilli(), jsString(holder), label, jsString("zombie · held "+held), pane, jsString(held)))
	}
	shows("the zombie at 1m 30s after its first sight", at, "2m 30s")
	// The page's clocks tick every second: a clock timed from now would
	// read half an hour by now.
	time.Sleep(2500 * time.Millisecond)
	if got := eval[string](tb, label); got != "zombie · held 2m 30s" {
		t.Errorf("2.5 s later the zombie's label says %q, want zombie · held 2m 30s, the moment shown's", got)
	}
	if got := eval[string](tb, pane); got != "2m 30s" {
		t.Errorf("2.5 s later the zombie's details say it held %q, want 2m 30s, the moment shown's", got)
	}
	tb.key(kb.ArrowRight)
	shows("the next moment, 30 s on", start.Add(2*time.Minute), "3m 00s")
}
