package e2e

import (
	"fmt"
	"strconv"
	"testing"
)

// A reader of the seeds' read/write lock that holds by rule but whose
// client, woken by the writer before it going, watches the writer queued
// after it, while that writer waits for the reader: the lane draws the
// reader as holding by rule with its client still waiting, highlights the
// stuck edge, and the alerts, the table, the summary and the dashboard all
// say so; the console stays empty.
func TestStalledHolderView(t *testing.T) {
	need(t)
	const path = "/e2e/stalled"
	admin := connect(t)
	ensurePath(t, admin, path)
	first := seedRequest(t, path, "W", "first")
	reader := seedRequest(t, path, "R", "reader")
	writer := seedRequest(t, path, "W", "writer")
	reader.watch(t, path, first)
	writer.watch(t, path, reader)
	if err := first.conn.Delete(path+"/"+first.name, -1); err != nil {
		t.Fatal(err)
	}
	reader.watch(t, path, writer) // the missed wake-up: the wrong writer

	srv := startServer(t, "--watch", path, "--stall-grace", "1s")
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("two nodes", nodeCount(2))
	g := fmt.Sprintf(`document.querySelector('#lane [data-node=%s]')`, jsString(reader.name))
	tb.until("the reader drawn as a stalled holder", g+`.dataset.state === 'holding' && `+g+`.classList.contains('stalled') && `+
		g+`.dataset.stalledOn === `+jsString(writer.name)+` && `+g+`.querySelector('.stall-ring') && `+g+`.querySelector('.badge.stalled')`)
	stuck := arrow(reader.name, writer.name, "actual")
	tb.until("its stuck edge highlighted", stuck+`.dataset.stuck === 'true' && `+stuck+`.classList.contains('stuck')`)
	tb.until("in the deadlock cycle", stuck+`.dataset.edge === 'deadlock' && `+arrow(writer.name, reader.name, "actual")+`.dataset.edge === 'deadlock'`)
	tb.until("the stalled-holder alert", `document.querySelector('#alerts [data-kind="stalled-holder"]') && `+
		`document.querySelector('#alerts [data-kind="stalled-holder"]').title === `+jsString(reader.name+"\n"+writer.name))
	tb.until("the deadlock alert names the cycle in order", `document.querySelector('#alerts [data-kind=deadlock]').title === `+
		jsString(reader.name+"\n"+writer.name))
	row := fmt.Sprintf(`document.querySelector('#table tr[data-row=%s]')`, jsString(reader.name))
	tb.until("the table row", row+`.hasAttribute('data-stalled') && `+row+`.textContent.includes('stalled: client still waits')`)
	tb.until("the summary", `document.querySelector('#summary [data-stat=stalled]').textContent.trim() === '1 stalled'`)
	if got := eval[string](tb, `document.querySelector('#legend [data-legend="stalled-holder"]').textContent`); got == "" {
		t.Error("the legend has no stalled holder")
	}
	tb.run(g + `.dispatchEvent(new MouseEvent('click', { bubbles: true }))`)
	tb.until("the detail pane says it", `document.getElementById('details').textContent.includes('client still waiting for '+`+jsString(writer.name)+`)`)

	tb.screenshot("lock-stalled.png")
	checkPastIsLive(t, srv, "zookeeper", path)

	// The lock as it was a moment ago draws the stall as the live page
	// did: the history keeps it.
	at := eval[int64](tb, `Date.now()`)
	tb.open(srv.URL + "/lock?path=" + path + "&at=" + strconv.FormatInt(at, 10))
	tb.until("the status says which moment", `document.getElementById('replay-status').textContent.includes('as it was at')`)
	tb.until("a past moment: the reader drawn as a stalled holder", g+` && `+g+`.dataset.state === 'holding' && `+g+`.classList.contains('stalled') && `+
		g+`.dataset.stalledOn === `+jsString(writer.name)+` && `+g+`.querySelector('.stall-ring')`)
	tb.until("a past moment: its stuck edge", stuck+` && `+stuck+`.dataset.stuck === 'true'`)
	tb.until("a past moment: the table row", row+` && `+row+`.hasAttribute('data-stalled')`)

	tb.open(srv.URL + "/")
	dash := fmt.Sprintf(`document.querySelector('tr[data-lock=%s] td.alerts')`, jsString(path))
	tb.until("the dashboard counts it", dash+` && `+dash+`.textContent.includes('stalled-holder') && `+dash+`.textContent.includes('deadlock')`)
	if c := tb.console.String(); c != "" {
		t.Errorf("browser console not empty:\n%s", c)
	}
}
