package redislock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// keyspacePrefix names a key's keyspace-notification channel in database
// 0, where lock libraries keep their locks.
const keyspacePrefix = "__keyspace@0__:"

// keyspaceCovers reports whether notify-keyspace-events sends a lock
// key's events: keyspace events (K) for generic commands (g: DEL, PEXPIRE,
// expiries), strings ($: SET) and hashes (h: HINCRBY), or all of them (A).
func keyspaceCovers(flags string) bool {
	if !strings.Contains(flags, "K") {
		return false
	}
	return strings.Contains(flags, "A") ||
		(strings.Contains(flags, "g") && strings.Contains(flags, "$") && strings.Contains(flags, "h"))
}

// notifications follows keyspace events on m when the server has them on:
// it reads notify-keyspace-events (CONFIG GET, a read; the reader never
// sets it) and subscribes to each watched key's channel. Where either is
// refused, or the events are off, the locks are polled at --poll.
func (r *Reader) notifications(ctx context.Context, m *liveMaster) {
	flags, err := r.keyspaceFlags(ctx, m)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Info("cannot read notify-keyspace-events; polling", "addr", m.addr, "poll", r.cfg.Poll, "err", err)
		}
		return
	}
	if !keyspaceCovers(flags) {
		r.log.Info("keyspace notifications off; polling", "addr", m.addr, "notify-keyspace-events", flags, "poll", r.cfg.Poll)
		return
	}
	ps := m.client.Subscribe(ctx)
	// Receive does not return when ctx ends; closing the connection
	// under it does.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	defer ps.Close()
	m.mu.Lock()
	m.pubsub = ps
	m.mu.Unlock()
	defer m.stopNotify()
	for _, name := range r.Watched() {
		m.subscribe(ctx, name)
	}
	for {
		msg, err := ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		var rerr redis.Error
		switch {
		case errors.As(err, &rerr):
			r.log.Info("keyspace notifications refused; polling", "addr", m.addr, "poll", r.cfg.Poll, "err", err)
			return
		case err != nil:
			// go-redis dials again and subscribes again on the next
			// Receive; until then the locks poll.
			m.setNotify(false)
			select {
			case <-ctx.Done():
				return
			case <-time.After(r.cfg.Poll):
			}
			continue
		}
		switch v := msg.(type) {
		case *redis.Subscription:
			if v.Kind == "subscribe" {
				m.setNotify(true)
				// Subscribed again after a reconnect: what happened in
				// between sent no event.
				r.kick(strings.TrimPrefix(v.Channel, keyspacePrefix))
			}
		case *redis.Message:
			r.kick(strings.TrimPrefix(v.Channel, keyspacePrefix))
		}
	}
}

// patternEvents finds the keys matching the --watch-under patterns when
// they are set, from m's keyspace events (PSUBSCRIBE of the pattern's
// channels: the channel's glob is the key's), rather than when the walk
// reaches them. It runs when m sends keyspace events, and uses a
// connection of its own: an ACL that allows the named keys' channels but
// not a pattern's (a PSUBSCRIBE pattern must be allowed as written) refuses
// only this, and the walk still finds the keys.
func (r *Reader) patternEvents(ctx context.Context, m *liveMaster) {
	// Whether m sends keyspace events is read here, not taken from the
	// named keys' subscription: with no key named, nor found yet, that
	// one never subscribes to anything, and a key set meanwhile would
	// wait for the walk. notifications logs why events are not used.
	flags, err := r.keyspaceFlags(ctx, m)
	if err != nil || !keyspaceCovers(flags) {
		return
	}
	channels := make([]string, len(r.cfg.Patterns))
	for i, p := range r.cfg.Patterns {
		channels[i] = keyspacePrefix + p
	}
	ps := m.client.PSubscribe(ctx, channels...)
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	defer ps.Close()
	for {
		msg, err := ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		var rerr redis.Error
		switch {
		case errors.As(err, &rerr):
			r.log.Info("keyspace events of the --watch-under patterns refused; finding keys by SCAN alone",
				"addr", m.addr, "err", err, "acl", "&"+channels[0])
			return
		case err != nil:
			select {
			case <-ctx.Done():
				return
			case <-time.After(r.cfg.Poll):
			}
			continue
		}
		if v, ok := msg.(*redis.Message); ok && makesLock[v.Payload] {
			if key := strings.TrimPrefix(v.Channel, keyspacePrefix); !r.follows(key) {
				r.consider(ctx, m, []string{key})
			}
		}
	}
}

// makesLock are the keyspace events of the commands that make a lock key:
// SET (SET NX PX: redsync, redis-cli), HINCRBY (Redisson), and those that
// make a key of any type.
var makesLock = map[string]bool{"set": true, "hset": true, "hsetnx": true, "hincrby": true,
	"rename_to": true, "restore": true, "copy_to": true}

// follows reports whether the reader follows name.
func (r *Reader) follows(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.locks[name]
	return ok
}

// keyspaceFlags reads notify-keyspace-events, retrying while the master
// cannot be reached; an answer that is an error (NOPERM, a renamed CONFIG)
// is final.
func (r *Reader) keyspaceFlags(ctx context.Context, m *liveMaster) (string, error) {
	for {
		v, err := m.client.Do(ctx, "CONFIG", "GET", "notify-keyspace-events").StringSlice()
		var rerr redis.Error
		switch {
		case err == nil && len(v) == 2:
			return v[1], nil
		case err == nil:
			return "", fmt.Errorf("CONFIG GET notify-keyspace-events answered %q", v)
		case errors.As(err, &rerr):
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(r.cfg.Poll):
		}
	}
}

func (m *liveMaster) subscribe(ctx context.Context, name string) {
	m.mu.Lock()
	ps := m.pubsub
	m.mu.Unlock()
	if ps != nil {
		ps.Subscribe(ctx, keyspacePrefix+name) // a refusal comes back through Receive
	}
}

func (m *liveMaster) unsubscribe(name string) {
	m.mu.Lock()
	ps := m.pubsub
	m.mu.Unlock()
	if ps != nil {
		ps.Unsubscribe(context.Background(), keyspacePrefix+name)
	}
}

func (m *liveMaster) setNotify(on bool) {
	m.mu.Lock()
	m.notify = on
	m.mu.Unlock()
}

func (m *liveMaster) stopNotify() {
	m.mu.Lock()
	m.notify, m.pubsub = false, nil
	m.mu.Unlock()
}

func (m *liveMaster) notifyOn() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.notify
}
