package etcdlock_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// waitBound bounds every wait: a test that waits longer has failed, it is
// no speed assertion (the machine is shared and slow).
const waitBound = 60 * time.Second

// feed is a Sink that keeps each lock's newest snapshot.
type feed struct {
	mu      sync.Mutex
	latest  map[string]lockqueue.Snapshot
	all     []lockqueue.Snapshot // every snapshot, in the order published
	count   int
	changed chan struct{}
}

func newFeed() *feed {
	return &feed{latest: map[string]lockqueue.Snapshot{}, changed: make(chan struct{})}
}

func (f *feed) publish(s lockqueue.Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latest[s.Path] = s
	f.all = append(f.all, s)
	f.count++
	close(f.changed)
	f.changed = make(chan struct{})
}

// published is every snapshot published so far.
func (f *feed) published() []lockqueue.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.all)
}

// waitFor returns the first snapshot of name that ok accepts.
func (f *feed) waitFor(t *testing.T, name, what string, ok func(lockqueue.Snapshot) bool) lockqueue.Snapshot {
	t.Helper()
	deadline := time.After(waitBound)
	for {
		f.mu.Lock()
		s, have := f.latest[name]
		ch := f.changed
		f.mu.Unlock()
		if have && ok(s) {
			return s
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s: never saw %s; last snapshot: %s", name, what, show(s))
		}
	}
}

// show writes a snapshot for a failure message.
func show(s lockqueue.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rev %d %s err=%q recipe=%s [", s.Revision, s.Connection, s.Error, s.Recipe)
	for _, n := range s.Nodes {
		fmt.Fprintf(&b, " %s(order %d hold=%v waits=%s lease=%s ttl=%d left=%d)", n.Name, n.Order(), n.Holding, n.WaitsFor, n.LeaseID(), n.LeaseTTLMs(), n.LeaseLeftMs())
	}
	b.WriteString(" ] alerts:")
	for _, a := range s.Alerts {
		fmt.Fprintf(&b, " %s: %s;", a.Kind, a.Message)
	}
	return b.String()
}

// startReader runs a reader of cfg (its Publish set to a new feed) until
// the test ends.
func startReader(t *testing.T, cfg etcdlock.Config) (*etcdlock.Reader, *feed) {
	t.Helper()
	f := newFeed()
	cfg.Publish = f.publish
	if cfg.Poll == 0 {
		cfg.Poll = 200 * time.Millisecond
	}
	r, err := etcdlock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	t.Cleanup(func() {
		r.Close()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r, f
}

// queue writes a snapshot's lock keys in order as "H" (holder) or the
// name of what each waits for, keyed by the contenders' labels.
func queue(s lockqueue.Snapshot, label map[string]string) string {
	var parts []string
	for _, n := range s.Nodes {
		if n.Foreign {
			continue
		}
		l := cmpOr(label[n.Name], n.Name)
		if n.Holding {
			parts = append(parts, l+":H")
		} else {
			parts = append(parts, l+">"+cmpOr(label[n.WaitsFor], n.WaitsFor))
		}
	}
	return strings.Join(parts, " ")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func alertKinds(s lockqueue.Snapshot) []string {
	var out []string
	for _, a := range s.Alerts {
		out = append(out, a.Kind)
	}
	return out
}

func keyNames(s lockqueue.Snapshot) []string {
	var out []string
	for _, n := range s.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// contender is one client queued on a lock: a Go concurrency.Mutex or an
// `etcdctl lock` process.
type contender struct {
	key     string // its key below the prefix
	release func()
	kill    func() // dies without releasing (its lease runs out)
	locked  chan struct{}
}

func newClient(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	return newClientTLS(t, endpoint, nil)
}

// newClientTLS is newClient with a TLS configuration, for https://.
func newClientTLS(t *testing.T, endpoint string, cfg *tls.Config) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: cfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// goMutex queues a concurrency.Mutex client with a session lease of ttl
// seconds, connecting through endpoint (a proxy, to cut it off).
func goMutex(t *testing.T, endpoint, prefix string, ttl int) *contender {
	t.Helper()
	return goMutexOn(t, newClient(t, endpoint), prefix, ttl)
}

// goMutexOn is goMutex over a client of the caller's.
func goMutexOn(t *testing.T, cli *clientv3.Client, prefix string, ttl int) *contender {
	t.Helper()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	m := concurrency.NewMutex(s, prefix)
	ctx, cancel := context.WithCancel(context.Background())
	c := &contender{key: lockqueue.LeaseHex(int64(s.Lease())), locked: make(chan struct{})}
	go func() {
		if m.Lock(ctx) == nil {
			close(c.locked)
		}
	}()
	c.release = func() {
		cancel()
		// Closing the session revokes its lease, which deletes its key,
		// held or queued: what a client that exits cleanly does.
		if err := s.Close(); err != nil {
			t.Errorf("release %s: %v", c.key, err)
		}
	}
	c.kill = func() { cancel(); s.Orphan() }
	t.Cleanup(func() { cancel(); s.Close() })
	return c
}

// etcdctlLock queues an `etcdctl lock --ttl` process. Its key is found as
// the one key of the lock that was not there before.
func etcdctlLock(t *testing.T, f *feed, endpoint, prefix string, ttl int, before lockqueue.Snapshot) *contender {
	t.Helper()
	cmd := exec.Command("etcdctl", "--endpoints", endpoint, "lock", fmt.Sprintf("--ttl=%d", ttl), prefix)
	cmd.Env = []string{"ETCDCTL_API=3"}
	if err := cmd.Start(); err != nil {
		t.Fatalf("etcdctl lock: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	old := keyNames(before)
	s := f.waitFor(t, prefix, "etcdctl's key", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == len(old)+1 })
	c := &contender{}
	for _, n := range keyNames(s) {
		if !slices.Contains(old, n) {
			c.key = n
		}
	}
	c.release = func() { cmd.Process.Signal(syscall.SIGTERM); <-done }
	c.kill = func() { cmd.Process.Kill(); <-done }
	return c
}

// createRevision waits for key to exist (a contender puts its key from its
// own goroutine) and returns its create revision.
func createRevision(t *testing.T, cli *clientv3.Client, key string) int64 {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for time.Now().Before(deadline) {
		resp, err := cli.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 1 {
			return resp.Kvs[0].CreateRevision
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", key)
	return 0
}
