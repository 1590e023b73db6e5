package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal/etcdtest"
	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/proxy"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"/locks/orders", true},
		{"mylock", true},
		{"/locks/a:b", true},
		{"", false},
		{"/locks/orders/", false},
		{"/locks/\x00x", false},
		{"bad\xffutf8", false},
		{"/" + strings.Repeat("x", 2000), false},
	} {
		err := etcdlock.CheckName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, lockservice.ErrBadName) {
			t.Errorf("CheckName(%q) = %v, not an ErrBadName", tc.name, err)
		}
	}
}

// Three contenders, Go concurrency.Mutex clients and `etcdctl lock`
// processes, queue in turn; each release order leaves the queue the
// recipe says, read back with holder, order, edges and leases.
func TestQueueAndReleaseOrders(t *testing.T) {
	srv := etcdtest.ForTest(t)
	for i, tc := range []struct {
		name    string
		release []int // contenders released, by place in the queue
		after   []string
	}{
		{"holder first", []int{0, 1}, []string{"b:H c>b", "c:H"}},
		{"last waiter first", []int{2, 0}, []string{"a:H b>a", "b:H"}},
		{"middle waiter first", []int{1, 0}, []string{"a:H c>a", "c:H"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := fmt.Sprintf("/locks/release%d", i)
			_, f := startReader(t, etcdlock.Config{Endpoints: []string{srv.Endpoint()}, Prefixes: []string{prefix}})
			empty := f.waitFor(t, prefix, "a first read", func(s lockqueue.Snapshot) bool { return s.Live() })
			if len(empty.Nodes) != 0 || len(empty.Alerts) != 0 || empty.Service != "etcd" {
				t.Fatalf("a free lock: %s", show(empty))
			}
			a := goMutex(t, srv.Endpoint(), prefix, 10)
			f.waitFor(t, prefix, "a's key", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 1 })
			b := etcdctlLock(t, f, srv.Endpoint(), prefix, 10, f.latestOf(prefix))
			c := goMutex(t, srv.Endpoint(), prefix, 10)
			cs := []*contender{a, b, c}
			label := map[string]string{a.key: "a", b.key: "b", c.key: "c"}
			s := f.waitFor(t, prefix, "a holding, b and c queued, leases read", func(s lockqueue.Snapshot) bool {
				return queue(s, label) == "a:H b>a c>b" && s.Nodes[2].LeaseTTLMs() > 0
			})
			checkHealthy(t, s)
			for _, n := range s.Nodes {
				if n.Order() <= 0 || n.Client() != n.LeaseID() || n.LeaseTTLMs() != 10_000 || n.LeaseLeftMs() <= 0 || n.LeaseLeftMs() > 10_000 {
					t.Errorf("node %s: order %d client %q lease %q ttl %d left %d", label[n.Name], n.Order(), n.Client(), n.LeaseID(), n.LeaseTTLMs(), n.LeaseLeftMs())
				}
				if n.WaitsFor != "" && n.WaitsForSource() != lockqueue.ByRule {
					t.Errorf("node %s: edge vouched by %q, want the rule", label[n.Name], n.WaitsForSource())
				}
			}
			if !(s.Nodes[0].Order() < s.Nodes[1].Order() && s.Nodes[1].Order() < s.Nodes[2].Order()) {
				t.Errorf("not in create-revision order: %s", show(s))
			}
			for step, idx := range tc.release {
				cs[idx].release()
				want := tc.after[step]
				f.waitFor(t, prefix, want, func(s lockqueue.Snapshot) bool { return queue(s, label) == want && s.Live() })
			}
		})
	}
}

// checkHealthy fails on any alert: a queue whose clients renew their
// leases raises none.
func checkHealthy(t *testing.T, s lockqueue.Snapshot) {
	t.Helper()
	if len(s.Alerts) != 0 || !s.Live() {
		t.Errorf("a healthy queue: %s", show(s))
	}
}

