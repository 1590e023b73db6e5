// Package redislab is Redis's client in the lock lab: the single-instance
// lock every Redis write-up gives (SET key value NX PX ttl, released by a
// compare-and-delete script), with a fencing token from a counter the
// same script increments.
//
// The client does not renew its key: a holder learns it lost the lock when
// its TTL ran out on its own clock. That is the point of the lab on Redis:
// a holder paused past the TTL wakes up still believing, while another
// client has taken the expired key.
package redislab

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/lab"
)

// TokenSuffix names the token counter beside the lock's key: the counter
// of key k is k + TokenSuffix.
const TokenSuffix = ":fencing-token"

// acquire sets the lock's key only if it is absent and, in the same
// atomic step, increments the token counter: a token is handed out only
// to a client that got the key, in the order the key was got. A script
// runs whole, so no other command comes between the check and the set.
// The key's value is the owner's id and its token ("c1:42"), so
// zklockviz's Redis lane names the holder and release can tell this hold
// from a later one of the same client. It returns 0 when the key is held.
var acquire = redis.NewScript(`if redis.call('exists', KEYS[1]) == 1 then return 0 end
local token = redis.call('incr', KEYS[2])
redis.call('set', KEYS[1], ARGV[1] .. ':' .. token, 'px', ARGV[2])
return token`)

// release deletes the key only if it still holds this owner's value: a
// holder whose key expired must not delete the next holder's.
var release = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`)

// retry is the pause between tries of a waiter: the recipe has no queue,
// each waiter polls.
const retry = 10 * time.Millisecond

// Locker holds one Redis key as a lock, through one connection.
type Locker struct {
	rdb *redis.Client
	key string
	id  string
	ttl time.Duration

	mu    sync.Mutex
	owner string      // the key's value while held
	timer *time.Timer // closes lost when the TTL runs out
}

var _ lab.Locker = (*Locker)(nil)

// Dial connects to the Redis at addr. key is the lock's key, id the
// client's name, ttl the key's time to live (PX).
func Dial(addr, key, id string, ttl time.Duration) (*Locker, error) {
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("redis lock TTL %v: want 1ms or more (PX takes milliseconds)", ttl)
	}
	// One connection, as a lock client has; the timeouts only bound a slow
	// answer (a paused client sends nothing).
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, MaxRetries: 1, DisableIdentity: true,
		DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, ContextTimeoutEnabled: true})
	return &Locker{rdb: rdb, key: key, id: id, ttl: ttl}, nil
}

// Acquire tries the acquire script until it gets the key or ctx ends. The
// token is the counter's value the script returned; the holder the key's
// value, as zklockviz's Redis lane names its owner.
func (l *Locker) Acquire(ctx context.Context) (lab.Hold, error) {
	for {
		// The TTL is counted from before the try was sent: the key may
		// have been set as soon as it left, so the client's own clock
		// can only end its belief early, never late.
		sent := time.Now()
		token, err := TryAcquire(ctx, l.rdb, l.key, l.id, l.ttl)
		if err != nil {
			return lab.Hold{}, err
		}
		if token > 0 {
			lost := make(chan struct{})
			owner := Owner(l.id, token)
			l.mu.Lock()
			l.owner = owner
			l.timer = time.AfterFunc(time.Until(sent.Add(l.ttl)), func() { close(lost) })
			l.mu.Unlock()
			return lab.Hold{Token: token, Holder: owner, Lost: lost}, nil
		}
		select {
		case <-ctx.Done():
			return lab.Hold{}, ctx.Err()
		case <-time.After(retry):
		}
	}
}

// Release deletes the key if it is still this hold's.
func (l *Locker) Release() error {
	l.mu.Lock()
	owner, timer := l.owner, l.timer
	l.owner, l.timer = "", nil
	l.mu.Unlock()
	if owner == "" {
		return errors.New("nothing to release")
	}
	expired := !timer.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	deleted, err := Release(ctx, l.rdb, l.key, owner)
	switch {
	case err != nil:
		return err
	case !deleted && expired:
		return fmt.Errorf("its TTL of %v ran out: the key was no longer %s", l.ttl, owner)
	case !deleted:
		return fmt.Errorf("the key was no longer %s before its TTL ran out", owner)
	}
	return nil
}

// Close closes the connection.
func (l *Locker) Close() error { return l.rdb.Close() }

// Owner is the key's value while id holds with token.
func Owner(id string, token int64) string { return id + ":" + strconv.FormatInt(token, 10) }

// TryAcquire runs the acquire script once: the new token when it set the
// key, 0 when the key was held.
func TryAcquire(ctx context.Context, rdb redis.Scripter, key, id string, ttl time.Duration) (int64, error) {
	token, err := acquire.Run(ctx, rdb, []string{key, key + TokenSuffix}, id, ttl.Milliseconds()).Int64()
	if err != nil {
		return 0, fmt.Errorf("redis lock %s: %w", key, err)
	}
	return token, nil
}

// Release runs the release script once: whether it deleted the key.
func Release(ctx context.Context, rdb redis.Scripter, key, owner string) (bool, error) {
	n, err := release.Run(ctx, rdb, []string{key}, owner).Int64()
	if err != nil {
		return false, fmt.Errorf("redis lock %s: release: %w", key, err)
	}
	return n == 1, nil
}

// Reach checks that the Redis at addr answers within timeout, so the lab
// says so at once rather than through every client's failures.
func Reach(addr string, timeout time.Duration) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true, DialTimeout: timeout})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: PING: %w", addr, err)
	}
	return nil
}
