package e2e

import (
	"fmt"
	"github.com/chromedp/chromedp/kb"
	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An incident file shows each change as the lock page does: the lane drawn
// from the queue the change left (its holder, its waiters, the rule's
// edges, their clocks stopped at the change) and the page's table, which
// wraps long library names and host names to the page's width instead of
// running past the card's right edge.
func TestIncidentExportDrawsTheLaneAndFits(t *testing.T) {
	need(t)
	const path = "/e2e/export/wide"
	r := recordWide(t, path, 5, 10*time.Second, 4)
	srv := startServer(t, "--data-dir", r.dir)
	res, err := http.Get(fmt.Sprintf("%s/api/v1/lock/export?path=%s&from=%d&to=%d", srv.URL, url.QueryEscape(path), r.start.Add(-time.Minute).UnixMilli(), time.Now().UnixMilli()))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("export: %s, %v: %s", res.Status, err, body)
	}
	file := filepath.Join(t.TempDir(), "incident.html")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	tb := newTab(t)
	tb.open("file://" + file)
	const shown = `document.querySelector('#changes .change:not([hidden])')`
	// The first change: node 0 left, node 1 acquired; the queue after it
	// is nodes 1 to 4, each waiting for the one before.
	tb.until("the first change's lane", shown+`.querySelectorAll('svg.lane [data-node]').length === 4`)
	holder := eval[string](tb, shown+`.querySelector('svg.lane [data-node][data-state=holding]')?.dataset.node || ''`)
	if want := wideName(1); holder != want {
		t.Errorf("the lane's holder %q, want %q", holder, want)
	}
	if n := eval[int](tb, shown+`.querySelectorAll('svg.lane [data-kind=rule]').length`); n != 3 {
		t.Errorf("%d waits-for arrows in the lane, want 3", n)
	}
	if got := eval[string](tb, shown+`.querySelector('svg.lane [data-node][data-state=holding] text.label.name').textContent`); got == wideName(1) || got == "" {
		t.Errorf("the holder's label %q, want the lane's short name", got)
	}
	if got := eval[string](tb, shown+`.querySelector('svg.lane [data-node="`+wideName(4)+`"] text.label.time').textContent`); got != "waits 10s" {
		t.Errorf("the newest waiter's clock %q, want 'waits 10s', stopped at the change", got)
	}
	if got := eval[string](tb, shown+`.querySelector('.queue-table tr[data-state=holding]')?.dataset.row || ''`); got != holder {
		t.Errorf("the table's holder %q, the lane's %q", got, holder)
	}
	// Nothing runs past the card: the page does not scroll sideways, and
	// the table is as wide as its box.
	fit := eval[string](tb, `(() => {
  const card = `+shown+`.getBoundingClientRect();
  const out = [];
  if (document.documentElement.scrollWidth > document.documentElement.clientWidth) out.push('the page scrolls sideways');
  for (const e of `+shown+`.querySelectorAll('.table-wrap, table, td')) {
    const b = e.getBoundingClientRect();
    if (b.right > card.right + 0.5) out.push(e.tagName + '.' + e.className + ' ends at ' + b.right + ' past the card at ' + card.right);
    if (e.scrollWidth > e.clientWidth + 1 && e.tagName !== 'TD') out.push(e.tagName + '.' + e.className + ' hides ' + (e.scrollWidth - e.clientWidth) + ' px');
  }
  return out.join('; ');
})()`)
	if fit != "" {
		t.Errorf("the incident's table does not fit: %s", fit)
	}
	// Another change is drawn when shown.
	tb.key(kb.ArrowRight)
	tb.until("the second change's lane", shown+`.dataset.change === '1' && `+shown+`.querySelector('svg.lane [data-node="`+wideName(2)+`"][data-state=holding]')`)
	tb.screenshot("incident-export.png")
}

func wideName(i int) string { return fmt.Sprintf("%032x__lock__%010d", 0xabcdef01234567+i, i) }

// recordWide is recordQueue with names as kazoo makes them (32 hex digits)
// and pod host names as data: a queue whose table is wide.
func recordWide(tb testing.TB, path string, changes int, every time.Duration, size int) queueRecord {
	tb.Helper()
	start := time.Now().Add(-time.Minute - time.Duration(changes)*every).Truncate(time.Second)
	now := start
	r := queueRecord{dir: tb.TempDir(), start: start}
	s, err := history.Open(history.Options{Dir: r.dir, Now: func() time.Time { return now }})
	if err != nil {
		tb.Fatal(err)
	}
	name := wideName
	for i := range changes {
		now = start.Add(time.Duration(i) * every)
		snap := lockqueue.Snapshot{Path: path, Recipe: lockqueue.Kazoo, Connection: lockqueue.Connected, Exists: true, UpdatedAt: now}
		for j := range size {
			n := lockqueue.Node{Name: name(i + j), Seq: int64(i + j), Mode: lockqueue.Exclusive, Holding: j == 0,
				Session: fmt.Sprintf("0x%016x", 0x100000000+i+j), Data: fmt.Sprintf("worker-%d.batch-processing.eu-west-1.example.internal pid %d", i+j, 40000+i+j),
				Ctime: start.Add(time.Duration(i+j-size) * every)}
			if j > 0 {
				n.WaitsFor = snap.Nodes[j-1].Name
			}
			snap.Nodes = append(snap.Nodes, n)
		}
		evs, err := s.Record(snap)
		if err != nil {
			tb.Fatal(err)
		}
		if len(evs) > 0 {
			if r.changes == 0 {
				r.first = now
			}
			r.changes++
			r.last, r.lastHolder = now, snap.Nodes[0].Name
		}
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return r
}