func (f *feed) latestOf(name string) lockqueue.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latest[name]
}

// An `etcdctl lock` holder killed with SIGKILL never unlocks: its key
// stays until its lease runs out, then the next waiter holds.
func TestKilledHolderLeaseExpires(t *testing.T) {
	srv := etcdtest.ForTest(t)
	const prefix = "/locks/killed"
	_, f := startReader(t, etcdlock.Config{Endpoints: []string{srv.Endpoint()}, Prefixes: []string{prefix}})
	f.waitFor(t, prefix, "a first read", func(s lockqueue.Snapshot) bool { return s.Live() })
	a := etcdctlLock(t, f, srv.Endpoint(), prefix, 3, f.latestOf(prefix))
	b := goMutex(t, srv.Endpoint(), prefix, 30)
	label := map[string]string{a.key: "a", b.key: "b"}
	f.waitFor(t, prefix, "a holding, b waiting", func(s lockqueue.Snapshot) bool { return queue(s, label) == "a:H b>a" })
	a.kill()
	s := f.waitFor(t, prefix, "b holding once a's lease ran out", func(s lockqueue.Snapshot) bool { return queue(s, label) == "b:H" })
	if !s.Live() {
		t.Errorf("after the hand-off: %s", show(s))
	}
	<-b.locked // the client agrees
}

// A holder cut off from etcd (a long GC pause, a partition) stops
// renewing: the lease-expiring alert shows while its time left runs down,
// then the lease expires, its key goes and the waiter holds.
func TestPausedHolderAlert(t *testing.T) {
	srv := etcdtest.ForTest(t)
	const prefix = "/locks/paused"
	p, err := proxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	_, f := startReader(t, etcdlock.Config{Endpoints: []string{srv.Endpoint()}, Prefixes: []string{prefix}})
	a := goMutex(t, "http://"+p.Addr(), prefix, 6)
	b := goMutex(t, srv.Endpoint(), prefix, 30)
	label := map[string]string{a.key: "a", b.key: "b"}
	s := f.waitFor(t, prefix, "a holding with its lease read", func(s lockqueue.Snapshot) bool {
		return queue(s, label) == "a:H b>a" && s.Nodes[0].LeaseTTLMs() > 0 && s.Nodes[1].LeaseTTLMs() > 0
	})
	checkHealthy(t, s)
	p.Cut()
	s = f.waitFor(t, prefix, "the lease-expiring alert on a", func(s lockqueue.Snapshot) bool {
		return slices.Contains(alertKinds(s), lockqueue.AlertLeaseExpiring)
	})
	if al := s.Alerts[slices.Index(alertKinds(s), lockqueue.AlertLeaseExpiring)]; !slices.Equal(al.Nodes, []string{a.key}) {
		t.Errorf("alert on %v, want a (%s)", al.Nodes, a.key)
	}
	if left := s.Nodes[0].LeaseLeftMs(); left >= 3000 {
		t.Errorf("alert with %d ms left of 6000", left)
	}
	// etcd #10811: the lock passed on by expiry while a's client, only
	// cut off, may still believe it holds. The alert says so until b
	// lets go.
	s = f.waitFor(t, prefix, "b holding after a's lease expired", func(s lockqueue.Snapshot) bool { return queue(s, label) == "b:H" })
	if kinds := alertKinds(s); !slices.Equal(kinds, []string{lockqueue.AlertHolderExpired}) || s.Alerts[0].Nodes[0] != a.key {
		t.Errorf("after the expiry: %s", show(s))
	}
	c := goMutex(t, srv.Endpoint(), prefix, 30)
	label[c.key] = "c"
	f.waitFor(t, prefix, "c queued behind b", func(s lockqueue.Snapshot) bool { return queue(s, label) == "b:H c>b" })
	b.release()
	s = f.waitFor(t, prefix, "c holding", func(s lockqueue.Snapshot) bool { return queue(s, label) == "c:H" })
	checkHealthy(t, s)
}

