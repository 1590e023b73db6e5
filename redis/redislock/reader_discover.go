package redislock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Discovery of lock keys by pattern (--watch-under redis:PATTERN). Redis
// keeps no index of lock keys, so the reader walks the keyspace with SCAN
// MATCH PATTERN COUNT ScanCount, one call per pattern per master per poll,
// its cursor carried from poll to poll: a big keyspace is walked over many
// polls, and walked again when the walk ends, for keys made since. Where
// the masters send keyspace events, a pattern subscription to them finds a
// new key when it is set, without waiting for the walk. A key found is
// followed like a named one while a master holds it as a lock (a string or
// a hash), and forgotten once none does.

// Defaults of Config.
const (
	// DefaultScanCount is SCAN's COUNT: about how many keys one call
	// looks at.
	DefaultScanCount = 1000
	// DefaultDiscoverLimit bounds how many keys discovery follows.
	DefaultDiscoverLimit = 2000
)

// CheckPattern checks a --watch-under redis:PATTERN: a SCAN MATCH glob
// (*, ?, [abc], \ to escape), with the rules of a lock name.
func CheckPattern(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: a key pattern cannot be empty: give a SCAN MATCH glob such as lock:* (\"*\" walks every key)", lockservice.ErrBadName)
	case len(p) > maxNameBytes:
		return fmt.Errorf("%w: a key pattern of %d bytes: at most %d", lockservice.ErrBadName, len(p), maxNameBytes)
	case !utf8.ValidString(p):
		return fmt.Errorf("%w %q: a key pattern must be UTF-8", lockservice.ErrBadName, p)
	case strings.ContainsFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return fmt.Errorf("%w %q: a key pattern cannot hold spaces or control characters", lockservice.ErrBadName, p)
	}
	return nil
}

// walk is the state of one pattern's walk of one master's keyspace.
type walk struct {
	pattern string
	cursor  uint64
	// calls is how many SCAN calls the current pass has made.
	calls int
	// walked: a pass has ended once at least.
	walked bool
	// size is DBSIZE at the pass's start; -1 unknown (refused).
	size int64
	// over counts the lock keys this pass found past the limit of keys
	// followed; lastOver the last ended pass's count.
	over, lastOver int
}

