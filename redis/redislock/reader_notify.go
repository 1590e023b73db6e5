package redislock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// keyspacePrefix names a key's keyspace-notification channel in database
// db: the server sends a key's events on its own database's channel only.
func keyspacePrefix(db int) string { return "__keyspace@" + strconv.Itoa(db) + "__:" }

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

// keyspaceEvents follows keyspace events on m when the server has them
// on: it reads notify-keyspace-events once (CONFIG GET, a read; the reader
// never sets it), then subscribes to each watched key's channel
// (notifications) and, with patterns, to the --watch-under patterns'
// (patternEvents). Where the flags cannot be read or the events are off,
// the locks are polled at --poll and keys found by the walk alone.
func (r *Reader) keyspaceEvents(ctx context.Context, m *liveMaster, patterns bool) {
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
	if patterns {
		r.running.Go(func() { r.patternEvents(ctx, m) })
	}
	r.notifications(ctx, m)
}

// notifications subscribes to each watched key's channel on m, and kicks
// the key's read on each event. Where the subscription is refused, the
// locks are polled at --poll.
func (r *Reader) notifications(ctx context.Context, m *liveMaster) {
	ps := m.client.Subscribe(ctx)
	m.mu.Lock()
	m.pubsub = ps
	m.mu.Unlock()
	defer m.stopNotify()
	for _, name := range r.Watched() {
		m.subscribe(ctx, name)
	}
	refused := func(err error) {
		r.log.Info("keyspace notifications refused; polling", "addr", m.addr, "poll", r.cfg.Poll, "err", err)
	}
	// Until go-redis has subscribed again after a lost connection, the
	// locks poll.
	lost := func() { m.setNotify(false) }
	r.receive(ctx, ps, refused, lost, func(msg any) {
		switch v := msg.(type) {
		case *redis.Subscription:
			if v.Kind == "subscribe" {
				m.setNotify(true)
				// Subscribed again after a reconnect: what happened in
				// between sent no event.
				r.kick(strings.TrimPrefix(v.Channel, m.keyspace))
			}
		case *redis.Message:
			r.kick(strings.TrimPrefix(v.Channel, m.keyspace))
		}
	})
}

// patternEvents finds the keys matching the --watch-under patterns when
// they are set, from m's keyspace events (PSUBSCRIBE of the pattern's
// channels: the channel's glob is the key's), rather than when the walk
// reaches them. It uses a connection of its own: an ACL that allows the
// named keys' channels but not a pattern's (a PSUBSCRIBE pattern must be
// allowed as written) refuses only this, and the walk still finds the
// keys. It does not wait for the named keys' subscription: with no key
// named, nor found yet, that one subscribes to nothing.
func (r *Reader) patternEvents(ctx context.Context, m *liveMaster) {
	channels := make([]string, len(r.cfg.Patterns))
	for i, p := range r.cfg.Patterns {
		channels[i] = m.keyspace + p
	}
	refused := func(err error) {
		r.log.Info("keyspace events of the --watch-under patterns refused; finding keys by SCAN alone",
			"addr", m.addr, "err", err, "acl", "&"+channels[0])
	}
	r.receive(ctx, m.client.PSubscribe(ctx, channels...), refused, nil, func(msg any) {
		if v, ok := msg.(*redis.Message); ok && makesLock[v.Payload] {
			if key := strings.TrimPrefix(v.Channel, m.keyspace); !r.follows(key) {
				r.consider(ctx, m, []string{key})
			}
		}
	})
}

// receive reads ps until ctx ends, or until the server refuses what ps
// asked (refused is told why). A lost connection calls lost (when not nil)
// and waits a --poll: go-redis dials and subscribes again on the next
// Receive. got has every message and subscription.
func (r *Reader) receive(ctx context.Context, ps *redis.PubSub, refused func(error), lost func(), got func(any)) {
	// Receive does not return when ctx ends; closing the connection
	// under it does.
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
			refused(err)
			return
		case err != nil:
			if lost != nil {
				lost()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(r.cfg.Poll):
			}
			continue
		}
		got(msg)
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
		ps.Subscribe(ctx, m.keyspace+name) // a refusal comes back through Receive
	}
}

func (m *liveMaster) unsubscribe(name string) {
	m.mu.Lock()
	ps := m.pubsub
	m.mu.Unlock()
	if ps != nil {
		ps.Unsubscribe(context.Background(), m.keyspace+name)
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
