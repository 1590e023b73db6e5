// Package queuecost measures what N waiters queued on a lock cost the
// server while the holder works: the same N waiters the Redis spin-lock
// scenario polls with, queued instead on a ZooKeeper (go-zookeeper's Lock)
// or an etcd (concurrency.Mutex) the package starts for the measurement,
// counted by the server itself (ZooKeeper's mntr zk_packets_received,
// etcd's grpc_server_msg_received_total), never by the clients.
package queuecost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/fault"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Services a queue can be measured on.
const (
	ZooKeeper = "zookeeper"
	Etcd      = "etcd"
)

// Result is one measurement: while one client held the lock and n more
// waited in its queue, the server received Requests in Window.
type Result struct {
	Service  string
	Waiters  int
	Requests int64
	Window   time.Duration
	// Counter names what the server counted.
	Counter string
}

// zkSessionTimeout is the waiters' session timeout: go-zookeeper pings
// every third of it, which is all a queued waiter sends.
const zkSessionTimeout = 10 * time.Second

// Measure starts a throwaway server of service, queues n waiters behind a
// holder, lets window pass and answers what the server counted meanwhile.
// Everything it started is stopped and removed before it returns.
// A server that is not installed is an error wrapping fault.Unavailable,
// so a caller can tell it from a failed measurement without importing the
// server packages.
func Measure(ctx context.Context, service string, n int, window time.Duration) (Result, error) {
	var (
		r   Result
		err error
	)
	switch service {
	case ZooKeeper:
		r, err = measureZK(ctx, n, window)
	case Etcd:
		r, err = measureEtcd(ctx, n, window)
	default:
		return Result{}, fmt.Errorf("queuecost: unknown service %q: want %s or %s", service, ZooKeeper, Etcd)
	}
	if errors.Is(err, zklocal.ErrNotInstalled) || errors.Is(err, etcdlocal.ErrNotInstalled) {
		err = fault.Errorf(fault.Unavailable, "%v", err)
	}
	return r, err
}

func measureZK(ctx context.Context, n int, window time.Duration) (Result, error) {
	res := Result{Service: ZooKeeper, Waiters: n, Window: window, Counter: "mntr zk_packets_received"}
	srv, err := zklocal.Start(ctx, zklocal.Options{})
	if err != nil {
		return res, fmt.Errorf("start zookeeper: %w", err)
	}
	defer srv.Close()
	const path = "/queuecost/lock"
	sessions := &zkSessions{addr: srv.Addr()}
	defer sessions.close()
	holder, err := sessions.connect(ctx)
	if err != nil {
		return res, err
	}
	if err := zk.NewLock(holder, path, zk.WorldACL(zk.PermAll)).Lock(); err != nil {
		return res, fmt.Errorf("holder's lock: %w", err)
	}
	if err := sessions.queue(ctx, path, n); err != nil {
		return res, err
	}
	// Queued: every waiter's node is under the lock, the holder's first.
	queued := func() (int64, error) {
		kids, _, err := holder.Children(path)
		return int64(len(kids)), err
	}
	if err := waitQueued(ctx, n, queued); err != nil {
		return res, err
	}
	count := func() (int64, error) {
		out, err := zklocal.FourLetter(ctx, srv.Addr(), "mntr")
		if err != nil {
			return 0, fmt.Errorf("mntr: %w", err)
		}
		return field(out, "zk_packets_received", "\t")
	}
	return res.measure(ctx, count)
}

// zkSessions are the ZooKeeper sessions of one measurement, the holder's
// and the waiters'.
type zkSessions struct {
	addr  string
	mu    sync.Mutex
	conns []*zk.Conn
	wg    sync.WaitGroup
}

