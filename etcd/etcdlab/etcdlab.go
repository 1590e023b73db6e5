// Package etcdlab is etcd's client in the lock lab: client/v3's own
// concurrency.Mutex on a session (a lease kept alive by the client), its
// fencing token the lock key's create revision.
//
// A holder learns it lost the lock when its session ends (session.Done):
// after a pause past the lease's TTL the keep-alive finds the lease gone.
package etcdlab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/zklockviz/zklockviz/lab"
)

// Locker holds a lock prefix through one etcd client and a session on it.
type Locker struct {
	cli    *clientv3.Client
	prefix string
	ttl    int // the lease's TTL in seconds, as etcd grants it

	mu    sync.Mutex
	sess  *concurrency.Session
	mutex *concurrency.Mutex // while held
}

var _ lab.Locker = (*Locker)(nil)

// Dial connects to endpoints. prefix is the lock's name, as
// concurrency.NewMutex takes it; ttl the session's lease, whole seconds.
func Dial(endpoints []string, prefix string, ttl time.Duration) (*Locker, error) {
	secs, err := TTLSeconds(ttl)
	if err != nil {
		return nil, err
	}
	cli, err := newClient(endpoints)
	if err != nil {
		return nil, err
	}
	return &Locker{cli: cli, prefix: prefix, ttl: secs}, nil
}

// TTLSeconds is ttl as the whole seconds etcd grants a lease in.
func TTLSeconds(ttl time.Duration) (int, error) {
	if ttl < time.Second || ttl%time.Second != 0 {
		return 0, fmt.Errorf("etcd lease TTL %v: want whole seconds, 1s or more (etcd grants leases in seconds)", ttl)
	}
	return int(ttl / time.Second), nil
}

func newClient(endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd %v: %w", endpoints, err)
	}
	return cli, nil
}

// session is the live session, a new one when the last ended (its lease
// expired while the client was paused, say).
func (l *Locker) session() (*concurrency.Session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess != nil {
		select {
		case <-l.sess.Done():
			l.sess = nil
		default:
			return l.sess, nil
		}
	}
	// The session outlives an Acquire's ctx: it is the client's, not one
	// try's.
	s, err := concurrency.NewSession(l.cli, concurrency.WithTTL(l.ttl), concurrency.WithContext(context.Background()))
	if err != nil {
		return nil, fmt.Errorf("etcd session: %w", err)
	}
	l.sess = s
	return s, nil
}

// Acquire locks the Mutex. The token is the create revision of the
// client's key under the prefix: the Mutex grants the keys in create
// revision order, so each holder's is above every earlier holder's. The
// holder is the key's name under the prefix (its session's lease, in
// hex), as zklockviz's etcd lane names it.
func (l *Locker) Acquire(ctx context.Context) (lab.Hold, error) {
	s, err := l.session()
	if err != nil {
		return lab.Hold{}, err
	}
	m := concurrency.NewMutex(s, l.prefix)
	if err := m.Lock(ctx); err != nil {
		return lab.Hold{}, fmt.Errorf("etcd lock %s: %w", l.prefix, err)
	}
	resp, err := l.cli.Get(ctx, m.Key())
	if err == nil && len(resp.Kvs) == 0 {
		err = errors.New("the key went with the lease")
	}
	if err != nil {
		m.Unlock(context.Background())
		return lab.Hold{}, fmt.Errorf("etcd lock %s: read the token: %w", l.prefix, err)
	}
	l.mu.Lock()
	l.mutex = m
	l.mu.Unlock()
	return lab.Hold{Token: resp.Kvs[0].CreateRevision, Holder: Holder(l.prefix, m.Key()), Lost: s.Done()}, nil
}

// Holder is the name of a Mutex's key under its prefix, as zklockviz's
// etcd reader names the lock's nodes.
func Holder(prefix, key string) string {
	return strings.TrimPrefix(key, strings.TrimSuffix(prefix, "/")+"/")
}

// Release unlocks the Mutex, if the session still has it.
func (l *Locker) Release() error {
	l.mu.Lock()
	m, s := l.mutex, l.sess
	l.mutex = nil
	l.mu.Unlock()
	if m == nil {
		return errors.New("nothing to release")
	}
	select {
	case <-s.Done():
		return fmt.Errorf("the session's lease of %ds expired: the key went with it", l.ttl)
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return m.Unlock(ctx)
}

// Close ends the session (revoking its lease) and the client.
func (l *Locker) Close() error {
	l.mu.Lock()
	s := l.sess
	l.mu.Unlock()
	var err error
	if s != nil {
		err = s.Close()
	}
	return errors.Join(err, l.cli.Close())
}

// Reach checks that etcd at endpoints answers within timeout, so the lab
// says so at once rather than through every client's failures.
func Reach(endpoints []string, timeout time.Duration) error {
	cli, err := newClient(endpoints)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := cli.Status(ctx, endpoints[0]); err != nil {
		return fmt.Errorf("etcd %v: no answer within %v: %w", endpoints, timeout, err)
	}
	return nil
}
