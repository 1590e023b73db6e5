package e2e

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zklockviz/zklockviz/localproc/proctest"
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

// kazooDeadlock runs testdata/clients/kazoo_deadlock.py on paths: one
// kazoo client (its own session) per path, each holding its lock and
// queued on the next. It returns once every client queues; the clients
// end with the test.
func kazooDeadlock(t *testing.T, paths ...string) {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kazoo (apt-get install python3-kazoo): %v", err)
		}
		t.Skipf("kazoo (apt-get install python3-kazoo): %v", err)
	}
	args := append([]string{filepath.Join("..", "testdata", "clients", "kazoo_deadlock.py"), env.zk.Addr(), "10"}, paths...)
	c := proctest.StartClient(t, python, args...)
	c.Expect(t, fmt.Sprintf("waiting %d ", len(paths)-1), waitFor)
}

// The lock page of a lock in a deadlock through another draws both locks
// side by side, the classroom's way: two real kazoo clients, c0 holding
// a and queued on b, c1 holding b and queued on a. On a's page both lanes
// are drawn (a's first), each titled with a link to its lock's page; each
// lane's waiter's arrow is the cycle's, and a link below the lanes goes
// from each holder to its own client's wait in the other lane. Following
// b's title opens b's page, which draws the same cycle with b first.
func TestDeadlockLocksSideBySide(t *testing.T) {
	need(t)
	const root = "/e2e/xscene"
	a, b := root+"/locks/a", root+"/locks/b"
	ensurePath(t, connect(t), root+"/locks")
	srv := startServer(t, "--watch-under", root)
	kazooDeadlock(t, a, b)

	type lane struct {
		Lock  string `json:"lock"`
		Title string `json:"title"`
		Href  string `json:"href"`
		Cycle int    `json:"cycle"` // waits marked as the cycle's (rule and watch: one wait)
	}
	lanesJS := `[...document.querySelectorAll('#scene svg.locks > svg.lane')].map(l => {
		const t = [...document.querySelectorAll('#scene svg.locks a.lane-title')].find(a => a.dataset.lock === l.dataset.lock);
		return {lock: l.dataset.lock, title: t ? t.textContent : '', href: t ? t.getAttribute('href') : '',
			cycle: new Set([...l.querySelectorAll('.arrows [data-cycle=true]')].map(p => p.dataset.from + '→' + p.dataset.to)).size};
	})`
	linksJS := `[...document.querySelectorAll('#scene svg.locks .cycle-link')].map(p => p.dataset.cycleLink + ':' + p.dataset.fromLock + '→' + p.dataset.toLock).sort()`
	for _, page := range []struct{ here, there string }{{a, b}, {b, a}} {
		tb := newTab(t)
		tb.open(srv.URL + "/lock?path=" + url.QueryEscape(page.here))
		tb.until("the deadlock's locks drawn side by side",
			`!document.getElementById('scene').hidden && document.querySelectorAll('#scene svg.locks > svg.lane').length === 2 && `+
				`document.querySelectorAll('#scene svg.locks .cycle-link').length === 2`)
		lanes := eval[[]lane](tb, lanesJS)
		for i, want := range []string{page.here, page.there} {
			if i >= len(lanes) {
				break
			}
			l := lanes[i]
			if l.Lock != want || l.Title != want || l.Href != "/lock?path="+url.QueryEscape(want) {
				t.Errorf("%s's page: lane %d is %+v, want %s titled and linked to its page", page.here, i, l, want)
			}
			if l.Cycle != 1 {
				t.Errorf("%s's page: lane %s marks %d waits as the cycle's, want its waiter's one", page.here, l.Lock, l.Cycle)
			}
		}
		// c0 holds a and waits in b; c1 holds b and waits in a.
		links := eval[[]string](tb, linksJS)
		if want := []string{"c0:" + a + "→" + b, "c1:" + b + "→" + a}; !slices.Equal(links, want) {
			t.Errorf("%s's page: the cycle's links across the lanes %q, want %q", page.here, links, want)
		}
		if page.here == a {
			tb.screenshot("lock-deadlock-scene.png")
			tb.run(`document.querySelector('#scene a.lane-title[data-lock="` + b + `"]').dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}))`)
			tb.until("b's title opens b's page", `location.search === '?path=`+url.QueryEscape(b)+`' && document.querySelector('#scene svg.locks > svg.lane') && `+
				`document.querySelector('#scene svg.locks > svg.lane').dataset.lock === '`+b+`'`)
		}
	}
}