// The recipes' RWMutex: readers share until a writer's key; a writer
// waits for the key before it, a reader behind a writer for that writer.
func TestRWMutex(t *testing.T) {
	srv := etcdtest.ForTest(t)
	const prefix = "/locks/rw"
	_, f := startReader(t, etcdlock.Config{Endpoints: []string{srv.Endpoint()}, Prefixes: []string{prefix}})
	cli := newClient(t, srv.Endpoint())
	var label = map[string]string{}
	for i, kind := range []string{"r1", "r2", "w1", "r3"} {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		m := recipe.NewRWMutex(s, prefix)
		if kind[0] == 'r' {
			go m.RLock()
		} else {
			go m.Lock()
		}
		snap := f.waitFor(t, prefix, kind+"'s key", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == i+1 })
		label[snap.Nodes[i].Name] = kind
	}
	s := f.waitFor(t, prefix, "two readers holding", func(s lockqueue.Snapshot) bool {
		return queue(s, label) == "r1:H r2:H w1>r2 r3>w1"
	})
	if s.Recipe != lockqueue.EtcdRWMutex || s.Nodes[2].Mode != lockqueue.Write || s.Nodes[3].Mode != lockqueue.Read {
		t.Errorf("recipe and modes: %s", show(s))
	}
	checkHealthy(t, s)
}

// A key put without a lease under the prefix raises the no-lease alert.
func TestKeyWithoutLease(t *testing.T) {
	srv := etcdtest.ForTest(t)
	const prefix = "/locks/nolease"
	_, f := startReader(t, etcdlock.Config{Endpoints: []string{srv.Endpoint()}, Prefixes: []string{prefix}})
	cli := newClient(t, srv.Endpoint())
	if _, err := cli.Put(context.Background(), prefix+"/1ee7", ""); err != nil {
		t.Fatal(err)
	}
	s := f.waitFor(t, prefix, "the no-lease alert", func(s lockqueue.Snapshot) bool { return len(s.Alerts) > 0 })
	if kinds := alertKinds(s); !slices.Equal(kinds, []string{lockqueue.AlertNoLease}) || !s.Nodes[0].Holding {
		t.Errorf("a key without a lease: %s", show(s))
	}
}

// After the server goes away the queue is shown as not live, with what
// to check; once it is back, live again with the same queue.
func TestServerRestart(t *testing.T) {
	srv := etcdtest.ForTest(t)
	const prefix = "/locks/restart"
	r, f := startReader(t, etcdlock.Config{Endpoints: []string{srv.Endpoint()}, Prefixes: []string{prefix}, Timeout: time.Second})
	holdWithLease(t, srv.Endpoint(), prefix)
	f.waitFor(t, prefix, "the holder, live", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 1 && s.Live() })
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	s := f.waitFor(t, prefix, "not live", func(s lockqueue.Snapshot) bool { return !s.Live() })
	if !strings.Contains(s.Error, "etcd "+srv.Addr()) || s.Connection == lockqueue.Connected {
		t.Errorf("etcd stopped: %s", show(s))
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), srv.Addr()) {
		t.Errorf("Err with etcd stopped: %v", err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s = f.waitFor(t, prefix, "live again", func(s lockqueue.Snapshot) bool { return s.Live() })
	if len(s.Nodes) != 1 || !s.Nodes[0].Holding || r.Err() != nil {
		t.Errorf("after the restart: %s (Err %v)", show(s), r.Err())
	}
}

// etcd back with nothing (its data lost, a member restored from
// nothing): a watch from the old revision waits on the new server for a
// revision it has not reached, silently. The reader must read the lock
// again before it shows it live, never the keys from before the outage.
func TestBackEmptyAfterRestart(t *testing.T) {
	srv := etcdtest.ForTest(t)
	const prefix = "/locks/wiped"
	_, f := startReader(t, etcdlock.Config{Endpoints: []string{srv.Endpoint()}, Prefixes: []string{prefix}, Timeout: time.Second})
	holdWithLease(t, srv.Endpoint(), prefix)
	f.waitFor(t, prefix, "the holder, live", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 1 && s.Live() })
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, prefix, "not live", func(s lockqueue.Snapshot) bool { return !s.Live() })
	if err := os.RemoveAll(filepath.Join(srv.Dir(), "data")); err != nil {
		t.Fatal(err)
	}
	before := len(f.published())
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, prefix, "live, with no key", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 0 })
	for _, s := range f.published()[before:] {
		if s.Path == prefix && s.Live() && len(s.Nodes) > 0 {
			t.Errorf("etcd came back empty; the reader showed the keys from before as live: %s", show(s))
		}
	}
}

