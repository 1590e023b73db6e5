package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/third_party/zk"
)

// A Curator semaphore (InterProcessSemaphoreV2's layout: leases/ and
// locks/ below its path), made node by node with one real session per
// contender, is drawn as one queue at its own path: two holders, the
// pending acquirer (its lease node and its node in the internal lock, one
// contender: the summary counts two waiting), and
// a contender queued on that lock, whose watch on its predecessor in locks/
// is drawn confirmed. The lease limit, which Curator does not store, reads
// as inferred; the console stays empty.
func TestSemaphoreView(t *testing.T) {
	need(t)
	const path = "/e2e/semaphore"
	admin := connect(t)
	ensurePath(t, admin, path+"/leases")
	ensurePath(t, admin, path+"/locks")
	srv := startServer(t, "--watch", path)

	acl := zk.WorldACL(zk.PermAll)
	create := func(c *zk.Conn, folder string, i int, kind string) string {
		t.Helper()
		prefix := fmt.Sprintf("%s/%s/_c_%08d-2fa1-11d2-883f-0016d3cca427-%s-", path, folder, i, kind)
		p, err := c.Create(prefix, []byte(fmt.Sprintf("p%d", i)), zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			t.Fatalf("create %s: %v", prefix, err)
		}
		return p[strings.LastIndex(p, "/")+1:]
	}
	var leases []string
	for i := range 2 {
		leases = append(leases, create(connect(t), "leases", i, "lease"))
	}
	// The pending acquirer holds the internal lock, has made its lease node
	// and waits for a lease to free (a children watch on leases/).
	pending := connect(t)
	headLock := create(pending, "locks", 2, "lock")
	pendingLease := create(pending, "leases", 2, "lease")
	if _, _, _, err := pending.ChildrenW(path + "/leases"); err != nil {
		t.Fatal(err)
	}
	// The next contender queues on the internal lock, watching its
	// predecessor there as Curator's InterProcessMutex does.
	queued := connect(t)
	queuedLock := create(queued, "locks", 3, "lock")
	if _, _, _, err := queued.GetW(path + "/locks/" + headLock); err != nil {
		t.Fatal(err)
	}

	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("five queue nodes", nodeCount(5))
	tb.until("the first lease holds", node(leases[0], "holding"))
	tb.until("the second lease holds", node(leases[1], "holding"))
	tb.until("the pending lease waits", node(pendingLease, "waiting"))
	tb.until("the internal lock's holder is part of the pending acquirer", node(headLock, "part"))
	tb.until("the queued contender waits", node(queuedLock, "waiting"))
	tb.until("rule arrow queued → lock holder", arrow(queuedLock, headLock, "rule"))
	tb.until("the queued contender's watch, confirmed", arrow(queuedLock, headLock, "actual")+` && `+arrow(queuedLock, headLock, "actual")+`.dataset.edge === 'confirmed'`)
	// Four contenders: two hold, two wait (the pending acquirer counted once).
	tb.until("two holding, two waiting", `document.querySelector('[data-stat=holding] b').textContent === '2' && document.querySelector('[data-stat=waiting] b').textContent === '2'`)
	tb.until("the lock node's state names its lease node, in the table", fmt.Sprintf(`document.querySelector('tr[data-row=%s]').textContent.includes(%s)`, jsString(headLock), jsString("holds the internal lock for "+pendingLease)))
	tb.until("the lease limit, inferred", `document.querySelector('[data-stat=leases]') && document.querySelector('[data-stat=leases]').textContent.includes('2 (inferred)')`)
	tb.until("the queued contender in the table", fmt.Sprintf(`!!document.querySelector('tr[data-row=%s]')`, jsString(queuedLock)))
	tb.until("the pending acquirer waits for a free lease, in the table", fmt.Sprintf(`document.querySelector('tr[data-row=%s]').textContent.includes('a free lease')`, jsString(pendingLease)))
	if !eval[bool](tb, `document.getElementById('alerts').hidden`) {
		t.Errorf("alerts shown: %s", eval[string](tb, `document.getElementById('alerts').textContent`))
	}
	// The lock as it was a moment ago is the same: its answer field by
	// field (the lease limit and the parent's watchers among them), and
	// as drawn, each node in its folder, the queued contender's watch
	// confirmed, no alert.
	checkPastIsLive(t, srv, "zookeeper", path)
	details := func(name string) string {
		tb.run(fmt.Sprintf(`document.querySelector('#lane [data-node=%s]').dispatchEvent(new MouseEvent('click', { bubbles: true }))`, jsString(name)))
		tb.until("the details of "+name, fmt.Sprintf(`document.getElementById('details').textContent.includes(%s)`, jsString(name)))
		return eval[string](tb, `document.getElementById('details').textContent`)
	}
	live := details(queuedLock)
	at := eval[int64](tb, `Date.now()`)
	tb.open(srv.URL + "/lock?path=" + path + "&at=" + strconv.FormatInt(at, 10))
	tb.until("the status says which moment", `document.getElementById('replay-status').textContent.includes('as it was at')`)
	tb.until("a past moment: five queue nodes", nodeCount(5))
	tb.until("a past moment: the queued contender's watch, confirmed", arrow(queuedLock, headLock, "actual")+` && `+arrow(queuedLock, headLock, "actual")+`.dataset.edge === 'confirmed'`)
	if past := details(queuedLock); !strings.Contains(past, path+"/locks/"+queuedLock) || !strings.Contains(live, path+"/locks/"+queuedLock) {
		t.Errorf("the queued contender's details name its path in locks/: live %q, at a past moment %q", live, past)
	}
	if !eval[bool](tb, `document.getElementById('alerts').hidden`) {
		t.Errorf("a past moment: alerts shown: %s", eval[string](tb, `document.getElementById('alerts').textContent`))
	}
	if c := tb.console.String(); c != "" {
		t.Errorf("browser console not empty:\n%s", c)
	}
}
