package redislock_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/redis/redislocal"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
	"github.com/zklockviz/zklockviz/redis/redislock"
)

// The ACL a least-privilege viewer needs: the reader's read commands, and
// for keyspace notifications CONFIG GET, SUBSCRIBE and the keyspace
// channels. docs/services.md lists the same.
var (
	viewerPoll   = []string{"+ping", "+type", "+pttl", "+get", "+hgetall", "+pubsub|numsub", "+info"}
	viewerNotify = append(slices.Clone(viewerPoll), "+config|get", "+subscribe", "&__keyspace@0__:*")
)

// acl creates user with password and only the given rules, on keys ~*.
func acl(t *testing.T, addr, user, password string, rules ...string) {
	t.Helper()
	args := []any{"ACL", "SETUSER", user, "reset", "on", ">" + password, "~*", "-@all"}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := client(t, addr).Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("ACL SETUSER %s: %v", user, err)
	}
}

// setupLocks leaves a redis-cli SET NX PX lock, a Redisson lock with one
// waiting client, and nothing under a third name, all long-lived.
func setupLocks(t *testing.T, addr string) {
	t.Helper()
	cli(t, addr, "SET", "ro-string", "tok-ro", "NX", "PX", "600000")
	redisson{c: client(t, addr), name: "ro-hash", owner: "9d2e:1", lease: 10 * time.Minute}.lock(t)
	waiters(t, addr, "ro-hash", 1)
}

var roNames = []string{"ro-string", "ro-hash", "ro-missing"}

// waitAll waits until the reader shows setupLocks' state, read as source.
func waitAll(t *testing.T, s *sink, source string) {
	t.Helper()
	ok := func(snap lockqueue.Snapshot) bool { return snap.WatchSource == source }
	s.waitSnap(t, "ro-string", "tok-ro holding, read by "+source, func(snap lockqueue.Snapshot) bool {
		return held("tok-ro")(snap) && ok(snap)
	})
	s.waitSnap(t, "ro-hash", "the Redisson owner holding, one waiting client, read by "+source, func(snap lockqueue.Snapshot) bool {
		return held("9d2e")(snap) && snap.AnonymousWaiters == 1 && ok(snap)
	})
	s.waitSnap(t, "ro-missing", "free, read by "+source, func(snap lockqueue.Snapshot) bool { return free(snap) && ok(snap) })
}

// readCommands are every command the reader may send (HELLO and AUTH are
// go-redis's handshake); a test's own INFO and CONFIG RESETSTAT are no
// writes either.
var readCommands = []string{
	"cmdstat_hello", "cmdstat_auth", "cmdstat_ping", "cmdstat_type", "cmdstat_pttl", "cmdstat_get", "cmdstat_hgetall",
	"cmdstat_pubsub|numsub", "cmdstat_config|get", "cmdstat_subscribe", "cmdstat_unsubscribe",
	"cmdstat_info", "cmdstat_config|resetstat",
}

// With a user allowed everything, the reader still sends only reads:
// after it has followed a string lock, a Redisson lock and a missing one,
// by keyspace notifications, INFO commandstats shows no other command.
func TestReaderNeverWrites(t *testing.T) {
	srv := redistest.ForTestWith(t, redislocal.Options{Args: []string{"--notify-keyspace-events", "KEA"}})
	setupLocks(t, srv.Addr())
	admin := client(t, srv.Addr())
	if err := admin.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	_, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Names: roNames})
	waitAll(t, s, "keyspace")

	info, err := admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for line := range strings.SplitSeq(info, "\n") {
		name, _, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		seen = append(seen, name)
		if !slices.Contains(readCommands, name) {
			t.Errorf("the reader sent %s: %s", strings.TrimPrefix(name, "cmdstat_"), line)
		}
	}
	if !slices.Contains(seen, "cmdstat_hgetall") || !slices.Contains(seen, "cmdstat_subscribe") {
		t.Errorf("commandstats %v lack the reader's own reads: is this the right server?", seen)
	}
}

// A least-privilege ACL user: with only the read commands the reader
// follows every lock by polling; with CONFIG GET, SUBSCRIBE and the
// keyspace channels too, by notifications. ACL LOG shows no command
// refused to it but, without them, the one CONFIG GET the reader tries
// before it falls back to polling.
func TestLeastPrivilegeUser(t *testing.T) {
	srv := redistest.ForTestWith(t, redislocal.Options{Args: []string{"--notify-keyspace-events", "KEA"}})
	setupLocks(t, srv.Addr())
	for _, tc := range []struct {
		user    string
		rules   []string
		source  string
		refused []string
	}{
		{"viewer-poll", viewerPoll, "poll", []string{"config|get"}},
		{"viewer-notify", viewerNotify, "keyspace", nil},
	} {
		t.Run(tc.user, func(t *testing.T) {
			acl(t, srv.Addr(), tc.user, "s3cret", tc.rules...)
			r, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Username: tc.user, Password: "s3cret", Names: roNames})
			waitAll(t, s, tc.source)
			if err := r.Err(); err != nil {
				t.Errorf("Err = %v", err)
			}
			if refused := refusedTo(t, client(t, srv.Addr()), tc.user); !slices.Equal(refused, tc.refused) {
				t.Errorf("ACL LOG: refused to %s: %v, want %v", tc.user, refused, tc.refused)
			}
		})
	}
}

