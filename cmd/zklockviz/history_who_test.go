package main

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// holderOf is the one holding node of s, or a zero Node.
func holderOf(s lockqueue.Snapshot) lockqueue.Node {
	for _, n := range s.Nodes {
		if n.Holding {
			return n
		}
	}
	return lockqueue.Node{}
}

// nodeNamed is the node of s named name, or a zero Node.
func nodeNamed(s lockqueue.Snapshot, name string) lockqueue.Node {
	if i := slices.IndexFunc(s.Nodes, func(n lockqueue.Node) bool { return n.Name == name }); i >= 0 {
		return s.Nodes[i]
	}
	return lockqueue.Node{}
}

// getText is the body of GET url, failing the test unless it is 200.
func getText(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", u, resp.StatusCode, err, b)
	}
	return string(b)
}

// stopServe interrupts a serve and waits until it has exited, its data
// directory free for another.
func stopServe(t *testing.T, s *server) {
	t.Helper()
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(waitTimeout):
		t.Fatal("serve did not stop on an interrupt")
	}
}

// Three kazoo contenders write their names as their nodes' data. At a
// moment when A held, the history answers what the live view showed then:
// A's node holding with A's data and A's session, B and C waiting with
// theirs; the history's lives, the figures' longest holds and the
// incident export name the holder too.
func TestHistoryNamesWhoHeld(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux's")
	}
	zks := sharedZK(t)
	const lock = "/hist/who"
	srv := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", lock,
		"--data-dir", t.TempDir(), "--poll", "250ms", "--log-level", "warn")
	api := historyAPI{t: t, base: srv.url}
	start := time.Now()
	api.waitLive(lock, "the lock read", func(s lockqueue.Snapshot) bool { return s.Live() })

	c := kazooClient(t, zks.Addr(), lock, 10*time.Second, "lock=A", "lock=B", "lock=C")
	names := map[string]string{} // node -> contender
	for i, who := range []string{"A", "B", "C"} {
		w, _ := c.expect(t, "queued "+string(rune('0'+i))+" ")
		names[path.Base(w[2])] = who
	}
	c.expect(t, "acquired 0 ")
	var live lockqueue.Snapshot
	aHolds := api.waitLive(lock, "A holding, B and C waiting", func(s lockqueue.Snapshot) bool {
		live = s
		return len(s.Nodes) == 3 && names[holderOf(s).Name] == "A"
	})
	time.Sleep(time.Second) // a hold long enough to be the longest
	c.send(t, "release 0")
	c.expect(t, "acquired 1 ")
	api.waitLive(lock, "B holding", func(s lockqueue.Snapshot) bool { return names[holderOf(s).Name] == "B" })
	c.send(t, "release 1")
	c.expect(t, "acquired 2 ")
	api.waitLive(lock, "C holding", func(s lockqueue.Snapshot) bool { return names[holderOf(s).Name] == "C" })

	past := api.at(lock, aHolds)
	if len(past.Nodes) != 3 {
		t.Fatalf("at A's hold: %d nodes, want 3: %+v", len(past.Nodes), past.Nodes)
	}
	for _, want := range live.Nodes {
		got := nodeNamed(past, want.Name)
		if got.Data != names[want.Name] || got.Session != want.Session || got.Holding != want.Holding || got.Session == "" {
			t.Errorf("at A's hold, node %s: data %q session %q holding %v; live it was data %q session %q holding %v",
				want.Name, got.Data, got.Session, got.Holding, want.Data, want.Session, want.Holding)
		}
	}
	if past.Cluster != zks.Addr() {
		t.Errorf("the moment's cluster %q, want the ZooKeeper server %q", past.Cluster, zks.Addr())
	}

	var hist HistoryResponseForTest
	api.get("/api/v1/lock/history", lock, map[string]string{"from": ms(start), "to": ms(time.Now())}, &hist)
	aNode := holderOf(live).Name
	if i := slices.IndexFunc(hist.Nodes, func(l history.Life) bool { return l.Node == aNode }); i < 0 ||
		hist.Nodes[i].Data != "A" || hist.Nodes[i].Client != holderOf(live).Session {
		t.Errorf("the history's lives do not name A's node %s with its data and session: %+v", aNode, hist.Nodes)
	}
	if hist.Cluster != zks.Addr() {
		t.Errorf("the history's cluster %q, want %q", hist.Cluster, zks.Addr())
	}

	var st history.Stats
	api.get("/api/v1/lock/stats", lock, map[string]string{"from": ms(start), "to": ms(time.Now())}, &st)
	if len(st.LongestHolds) == 0 || st.LongestHolds[0].Node != aNode || st.LongestHolds[0].Data != "A" ||
		st.LongestHolds[0].Client != holderOf(live).Session {
		t.Errorf("longest holds %+v: want A's node %s first, with its data and session", st.LongestHolds, aNode)
	}

	lockPage := getText(t, srv.url+"/lock?"+url.Values{"path": {lock}, "at": {ms(aHolds)}}.Encode())
	if want := "as it was at " + aHolds.UTC().Format("2006-01-02 15:04:05 UTC") + " on cluster " + zks.Addr(); !strings.Contains(lockPage, want) {
		t.Errorf("the lock page at A's hold does not say %q", want)
	}

	q := url.Values{"path": {lock}, "from": {ms(start)}, "to": {ms(time.Now())}}
	page := getText(t, srv.url+"/api/v1/lock/export?"+q.Encode())
	for _, want := range []string{aNode + ` (&#34;A&#34; · ` + holderOf(live).Session + `)`, "cluster " + zks.Addr()} {
		if !strings.Contains(page, want) {
			t.Errorf("the incident export does not say %q", want)
		}
	}
}