// holdWithLease puts a holder's key under prefix with a lease of ten
// minutes.
func holdWithLease(t *testing.T, endpoint, prefix string) {
	t.Helper()
	cli := newClient(t, endpoint)
	lease, err := cli.Grant(context.Background(), 600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(context.Background(), prefix+"/"+lockqueue.LeaseHex(int64(lease.ID)), "", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
}

// A server killed while a lease read waits for it: the lock is not live
// within a fraction of the request timeout, not when the read gives up,
// so that an outage of a few seconds is a gap in the history.
func TestOutageSeenAtOnce(t *testing.T) {
	srv := etcdtest.ForTest(t)
	const prefix = "/locks/outage"
	_, f := startReader(t, etcdlock.Config{Endpoints: []string{srv.Endpoint()}, Prefixes: []string{prefix}, Timeout: 5 * time.Second})
	holdWithLease(t, srv.Endpoint(), prefix)
	f.waitFor(t, prefix, "the holder, live", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 1 && s.Live() })
	stopped := time.Now()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, prefix, "not live", func(s lockqueue.Snapshot) bool { return !s.Live() })
	if took := time.Since(stopped); took > 2*time.Second {
		t.Errorf("not live %v after etcd stopped; want well within the 5s request timeout", took.Round(time.Millisecond))
	}
}

// An endpoint nobody listens on: Err and the lock's snapshot name etcd,
// the address and what to check.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const prefix = "/locks/nowhere"
	r, f := startReader(t, etcdlock.Config{Endpoints: []string{"http://" + addr}, Prefixes: []string{prefix}, Timeout: time.Second})
	s := f.waitFor(t, prefix, "an error", func(s lockqueue.Snapshot) bool { return s.Error != "" })
	for _, want := range []string{"etcd " + addr, "not reachable", "check"} {
		if !strings.Contains(s.Error, want) {
			t.Errorf("error %q lacks %q", s.Error, want)
		}
	}
	if s.Live() || r.Connection() == lockqueue.Connected || r.Err() == nil {
		t.Errorf("unreachable, yet %s; Err %v", show(s), r.Err())
	}
}

// Prefixes under --watch-under are found by their keys' names.
func TestDiscoverUnder(t *testing.T) {
	srv := etcdtest.ForTest(t)
	a := goMutex(t, srv.Endpoint(), "/app/locks/orders", 30)
	<-a.locked
	cli := newClient(t, srv.Endpoint())
	if _, err := cli.Put(context.Background(), "/app/locks/config", "not a lock"); err != nil {
		t.Fatal(err)
	}
	r, f := startReader(t, etcdlock.Config{Endpoints: []string{srv.Endpoint()}, Under: []string{"/app"}})
	s := f.waitFor(t, "/app/locks/orders", "the found lock", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 1 })
	if !s.Nodes[0].Holding || s.Nodes[0].Name != a.key {
		t.Errorf("found lock: %s", show(s))
	}
	if got := r.Watched(); !slices.Equal(got, []string{"/app/locks/orders"}) {
		t.Errorf("Watched = %v", got)
	}
}

