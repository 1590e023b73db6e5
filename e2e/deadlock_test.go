package e2e

import (
	"testing"

	"github.com/zklockviz/zklockviz/third_party/zk"
)

// A deadlock through two locks, in the browser: two sessions each hold one
// lock and queue on the other. The dashboard lists it once, above the
// locks, linking both. Each lock's page lists the deadlock, which names
// both locks and links the other; following the link opens the other lock,
// whose page tells the same cycle.
func TestDeadlockAcrossLocksInBrowser(t *testing.T) {
	need(t)
	const a, b = "/e2e/xlock/a", "/e2e/xlock/b"
	s1, s2 := connect(t), connect(t)
	ensurePath(t, s1, a)
	ensurePath(t, s1, b)
	for _, step := range []struct {
		c    *zk.Conn
		path string
	}{{s1, a}, {s2, b}, {s1, b}, {s2, a}} {
		if _, err := step.c.Create(step.path+"/lock-", []byte("worker"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create under %s: %v", step.path, err)
		}
	}
	srv := startServer(t, "--watch-under", "/e2e/xlock")
	tb := newTab(t)
	tb.open(srv.URL + "/")
	tb.until("the dashboard lists the deadlock once, first, linking both locks",
		`document.querySelectorAll('#across li[data-kind="deadlock"]').length === 1 && `+
			`document.querySelector('#across').compareDocumentPosition(document.querySelector('table.locks')) & Node.DOCUMENT_POSITION_FOLLOWING && `+
			`[...document.querySelectorAll('#across a.alert-lock')].map(l => l.textContent).join() === '→ `+a+`,→ `+b+`'`)
	tb.open(srv.URL + "/lock?path=" + a)
	link := `document.querySelector('#alerts li[data-kind="deadlock"] a.alert-lock')`
	tb.until("the deadlock listed, linking "+b, link+` && `+link+`.textContent.includes('`+b+`') && `+
		`document.querySelector('#alerts li[data-kind="deadlock"]').textContent.includes('across 2 locks')`)
	eval[any](tb, link+`.click()`)
	tb.until("the other lock's page, with the same cycle", `location.search.includes(encodeURIComponent('`+b+`')) && `+
		`[...document.querySelectorAll('#alerts li[data-kind="deadlock"] a.alert-lock')].some(l => l.textContent.includes('`+a+`'))`)
}
