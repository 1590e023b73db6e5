package e2e

import (
	"net/url"
	"testing"
)

// The figures under an open lock page follow the live queue: a hand-off
// after the page opened is counted (released, acquisitions, a wait) without
// a reload.
func TestLockFiguresFollowChanges(t *testing.T) {
	need(t)
	const path = "/e2e/figures-live"
	srv, first, second, q := queuedTwo(t, path)

	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + url.QueryEscape(path))
	tb.until("the second waits, live", node(q[1], "waiting"))
	stat := func(name string) string {
		return `Number(document.querySelector('#figures [data-stat="` + name + `"] b').textContent)`
	}
	tb.until("the figures", `document.querySelector('#figures [data-stat="released"]')`)
	if n := eval[int](tb, stat("released")); n != 0 {
		t.Fatalf("the figures count %d releases before any, want 0", n)
	}
	if n := eval[int](tb, stat("acquisitions")); n != 1 {
		t.Fatalf("the figures count %d acquisitions before the hand-off, want 1 (the first's)", n)
	}
	// A reload would lose this mark.
	tb.run(`window.sameDocument = true`)

	if err := first.lock.Unlock(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	if err := <-second.got; err != nil {
		t.Fatalf("second lock: %v", err)
	}
	tb.until("the second holds, live", node(q[1], "holding"))
	tb.until("the figures count the release", stat("released")+` === 1`)
	tb.until("the figures count the acquisition", stat("acquisitions")+` === 2`)
	tb.until("the figures have its wait", `document.querySelector('#figures tr[data-figure="wait"]').dataset.count === '2'`)
	if !eval[bool](tb, `window.sameDocument === true`) {
		t.Error("the page was reloaded")
	}
}