// HistoryResponseForTest is the part of /api/v1/lock/history the tests
// read.
type HistoryResponseForTest struct {
	Cluster string
	Events  []history.Event
	Nodes   []history.Life
}

// Two ZooKeeper servers each have a /locks/x. serve watches the first,
// stops, and a second serve with the same data directory watches the
// second: asked for a moment when only the first was recorded, it has no
// history of its own cluster's lock rather than the first's nodes; the
// locks with a history are listed once per cluster, and the first's is
// answered when asked for by its cluster.
func TestHistoryKeepsClustersApart(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux's")
	}
	prod, staging := sharedZK(t), zktest.ForTest(t)
	const lock = "/hist/clusters/x"
	dir := t.TempDir()
	args := func(zk string) []string {
		return []string{"--zk", zk, "--addr", "127.0.0.1:0", "--watch", lock, "--data-dir", dir, "--poll", "250ms", "--log-level", "warn"}
	}

	first := startServe(t, args(prod.Addr())...)
	api := historyAPI{t: t, base: first.url}
	c := kazooClient(t, prod.Addr(), lock, 10*time.Second, "lock=production")
	w, _ := c.expect(t, "acquired 0 ")
	prodNode := path.Base(w[2])
	prodHolds := api.waitLive(lock, "production's holder", func(s lockqueue.Snapshot) bool { return holderOf(s).Name == prodNode })
	time.Sleep(200 * time.Millisecond) // the next moment asked for is after the hold was recorded
	stopServe(t, first)

	second := startServe(t, args(staging.Addr())...)
	api = historyAPI{t: t, base: second.url}
	api.waitLive(lock, "staging's lock read", func(s lockqueue.Snapshot) bool { return s.Live() })
	var snap lockqueue.Snapshot
	if code := api.get("/api/v1/lock", lock, map[string]string{"at": ms(prodHolds)}, &snap); code == http.StatusOK {
		t.Errorf("staging at a moment only production was recorded: %d with nodes %+v of cluster %q; want no history", code, snap.Nodes, snap.Cluster)
	}
	var hist HistoryResponseForTest
	api.get("/api/v1/lock/history", lock, map[string]string{"from": ms(prodHolds.Add(-time.Minute)), "to": ms(time.Now())}, &hist)
	if slices.ContainsFunc(hist.Events, func(e history.Event) bool { return e.Node == prodNode }) || hist.Cluster != staging.Addr() {
		t.Errorf("staging's history (cluster %q) has production's node %s: %+v", hist.Cluster, prodNode, hist.Events)
	}

	var locks struct{ Locks []history.Lock }
	getJSON(t, second.url+"/api/v1/history/locks", &locks)
	var clusters []string
	for _, l := range locks.Locks {
		if l.Name == lock {
			clusters = append(clusters, l.Cluster)
		}
	}
	if want := []string{prod.Addr(), staging.Addr()}; !slices.Equal(clusters, slices.Sorted(slices.Values(want))) {
		t.Errorf("%s listed with clusters %q, want %q", lock, clusters, want)
	}

	if code := api.get("/api/v1/lock", lock, map[string]string{"at": ms(prodHolds), "cluster": prod.Addr()}, &snap); code != http.StatusOK ||
		holderOf(snap).Name != prodNode || holderOf(snap).Data != "production" || snap.Cluster != prod.Addr() {
		t.Errorf("production's lock asked for by its cluster: %d, cluster %q, holder %+v; want %s holding with data production",
			code, snap.Cluster, holderOf(snap), prodNode)
	}
}

// ZKLOCKVIZ_CLUSTER (--cluster) names the cluster for every service: the
// history's moments and locks carry the name, and so does every metric,
// so two zklockviz scraped by one Prometheus stay apart.
func TestClusterNamed(t *testing.T) {
	zks := sharedZK(t)
	const lock = "/hist/named"
	t.Setenv("ZKLOCKVIZ_CLUSTER", "payments-prod")
	srv := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", lock,
		"--data-dir", t.TempDir(), "--poll", "250ms", "--log-level", "warn")
	api := historyAPI{t: t, base: srv.url}
	seen := api.waitLive(lock, "the lock read", func(s lockqueue.Snapshot) bool { return s.Live() && s.Cluster == "payments-prod" })
	if snap := api.at(lock, seen); snap.Cluster != "payments-prod" {
		t.Errorf("the moment's cluster %q, want payments-prod", snap.Cluster)
	}
	var locks struct{ Locks []history.Lock }
	getJSON(t, srv.url+"/api/v1/history/locks", &locks)
	if !slices.ContainsFunc(locks.Locks, func(l history.Lock) bool { return l.Name == lock && l.Cluster == "payments-prod" }) {
		t.Errorf("locks %+v: want %s of payments-prod", locks.Locks, lock)
	}
	exposed := getText(t, srv.url+"/metrics")
	for _, want := range []string{
		`zklockviz_lock_queue_length{cluster="payments-prod",path="/hist/named",service="zookeeper"} 0`,
		`zklockviz_history_events_total{cluster="payments-prod"}`,
	} {
		if !strings.Contains(exposed, want) {
			t.Errorf("/metrics does not have %s", want)
		}
	}
}
