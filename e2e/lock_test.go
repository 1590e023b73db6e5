package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/proxy"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/views"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// gozkLock takes go-zookeeper's own Lock on path in a session of its own. A
// waiter blocks inside Lock, watching its predecessor, until the holder goes.
type gozkLock struct {
	conn *zk.Conn
	lock *zk.Lock
	got  chan error
}

func takeLock(t *testing.T, path, data string) *gozkLock {
	t.Helper()
	return takeLockVia(t, connect(t), path, data)
}

// takeLockVia is takeLock in the session of c.
func takeLockVia(t *testing.T, c *zk.Conn, path, data string) *gozkLock {
	t.Helper()
	l := &gozkLock{conn: c, lock: zk.NewLock(c, path, zk.WorldACL(zk.PermAll)), got: make(chan error, 1)}
	go func() { l.got <- l.lock.LockWithData([]byte(data)) }()
	return l
}

// queueNames lists the lock's children in sequence order, as ZooKeeper has
// them (the test's own view, independent of the page).
func queueNames(t *testing.T, c *zk.Conn, path string) []string {
	t.Helper()
	kids, _, err := c.Children(path)
	if err != nil {
		t.Fatalf("children of %s: %v", path, err)
	}
	slices.SortFunc(kids, func(a, b string) int { return strings.Compare(a[len(a)-10:], b[len(b)-10:]) })
	return kids
}

func node(name, state string) string {
	return fmt.Sprintf(`document.querySelector('#lane [data-node=%s][data-state=%s]')`, jsString(name), jsString(state))
}

func arrow(from, to, kind string) string {
	return fmt.Sprintf(`document.querySelector('#lane [data-from=%s][data-to=%s][data-kind=%s]')`, jsString(from), jsString(to), jsString(kind))
}

func nodeCount(n int) string {
	return fmt.Sprintf(`document.querySelectorAll('#lane [data-node]').length === %d`, n)
}