// connect opens a session and waits until the server has granted it.
func (s *zkSessions) connect(ctx context.Context) (*zk.Conn, error) {
	c, events, err := zk.Connect([]string{s.addr}, zkSessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		return nil, fmt.Errorf("connect to zookeeper: %w", err)
	}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
	for ev := range events {
		if ev.State == zk.StateHasSession {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return nil, errors.New("zookeeper session never established")
}

// queue starts n waiters, each on its own session, blocked in Lock on path.
func (s *zkSessions) queue(ctx context.Context, path string, n int) error {
	for range n {
		c, err := s.connect(ctx)
		if err != nil {
			return err
		}
		s.wg.Go(func() { zk.NewLock(c, path, zk.WorldACL(zk.PermAll)).Lock() })
	}
	return nil
}

// close ends every session and waits for the waiters: closing a waiter's
// session ends its Lock call.
func (s *zkSessions) close() {
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func measureEtcd(ctx context.Context, n int, window time.Duration) (Result, error) {
	res := Result{Service: Etcd, Waiters: n, Window: window, Counter: "grpc_server_msg_received_total"}
	srv, err := etcdlocal.Start(ctx, etcdlocal.Options{})
	if err != nil {
		return res, fmt.Errorf("start etcd: %w", err)
	}
	defer srv.Close()
	const prefix = "/queuecost/lock"
	sessions := newEtcdSessions(ctx, srv.Endpoint())
	defer sessions.close()
	hs, err := sessions.open()
	if err != nil {
		return res, err
	}
	if err := concurrency.NewMutex(hs, prefix).Lock(ctx); err != nil {
		return res, fmt.Errorf("holder's lock: %w", err)
	}
	if err := sessions.queue(prefix, n); err != nil {
		return res, err
	}
	queued := func() (int64, error) {
		got, err := hs.Client().Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return 0, err
		}
		return got.Count, nil
	}
	if err := waitQueued(ctx, n, queued); err != nil {
		return res, err
	}
	// A waiter's Lock sends its Get and Watch after its key: let those land
	// before the window opens.
	if err := simulator.Sleep(ctx, 200*time.Millisecond); err != nil {
		return res, err
	}
	count := func() (int64, error) { return etcdReceived(ctx, srv.Endpoint()) }
	return res.measure(ctx, count)
}

// etcdSessions are the etcd clients and sessions of one measurement, the
// holder's and the waiters'.
type etcdSessions struct {
	endpoint string
	clis     []*clientv3.Client
	wg       sync.WaitGroup
	// lockCtx is the waiters' Lock context: stop ends their calls.
	lockCtx context.Context
	stop    context.CancelFunc
}

func newEtcdSessions(ctx context.Context, endpoint string) *etcdSessions {
	lockCtx, stop := context.WithCancel(ctx)
	return &etcdSessions{endpoint: endpoint, lockCtx: lockCtx, stop: stop}
}

// open connects a client of its own and starts a session on it.
func (s *etcdSessions) open() (*concurrency.Session, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd: %w", err)
	}
	s.clis = append(s.clis, cli)
	sess, err := concurrency.NewSession(cli)
	if err != nil {
		return nil, fmt.Errorf("etcd session: %w", err)
	}
	return sess, nil
}

// queue starts n waiters, each on its own session, blocked in Lock on prefix.
func (s *etcdSessions) queue(prefix string, n int) error {
	for range n {
		sess, err := s.open()
		if err != nil {
			return err
		}
		s.wg.Go(func() { concurrency.NewMutex(sess, prefix).Lock(s.lockCtx) })
	}
	return nil
}

// close ends the waiters' Lock calls, waits for them, then closes every client.
func (s *etcdSessions) close() {
	s.stop()
	s.wg.Wait()
	for _, c := range s.clis {
		c.Close()
	}
}

// waitQueued polls the lock queue's length until the holder and all n
// waiters are in it.
func waitQueued(ctx context.Context, n int, length func() (int64, error)) error {
	for {
		got, err := length()
		if err != nil {
			return fmt.Errorf("read the queue: %w", err)
		}
		if got == int64(n+1) {
			return nil
		}
		if err := simulator.Sleep(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("%d of %d waiters queued: %w", got-1, n, err)
		}
	}
}

// measure reads the server's counter before and after the window.
func (r Result) measure(ctx context.Context, count func() (int64, error)) (Result, error) {
	before, err := count()
	if err != nil {
		return r, err
	}
	start := time.Now()
	if err := simulator.Sleep(ctx, r.Window); err != nil {
		return r, err
	}
	after, err := count()
	if err != nil {
		return r, err
	}
	r.Window, r.Requests = time.Since(start), after-before
	return r, nil
}

// etcdReceived sums the gRPC messages etcd received, every method (the
// lease keep-alive stream's messages too), from its /metrics.
func etcdReceived(ctx context.Context, endpoint string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("etcd metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return 0, fmt.Errorf("etcd metrics: %s", resp.Status)
	}
	var total float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	seen := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "grpc_server_msg_received_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("etcd metrics: %q: %w", line, err)
		}
		total += v
		seen = true
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("etcd metrics: %w", err)
	}
	if !seen {
		return 0, errors.New("etcd metrics: no grpc_server_msg_received_total")
	}
	return int64(total), nil
}

// field reads "name<sep>value" out of a line-per-field answer.
func field(out, name, sep string) (int64, error) {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, name+sep); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in %q", name, out)
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
