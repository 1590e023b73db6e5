// Package zklab is ZooKeeper's client in the lock lab: go-zookeeper's own
// lock recipe (zk.Lock), its fencing token the lock node's sequence number.
package zklab

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// Locker holds a lock parent through one ZooKeeper session.
type Locker struct {
	conn *zk.Conn
	path string
	data []byte

	mu   sync.Mutex
	lock *zk.Lock
	lost chan struct{}
	// orphans says a Release or an Acquire failed: it may have left a
	// lock node of this session behind (see dropOrphans).
	orphans bool
}

var _ lab.Locker = (*Locker)(nil)

// Dial connects a session of the given timeout; id is written as the lock
// node's data, so zklockviz's lane names the client.
func Dial(servers []string, sessionTimeout time.Duration, path, id string) (*Locker, error) {
	conn, events, err := zk.Connect(servers, sessionTimeout, zk.WithLogger(quiet{}))
	if err != nil {
		return nil, fmt.Errorf("zookeeper %v: %w", servers, err)
	}
	l := &Locker{conn: conn, path: path, data: []byte(id)}
	go l.watch(events)
	return l, nil
}

// watch tells the holder it lost the lock when its session expires: its
// ephemeral node is gone, and whoever is next holds.
func (l *Locker) watch(events <-chan zk.Event) {
	for ev := range events {
		if ev.State != zk.StateExpired {
			continue
		}
		l.mu.Lock()
		if l.lost != nil {
			close(l.lost)
			l.lost = nil
		}
		l.lock = nil // its node went with the session
		l.mu.Unlock()
	}
}

// Acquire takes the lock with go-zookeeper's recipe. The token is the
// sequence number of the node that holds: the lowest of the parent's,
// which is this client's own once the recipe returns (a lower one would
// still block it); the holder is that node's name, as zklockviz's lane
// names it.
func (l *Locker) Acquire(ctx context.Context) (h lab.Hold, err error) {
	defer func() { l.failed(err) }()
	if err := l.dropOrphans(); err != nil {
		return lab.Hold{}, err
	}
	lk := zk.NewLock(l.conn, l.path, zk.WorldACL(zk.PermAll))
	if err := lk.LockWithData(l.data); err != nil {
		return lab.Hold{}, err
	}
	kids, _, err := l.conn.Children(l.path)
	if err != nil {
		lk.Unlock()
		return lab.Hold{}, fmt.Errorf("read the token: %w", err)
	}
	h = lab.Hold{Token: -1}
	for _, k := range kids {
		if seq, err := strconv.ParseInt(k[strings.LastIndex(k, "-")+1:], 10, 64); err == nil && (h.Token < 0 || seq < h.Token) {
			h.Token, h.Holder = seq, k
		}
	}
	held := make(chan struct{})
	l.mu.Lock()
	l.lock, l.lost = lk, held
	l.mu.Unlock()
	h.Lost = held
	return h, nil
}

// Release deletes the lock node, if the session still has it.
func (l *Locker) Release() error {
	l.mu.Lock()
	lk := l.lock
	l.lock, l.lost = nil, nil
	l.mu.Unlock()
	if lk == nil {
		return fmt.Errorf("the session expired: nothing to release")
	}
	err := lk.Unlock()
	l.failed(err)
	return err
}

// failed notes that an operation failed with err: unless the session is
// gone (and its nodes with it), a node of it may be left behind.
func (l *Locker) failed(err error) {
	if err == nil || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrNoNode) {
		return
	}
	l.mu.Lock()
	l.orphans = true
	l.mu.Unlock()
}

// dropOrphans deletes the lock nodes this session left behind after a
// failure. A Release or an Acquire that failed while the server was down
// or the client cut off (the lab's server and cut faults) can leave its
// node, which the session keeps when it reconnects in time (ZooKeeper
// restores sessions when it restarts): every later Acquire, this
// client's own too, would queue behind that node for ever.
func (l *Locker) dropOrphans() error {
	l.mu.Lock()
	orphans := l.orphans
	l.mu.Unlock()
	if !orphans {
		return nil
	}
	kids, _, err := l.conn.Children(l.path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("look for this session's leftover lock nodes: %w", err)
	}
	sid := l.conn.SessionID()
	for _, k := range kids {
		p := l.path + "/" + k
		_, st, err := l.conn.Exists(p)
		if err == nil && st != nil && st.EphemeralOwner == sid {
			err = l.conn.Delete(p, -1)
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("delete this session's leftover lock node %s: %w", p, err)
		}
	}
	l.mu.Lock()
	l.orphans = false
	l.mu.Unlock()
	return nil
}

// Reach checks that a session can be had from servers within timeout, so
// the lab says so at once rather than through every client's failures.
func Reach(servers []string, timeout time.Duration) error {
	conn, events, err := zk.Connect(servers, timeout, zk.WithLogger(quiet{}))
	if err != nil {
		return fmt.Errorf("zookeeper %v: %w", servers, err)
	}
	defer conn.Close()
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("no ZooKeeper session from %v within %v", servers, timeout)
		}
	}
}

// quiet drops go-zookeeper's log lines: the lab's output is its events.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// Close ends the session.
func (l *Locker) Close() { l.conn.Close() }