// An outside client (go-zookeeper's Lock, one session per locker) changes the
// queue; the open page follows without a reload: holders, the recipe's arrows,
// the watches the server reports, and the table.
func TestLockViewFollowsOutsideClients(t *testing.T) {
	need(t)
	const path = "/e2e/live"
	admin := connect(t)
	ensurePath(t, admin, path)
	srv := startServer(t, "--watch", path)

	first := takeLock(t, path, "first")
	if err := <-first.got; err != nil {
		t.Fatalf("first lock: %v", err)
	}
	second := takeLock(t, path, "second")
	third := takeLock(t, path, "third")

	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("three queue nodes", nodeCount(3))
	q := queueNames(t, admin, path)
	if len(q) != 3 {
		t.Fatalf("ZooKeeper has %d children, want 3: %v", len(q), q)
	}
	tb.until("the first holds", node(q[0], "holding"))
	tb.until("the second waits", node(q[1], "waiting"))
	tb.until("the third waits", node(q[2], "waiting"))
	tb.until("rule arrow second → first", arrow(q[1], q[0], "rule"))
	tb.until("rule arrow third → second", arrow(q[2], q[1], "rule"))
	// go-zookeeper's waiters watch their predecessor with GetW: the server's
	// watch table shows it, and the edge is confirmed.
	tb.until("second watches first", arrow(q[1], q[0], "actual")+`&& `+arrow(q[1], q[0], "actual")+`.dataset.edge === 'confirmed'`)
	tb.until("third watches second", arrow(q[2], q[1], "actual")+`&& `+arrow(q[2], q[1], "actual")+`.dataset.edge === 'confirmed'`)
	tb.until("table row of the holder", fmt.Sprintf(`document.querySelector('tr[data-row=%s]').dataset.state === 'holding'`, jsString(q[0])))
	tb.until("holder's data labelled", fmt.Sprintf(`document.querySelector('#lane [data-node=%s]').textContent.includes('first')`, jsString(q[0])))
	tb.run(`window.__sameDocument = true`)

	// A fourth locker joins.
	fourth := takeLock(t, path, "fourth")
	tb.until("four queue nodes", nodeCount(4))
	q = queueNames(t, admin, path)
	tb.until("rule arrow fourth → third", arrow(q[3], q[2], "rule"))

	// The holder releases: the second acquires.
	if err := first.lock.Unlock(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	if err := <-second.got; err != nil {
		t.Fatalf("second lock: %v", err)
	}
	tb.until("three queue nodes after the release", nodeCount(3))
	tb.until("the second holds", node(q[1], "holding"))
	tb.until("the first is gone", fmt.Sprintf(`!document.querySelector('#lane [data-node=%s]')`, jsString(q[0])))

	// An outside client deletes a waiter's node by hand.
	if err := admin.Delete(path+"/"+q[3], -1); err != nil {
		t.Fatalf("delete %s: %v", q[3], err)
	}
	tb.until("the deleted waiter is gone", nodeCount(2))
	tb.until("the third still waits for the second", arrow(q[2], q[1], "rule"))
	if !eval[bool](tb, `window.__sameDocument === true`) {
		t.Error("the page reloaded; it should follow changes in place")
	}

	second.lock.Unlock()
	if err := <-third.got; err != nil {
		t.Fatalf("third lock: %v", err)
	}
	tb.until("the third holds", node(q[2], "holding"))
	third.lock.Unlock()
	tb.until("empty queue", nodeCount(0))
	_ = fourth
}

// Stopping ZooKeeper raises the not-live banner; starting it again clears it.
func TestBannerWhenZooKeeperStops(t *testing.T) {
	need(t)
	const path = "/e2e/banner"
	zks := zktest.ForTest(t)
	admin := connectTo(t, zks)
	ensurePath(t, admin, path)
	l := takeLockVia(t, connectTo(t, zks), path, "holder")
	if err := <-l.got; err != nil {
		t.Fatal(err)
	}
	srv := startServerOn(t, zks, "--watch", path)
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("live", `document.body.dataset.live === 'true' && document.getElementById('banner').hidden`)
	tb.until("the holder", nodeCount(1))

	if err := zks.Stop(); err != nil {
		t.Fatalf("stop ZooKeeper: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ZooKeeper's output since its restart:\n%s", zks.Output())
		}
	})
	tb.until("the banner", `!document.getElementById('banner').hidden && document.getElementById('banner').textContent.includes('NOT LIVE') && document.body.dataset.live === 'false'`)
	if txt := eval[string](tb, `document.getElementById('banner').textContent`); !strings.Contains(txt, "ZooKeeper") {
		t.Errorf("banner %q does not say ZooKeeper is the trouble", txt)
	}
	tb.until("the last known queue stays on screen", nodeCount(1))

	if err := zks.Start(t.Context()); err != nil {
		t.Fatalf("restart ZooKeeper: %v", err)
	}
	tb.until("the banner cleared", `document.getElementById('banner').hidden && document.body.dataset.live === 'true'`)
}

