package e2e

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp/kb"
)

// The classroom's table (key t) is the server's rendering of the step the
// run shows: the same rows as the lane, the same labels as the lock view's,
// following each step.
func TestClassroomTable(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor&step=5")
	scope := run("predecessor")
	checkStep(t, tb, scope, 5, predecessorWatch)
	nodes := eval[map[string]string](tb, nodesJS(scope))

	tb.key("t")
	rows := jsString(scope + " .run-table tbody tr")
	tb.until("a row per node", fmt.Sprintf(`document.querySelectorAll(%s).length === 5`, rows))
	row := func(client string) string {
		return fmt.Sprintf(`document.querySelector(%s)`, jsString(fmt.Sprintf(`%s .run-table tr[data-row=%q]`, scope, nodes[client])))
	}
	for client, want := range map[string]string{"LOCK1": "reader holding", "LOCK3": "writer waiting", "LOCK4": "reader waiting"} {
		tb.until(client+" reads "+want, row(client)+` && `+row(client)+`.querySelector('td.mode').textContent + ' ' + `+row(client)+`.querySelector('td.state').textContent === `+jsString(want))
	}
	tb.until("LOCK4 waits for LOCK3, by its short name with the whole in the tooltip",
		row("LOCK4")+`.querySelector('td.waits abbr').title === `+jsString(nodes["LOCK3"]))
	// The run's clock, not the page's, times the rows (data-clock-at), from
	// the same start as the lane's.
	tb.until("LOCK3's clock", row("LOCK3")+`.querySelector('td.time').dataset.verb === 'waits'`)
	for _, client := range []string{"LOCK1", "LOCK3", "LOCK4"} {
		lane := fmt.Sprintf(`document.querySelector(%s).getAttribute('data-since')`,
			jsString(fmt.Sprintf(`%s svg.lane [data-node=%q] text.time`, scope, nodes[client])))
		tb.until(client+"'s row starts its clock where its lane label does",
			row(client)+`.querySelector('td.time').dataset.since === `+lane)
	}

	tb.key(kb.Home)
	tb.until("step 0: no rows", settled(scope, 0)+fmt.Sprintf(` && document.querySelectorAll(%s).length === 0`, rows))
}