// A reader cut off while the queue moves on and etcd compacts its
// history comes back to a watch etcd can no longer serve from where it
// stopped: it reads the prefix again and shows the present, live.
func TestResyncAfterCompaction(t *testing.T) {
	srv := etcdtest.ForTest(t)
	const prefix = "/locks/compacted"
	p, err := proxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	_, f := startReader(t, etcdlock.Config{Endpoints: []string{"http://" + p.Addr()}, Prefixes: []string{prefix}, Timeout: time.Second})
	a := goMutex(t, srv.Endpoint(), prefix, 30)
	b := goMutex(t, srv.Endpoint(), prefix, 30)
	label := map[string]string{a.key: "a", b.key: "b"}
	f.waitFor(t, prefix, "a holding, b waiting", func(s lockqueue.Snapshot) bool { return queue(s, label) == "a:H b>a" && s.Live() })

	p.Cut()
	f.waitFor(t, prefix, "not live while cut off", func(s lockqueue.Snapshot) bool { return !s.Live() })
	a.release()
	<-b.locked
	c := goMutex(t, srv.Endpoint(), prefix, 30)
	label[c.key] = "c"
	// Compact at c's own revision: past the reader's watch (which stopped
	// before a's delete) but not past c's. concurrency.Mutex watches its
	// predecessor from its Get's revision, and a compaction past that makes
	// c give up and delete its key, so compacting further would race c.
	cli := newClient(t, srv.Endpoint())
	rev := createRevision(t, cli, prefix+"/"+c.key)
	if _, err := cli.Compact(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	p.Restore()
	s := f.waitFor(t, prefix, "b holding, c waiting, live", func(s lockqueue.Snapshot) bool { return queue(s, label) == "b:H c>b" && s.Live() })
	checkHealthy(t, s)
}

// Watch at run time starts a prefix's watch; Unwatch stops it and tells
// Forget, so the hub drops the lock.
func TestWatchUnwatch(t *testing.T) {
	srv := etcdtest.ForTest(t)
	forgot := make(chan string, 1)
	r, f := startReader(t, etcdlock.Config{Endpoints: []string{srv.Endpoint()}, Forget: func(key string) { forgot <- key }})
	if err := r.Watch("/locks/late/"); !errors.Is(err, lockservice.ErrBadName) {
		t.Errorf("Watch of a bad name: %v", err)
	}
	if err := r.Watch("/locks/late"); err != nil {
		t.Fatal(err)
	}
	a := goMutex(t, srv.Endpoint(), "/locks/late", 30)
	f.waitFor(t, "/locks/late", "a holding", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 1 && s.Nodes[0].Name == a.key })
	if err := r.Unwatch("/locks/late"); err != nil {
		t.Fatal(err)
	}
	if key := <-forgot; key != "etcd:/locks/late" {
		t.Errorf("Forget(%q), want etcd:/locks/late", key)
	}
	if w := r.Watched(); len(w) != 0 {
		t.Errorf("Watched after Unwatch: %v", w)
	}
}

// https:// to an etcd that speaks plain HTTP: the error says TLS and
// what to check.
func TestTLSMismatch(t *testing.T) {
	srv := etcdtest.ForTest(t)
	const prefix = "/locks/tls"
	_, f := startReader(t, etcdlock.Config{Endpoints: []string{"https://" + srv.Addr()}, Prefixes: []string{prefix}, Timeout: time.Second})
	s := f.waitFor(t, prefix, "a TLS error", func(s lockqueue.Snapshot) bool { return strings.Contains(s.Error, "TLS") })
	for _, want := range []string{"etcd " + srv.Addr(), "TLS", "--etcd-tls-ca"} {
		if !strings.Contains(s.Error, want) {
			t.Errorf("error %q lacks %q", s.Error, want)
		}
	}
}