// discover walks each master's keyspace for the patterns, one SCAN per
// pattern per master per poll, until ctx ends.
func (r *Reader) discover(ctx context.Context, m *liveMaster, walks []*walk) {
	for {
		for _, w := range walks {
			r.scanOnce(ctx, m, w)
		}
		t := time.NewTimer(r.cfg.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// scanOnce makes one SCAN call of w's walk and follows the lock keys it
// finds.
func (r *Reader) scanOnce(ctx context.Context, m *liveMaster, w *walk) {
	if w.calls == 0 {
		n, err := m.client.DBSize(ctx).Result()
		r.mu.Lock()
		w.size = n
		if err != nil {
			w.size = -1
		}
		r.mu.Unlock()
	}
	keys, cursor, err := m.client.Scan(ctx, w.cursor, w.pattern, int64(r.cfg.ScanCount)).Result()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		m.note(ctx, r.log, "scan "+w.pattern, err)
		return
	}
	m.note(ctx, r.log, "scan "+w.pattern, nil)
	over := r.consider(ctx, m, keys)
	r.mu.Lock()
	w.cursor = cursor
	w.calls++
	w.over += over
	if cursor == 0 {
		w.calls, w.walked, w.lastOver, w.over = 0, true, w.over, 0
	}
	r.mu.Unlock()
}

// consider follows those of keys not followed yet that m holds as a lock
// (a string or a hash), asking their TYPE in one pipeline, and returns
// how many it could not follow, past the limit.
func (r *Reader) consider(ctx context.Context, m *liveMaster, keys []string) (over int) {
	r.mu.Lock()
	var fresh []string
	for _, k := range keys {
		if _, ok := r.locks[k]; !ok && CheckName(k) == nil {
			fresh = append(fresh, k)
		}
	}
	r.mu.Unlock()
	if len(fresh) == 0 {
		return 0
	}
	pipe := m.client.Pipeline()
	types := make([]*redis.StatusCmd, len(fresh))
	for i, k := range fresh {
		types[i] = pipe.Type(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		m.note(ctx, r.log, "scan", err)
		return 0
	}
	for i, k := range fresh {
		if t := types[i].Val(); (t == typeString || t == typeHash) && !r.found(k) {
			over++
		}
	}
	return over
}

// found follows a key discovery found; false when the limit of keys
// followed is reached.
func (r *Reader) found(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.locks[name]; ok {
		return true
	}
	if r.discovered >= r.cfg.DiscoverLimit {
		return false
	}
	f := newFollow(name, len(r.masters))
	f.discovered = true
	r.discovered++
	r.locks[name] = f
	r.order = append(r.order, name)
	if r.runCtx != nil {
		r.start(f)
	}
	return true
}

// leave stops following a discovered key no master holds as a lock any
// more, after its last snapshot (free) was published, and has the hub
// forget it.
func (r *Reader) leave(f *follow) {
	r.mu.Lock()
	if r.locks[f.name] != f || !f.discovered {
		r.mu.Unlock()
		return
	}
	delete(r.locks, f.name)
	r.order = slices.DeleteFunc(r.order, func(n string) bool { return n == f.name })
	r.discovered--
	r.mu.Unlock()
	f.cancel()
	for _, m := range r.masters {
		m.unsubscribe(f.name)
		m.forget(f.name)
	}
	if r.cfg.Forget != nil {
		r.cfg.Forget(lockqueue.LockID{Service: Name, Name: f.name}.Key())
	}
}

// noLock reports whether every master answered and none holds the key as
// a lock: gone, or of another type.
func noLock(reads []keyRead) bool {
	for _, kr := range reads {
		if kr.err != nil || kr.typ == typeString || kr.typ == typeHash {
			return false
		}
	}
	return true
}

// Unexplored says what discovery has not looked at: keys matching a
// pattern past the limit of keys followed, or, until the first walk of
// every master's keyspace has ended, about how many keys it has still to
// look at.
func (r *Reader) Unexplored() lockservice.Unexplored {
	r.mu.Lock()
	defer r.mu.Unlock()
	over, left := 0, 0
	for _, ws := range r.walks {
		for _, w := range ws {
			over = max(over, w.over, w.lastOver)
			if w.walked {
				continue
			}
			rest := 1 // a walk not ended has a key left, at least
			if w.size >= 0 {
				rest = max(rest, int(w.size)-w.calls*r.cfg.ScanCount)
			}
			left = max(left, rest)
		}
	}
	switch {
	case over > 0:
		u := lockservice.Unexplored{Folders: over, Limit: r.cfg.DiscoverLimit, Flag: "--discover-limit", What: lockqueue.UnexploredOverLimit}
		u.Text = fmt.Sprintf("%d lock %s matching the --watch-under patterns not followed: the limit of %d keys followed is reached, so they are not shown. Raise %s to follow them.",
			u.Folders, keys(u.Folders), u.Limit, u.Flag)
		return u
	case left == 0:
		return lockservice.Unexplored{}
	}
	u := lockservice.Unexplored{Folders: left, Limit: r.cfg.ScanCount, Flag: "--redis-scan-count", What: lockqueue.UnexploredUnwalked}
	u.Text = fmt.Sprintf("the first SCAN of the keyspace for the --watch-under patterns has about %d %s still to look at (about %d per --poll): lock keys among them are not shown yet. Raise %s to walk it faster.",
		u.Folders, keys(u.Folders), u.Limit, u.Flag)
	return u
}

// keys is "key" or "keys", for n of them.
func keys(n int) string {
	if n == 1 {
		return "key"
	}
	return "keys"
}