// refusedTo lists what ACL LOG says was refused to user (the objects).
func refusedTo(t *testing.T, c *redis.Client, user string) []string {
	t.Helper()
	log, err := c.Do(context.Background(), "ACL", "LOG").Slice()
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, entry := range log {
		if m, ok := entry.(map[any]any); ok && m["username"] == user {
			refused = append(refused, toText(m["object"]))
		} else if !ok {
			t.Fatalf("ACL LOG entry %v: want a map", entry)
		}
	}
	return refused
}

func toText(v any) string {
	switch v := v.(type) {
	case []any:
		var parts []string
		for _, e := range v {
			parts = append(parts, toText(e))
		}
		return strings.Join(parts, " ")
	case map[any]any:
		var parts []string
		for k, e := range v {
			parts = append(parts, toText(k), toText(e))
		}
		return strings.Join(parts, " ")
	case string:
		return v
	}
	return ""
}

// What keeps the reader from a master shows in Err and in the lock's
// snapshot, naming redis, the address and what to check.
func TestConnectionErrors(t *testing.T) {
	srv := redistest.ForTest(t)
	setupLocks(t, srv.Addr())
	acl(t, srv.Addr(), "no-numsub", "pw", "+ping", "+type", "+pttl", "+get", "+hgetall")
	stopped := redistest.ForTest(t)
	if err := stopped.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		cfg    redislock.Config
		want   []string
		rounds int // rounds of reads to check the problem stays
	}{
		{"unreachable", redislock.Config{Addrs: []string{stopped.Addr()}},
			[]string{"redis " + stopped.Addr(), "connection refused", "check that the server is up"}, 0},
		{"wrong password", redislock.Config{Addrs: []string{srv.Addr()}, Username: "no-numsub", Password: "wrong"},
			[]string{"redis " + srv.Addr(), "WRONGPASS", "--redis-password"}, 0},
		{"missing privilege", redislock.Config{Addrs: []string{srv.Addr()}, Username: "no-numsub", Password: "pw"},
			[]string{"redis " + srv.Addr(), "NOPERM", "pubsub|numsub", "docs/services.md"}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Names = roNames
			var logs syncBuffer
			tc.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			r, s := startReader(t, tc.cfg)
			snap := s.waitSnap(t, "ro-hash", "an error", func(s lockqueue.Snapshot) bool { return s.Error != "" })
			var err error
			waitUntil(t, "Err", func() bool { err = r.Err(); return err != nil })
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) || !strings.Contains(snap.Error, w) {
					t.Errorf("Err %q / snapshot error %q lack %q", err, snap.Error, w)
				}
			}
			if r.Connection() == lockqueue.Connected || snap.Live() {
				t.Errorf("connection %s, snapshot live %v: want neither", r.Connection(), snap.Live())
			}
			// The problem stays named, and logged once, while another
			// lock of the master reads well: five more rounds of reads
			// (ro-string's time left changes on each).
			for i := range tc.rounds {
				n := s.count("ro-string")
				waitUntil(t, fmt.Sprintf("round %d", i), func() bool { return s.count("ro-string") > n })
				if err := r.Err(); err == nil || !strings.Contains(err.Error(), tc.want[1]) {
					t.Errorf("round %d: Err = %v, want %s still", i, err, tc.want[1])
				}
			}
			// Counted by the problem's own words: a busy machine may time
			// out a read too, a second problem rightly logged.
			if n := problemLines(logs.String(), tc.want[1]); n != 1 {
				t.Errorf("%d log lines of the problem, want 1:\n%s", n, logs.String())
			}
		})
	}
}

// problemLines counts the "not readable" lines of logs that name problem.
func problemLines(logs, problem string) int {
	n := 0
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "redis master not readable") && strings.Contains(line, problem) {
			n++
		}
	}
	return n
}

// A Redlock with one of three masters down still shows who holds a
// majority; the snapshot and Err name the master that is down.
func TestRedlockMasterDown(t *testing.T) {
	srvs := redistest.NForTest(t, 3)
	for _, srv := range srvs[:2] {
		cli(t, srv.Addr(), "SET", "shipping", "tok-A", "NX", "PX", "600000")
	}
	if err := srvs[2].Stop(); err != nil {
		t.Fatal(err)
	}
	r, s := startReader(t, redislock.Config{Addrs: addrs(srvs), Names: []string{"shipping"}})
	snap := s.waitSnap(t, "shipping", "A holding 2 of 3, the third named as down", func(s lockqueue.Snapshot) bool {
		h, ok := holder(s)
		return ok && h.Client() == "tok-A" && strings.Contains(s.Error, "redis "+srvs[2].Addr())
	})
	if h, _ := holder(snap); !strings.Contains(h.Data, srvs[2].Addr()+": not readable") {
		t.Errorf("holder's breakdown %q does not say the third master is not readable", h.Data)
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), srvs[2].Addr()) || strings.Contains(err.Error(), srvs[0].Addr()) {
		t.Errorf("Err = %v, want the third master alone", err)
	}
}

// Watch refuses a name that is no Redis key a lock could have.
func TestWatchBadName(t *testing.T) {
	r, err := redislock.NewReader(redislock.Config{Addrs: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Watch(""); err == nil {
		t.Error("Watch(\"\") = nil")
	}
	if _, err := redislock.NewReader(redislock.Config{Addrs: []string{"127.0.0.1:1", "127.0.0.1:1"}}); err == nil {
		t.Error("NewReader with a master given twice = nil error")
	}
}

// syncBuffer is a strings.Builder the reader's goroutines may log to.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