// What the lane draws of each node is the server's (views.LaneOf): its
// state, the table's, and its three lines (the short name, the data, the
// session), with a badge for a node no session owns. The browser has no
// copy of the rules.
func TestLaneLinesMatchServer(t *testing.T) {
	need(t)
	const path = "/e2e/shortnames"
	admin := connect(t)
	ensurePath(t, admin, path)
	names := []string{
		"R_0000000001", "W_0000000012",
		"_c_8f3a1b2c-1111-2222-3333-444455556666-__READ__0000000003",
		"_c_8f3a1b2c-1111-2222-3333-444455556666-__WRIT__0000000004",
		"_c_8f3a1b2c-1111-2222-3333-444455556666-lock-0000000005",
		"_c_8f3a1b2c-1111-2222-3333-444455556666-lease-0000000006",
		"_c_0123456789abcdef0123456789abcdef-lock-0000000007",
		"0123456789abcdef0123456789abcdef__lock__0000000008",
		"0123456789abcdef0123456789abcdef__rlock__0000000009",
		"0123456789abcdef0123456789abcdef",
		"x-72057594037927936-0000000010",
		"x-0123456789abcdef-0000000011",
		"a5f2-lock-0000000012", "guid-read-0000000013", "guid-write-0000000014",
		"W_-2147483648", "W_-000000005", "some-foreign-child-with-a-long-name",
		"ünïcödé-node-with-long-name-0000000015",
	}
	data := map[string][]byte{
		"R_0000000001": []byte("LOCK1"), "W_0000000012": []byte("host\tа.example.org  pid 4242 and more"),
		"a5f2-lock-0000000012": {0, 1, 2, 0xff},
	}
	for _, n := range names {
		if _, err := admin.Create(path+"/"+n, data[n], zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
	}
	if _, err := admin.Create(path+"/P_0000000016", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create a persistent node: %v", err)
	}
	t.Cleanup(func() { _ = admin.Delete(path+"/P_0000000016", -1) })
	names = append(names, "P_0000000016")
	srv := startServer(t, "--watch", path)
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("every node drawn", nodeCount(len(names)))

	// The sequence each node's label is made from is the server's reading.
	var snap lockqueue.Snapshot
	if err := json.Unmarshal([]byte(get(t, srv.URL+"/api/v1/lock?path="+path)), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Nodes) != len(names) {
		t.Fatalf("the server reads %d nodes, want %d", len(snap.Nodes), len(names))
	}
	for _, n := range snap.Nodes {
		want := views.LaneOf(&n, snap.UpdatedAt).Lines
		lines := fmt.Sprintf(`JSON.stringify([...document.querySelectorAll('#lane [data-node=%s] > :is(text.label.name, text.label.data, text.label.session)')].map((t) => t.textContent))`, jsString(n.Name))
		wantJSON, _ := json.Marshal(want)
		tb.until(fmt.Sprintf("%s's lines %q", n.Name, want), lines+` === `+jsString(string(wantJSON)))
		state := fmt.Sprintf(`document.querySelector('#lane [data-node=%s]').dataset.state`, jsString(n.Name))
		row := fmt.Sprintf(`(document.querySelector('#table tr[data-row=%s]') || {dataset: {}}).dataset.state`, jsString(n.Name))
		tb.until(fmt.Sprintf("%s's state in the lane, the table's", n.Name), state+` === `+row)
	}
	if got := eval[string](tb, `document.querySelector('#lane [data-node="some-foreign-child-with-a-long-name"]').dataset.state`); got != "foreign" {
		t.Errorf("a foreign child's state in the lane: %q, want foreign", got)
	}
	if !eval[bool](tb, `!!document.querySelector('#lane [data-node="P_0000000016"] .badge.persistent') && !document.querySelector('#lane [data-node="R_0000000001"] .badge.persistent')`) {
		t.Error("the persistent node has no badge, or an ephemeral one has")
	}
	for name, want := range map[string][]string{
		"R_0000000001": {"R_0000000001", "“LOCK1”"}, "W_0000000012": {"W_0000000012", "“host а.example…”"},
		"a5f2-lock-0000000012": {"a5f2…lock#12", "‹binary›"}, "P_0000000016": {"P_0000000016", "—", "persistent"},
	} {
		i := slices.IndexFunc(snap.Nodes, func(n lockqueue.Node) bool { return n.Name == name })
		if got := views.LaneOf(&snap.Nodes[i], snap.UpdatedAt).Lines; !slices.Equal(got[:len(want)], want) {
			t.Errorf("%s's lines %q, want them to begin %q", name, got, want)
		}
	}
}

// A holder cut off the network (seed 004: a GC pause, a partition) keeps its
// node until its session expires: the page marks it a zombie and counts down;
// when ZooKeeper expires the session, the next waiter holds.
func TestZombieHolder(t *testing.T) {
	need(t)
	const path = "/e2e/zombie"
	admin := connect(t)
	ensurePath(t, admin, path)
	px, err := proxy.New(env.zk.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	// The holder talks to ZooKeeper through the proxy, with a session long
	// enough to see it as a zombie for a while.
	hc, events, err := zk.Connect([]string{px.Addr()}, 8*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.Close)
	for hc.State() != zk.StateHasSession {
		<-events
	}
	holder := zk.NewLock(hc, path, zk.WorldACL(zk.PermAll))
	if err := holder.LockWithData([]byte("paused")); err != nil {
		t.Fatal(err)
	}
	next := takeLock(t, path, "next")
	srv := startServer(t, "--watch", path)
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("two nodes", nodeCount(2))
	q := queueNames(t, admin, path)
	tb.until("holder live", node(q[0], "holding")+` && !`+node(q[0], "holding")+`.classList.contains('zombie')`)

	px.Cut()
	tb.until("zombie marked", node(q[0], "holding")+`.classList.contains('zombie')`)
	tb.until("zombie alert", `document.querySelector('#alerts [data-kind=zombie]')`)
	tb.until("countdown", fmt.Sprintf(`/zombie · [0-9.]+s left/.test(document.querySelector('#lane [data-node=%s] .time').textContent)`, jsString(q[0])))
	// At a past moment the zombie and its alert, as live (its session's
	// time left is a lease time, which the history does not keep).
	checkPastIsLive(t, srv, "zookeeper", path)
	if err := <-next.got; err != nil {
		t.Fatalf("next lock after expiry: %v", err)
	}
	tb.until("the next waiter holds", node(q[1], "holding"))
	tb.until("the zombie is gone", nodeCount(1))
}

// A lock view opened on a path nobody watches says it is not watched (not a
// red NOT LIVE: nothing is stale), offers to watch it and opens no socket the
// server would refuse (the harness fails on a console error); once watched,
// the page goes live by itself.
func TestWatchFromLockView(t *testing.T) {
	need(t)
	const path = "/e2e/later"
	admin := connect(t)
	ensurePath(t, admin, path)
	srv := startServer(t)
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("the offer", `document.getElementById('watch-this')`)
	if got := eval[string](tb, `document.getElementById('not-watched').textContent`); !strings.Contains(got, "Not watched") {
		t.Errorf("the page does not say the path is not watched: %q", got)
	}
	if got := eval[string](tb, `document.body.dataset.live + ' ' + document.body.dataset.socket`); got != "false none" {
		t.Errorf("an unwatched path: live and socket %q, want %q", got, "false none")
	}
	if shown := eval[string](tb, `document.getElementById('banner').hidden ? '' : document.getElementById('banner').textContent`); shown != "" {
		t.Errorf("an unwatched path shows the banner %q", shown)
	}
	tb.do("watch it", chromedp.Click(chromedp.ID("watch-this")))
	l := takeLock(t, path, "late")
	if err := <-l.got; err != nil {
		t.Fatal(err)
	}
	tb.until("live", `document.body.dataset.live === 'true'`)
	tb.until("the holder", `document.querySelector('#lane [data-state=holding]')`)
}

// Watched from the lock view, a page whose socket never opens says NOT LIVE
// (connecting) at once: the words for the socket's states come with the
// watch, not with a change the socket would have brought.
func TestWatchFromLockViewSocketNeverOpens(t *testing.T) {
	need(t)
	const path = "/e2e/never"
	admin := connect(t)
	ensurePath(t, admin, path)
	srv := startServer(t)
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("the offer", `document.getElementById('watch-this')`)
	// A socket that never connects nor closes, as behind a proxy that
	// holds the upgrade.
	tb.run(`window.WebSocket = class { constructor() { this.readyState = 0; } close() {} send() {} addEventListener() {} };`)
	tb.do("watch it", chromedp.Click(chromedp.ID("watch-this")))
	tb.until("the connecting banner", `!document.getElementById('banner').hidden && document.getElementById('banner').textContent.startsWith('NOT LIVE — connecting')`)
	if got := eval[string](tb, `document.body.dataset.live`); got != "false" {
		t.Errorf("live %q with no socket, want false", got)
	}
}
