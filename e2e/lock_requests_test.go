package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/views"
)

// An open lock page draws each change from its socket's frame alone: the
// lane, the lane's labels, the summary and the table's rows come with the
// frame, and the page sends no request for them. Only the figures and the
// time bar read the history, each on a timer of its own, not per change.
func TestLockPageAsksNothingPerChange(t *testing.T) {
	need(t)
	const path = "/e2e/requests"
	srv := startServer(t, "--watch", path)
	c := connect(t)
	ensurePath(t, c, path)
	holder, err := c.Create(path+"/_c_0f0e0d0c0b0a-worker-lock-", []byte("holder"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatalf("create the holder: %v", err)
	}
	holder = holder[len(path)+1:]

	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + url.QueryEscape(path))
	tb.until("the holder, live", node(holder, "holding")+` && document.body.dataset.live === 'true'`)
	tb.until("the holder's row", fmt.Sprintf(`document.querySelector('#table tr[data-row=%s]')`, jsString(holder)))
	tb.run(`window.sameDocument = true; window.asked = performance.getEntriesByType('resource').length`)

	for i := range 5 {
		// A name longer than a lane column, so its label is the server's
		// short one (lockqueue.ShortName), which only the frame can bring.
		name, err := c.Create(path+"/_c_0f0e0d0c0b0a-worker-lock-", []byte(fmt.Sprintf("waiter %d", i)), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatalf("create waiter %d: %v", i, err)
		}
		name = name[len(path)+1:]
		seq := int64(0)
		fmt.Sscanf(name[len(name)-10:], "%d", &seq)
		label := views.ShortName(name, seq)
		if label == name {
			t.Fatalf("%s is its own label; the test wants one the server shortens", name)
		}
		tb.until(fmt.Sprintf("waiter %d drawn with the server's label", i),
			fmt.Sprintf(`(() => { const g = %s; return g && g.querySelector('text.label.name').textContent === %s })()`, node(name, "waiting"), jsString(label)))
		tb.until(fmt.Sprintf("waiter %d's row", i), fmt.Sprintf(`document.querySelector('#table tr[data-row=%s]')`, jsString(name)))
		if i == 0 {
			// The lane's titles are the server's phrases, filled in.
			title := eval[string](tb, fmt.Sprintf(`document.querySelector('#lane [data-from=%s][data-kind=rule] title').textContent`, jsString(name)))
			if want := name + " waits for " + holder; !strings.HasPrefix(title, want) {
				t.Errorf("the waiter's arrow says %q, want it to begin %q", title, want)
			}
		}
		tb.until(fmt.Sprintf("the summary counts %d waiting", i+1), fmt.Sprintf(`document.querySelector('#summary [data-stat="waiting"] b').textContent === '%d'`, i+1))
	}
	// What the page asked of the server's data: not the browser's own
	// asks (the favicon), not the history's figures and time bar, each on
	// a timer of its own.
	asked := eval[[]string](tb, `performance.getEntriesByType('resource').slice(window.asked).map(e => new URL(e.name).pathname)
		.filter(p => (p.startsWith('/parts/') || p.startsWith('/api/')) && p !== '/parts/lock-figures' && !p.startsWith('/api/v1/lock/'))`)
	if len(asked) > 0 {
		t.Errorf("the page asked the server %d times for 5 changes, want none: %v", len(asked), asked)
	}
	if !eval[bool](tb, `window.sameDocument === true`) {
		t.Error("the page was reloaded")
	}
}
