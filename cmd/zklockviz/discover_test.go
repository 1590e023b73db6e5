package main

import (
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
	"github.com/zklockviz/zklockviz/redis/redislocal"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
)

// discoveredLocks is what the discovery tests read of GET /api/v1/locks.
type discoveredLocks struct {
	Totals struct {
		Locks, Held, Contended, Alerting, Pending int
		Found, WithNodes                          int
	} `json:"totals"`
	Locks []struct {
		Service string   `json:"service"`
		Path    string   `json:"path"`
		Holders []string `json:"holders"`
		Waiters []string `json:"waiters"`
	} `json:"locks"`
	Unexplored []struct {
		Service, Flag, Message string
		Folders, Limit         int
	} `json:"unexplored"`
}

// listLocks reads GET url into a fresh *d: a field the answer leaves
// out (unexplored, when nothing is) must not keep an earlier value.
func listLocks(t *testing.T, url string, d *discoveredLocks) bool {
	t.Helper()
	*d = discoveredLocks{}
	return getJSON(t, url, d) == 200
}

// paths lists the locks' paths in the order the page gives them.
func (d discoveredLocks) paths() []string {
	var out []string
	for _, l := range d.Locks {
		out = append(out, l.Path)
	}
	return out
}

// has reports whether path is listed with holders and waiters.
func (d discoveredLocks) has(path string, holders, waiters int) bool {
	for _, l := range d.Locks {
		if l.Path == path {
			return len(l.Holders) == holders && len(l.Waiters) == waiters
		}
	}
	return false
}

// dashboard is the dashboard page's HTML.
func dashboard(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unwatch asks DELETE /api/v1/watch and returns the status and body.
func unwatch(t *testing.T, base, service, name string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, base+"/api/v1/watch?service="+service+"&path="+name, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// serve --watch-under postgres:advisory and postgres:rows: locks nobody
// named are found as psql sessions take them (a bigint key, a negative
// one, two int4 keys, a row lock with a waiter), listed in /api/v1/locks
// and on the dashboard with the same totals and "needs a look" order as
// any other lock, and leave when nothing holds or waits on them.
func TestServePostgresDiscovery(t *testing.T) {
	pg := pgtest.ForTest(t)
	if out, err := exec.Command("psql", "-X", "-q", "-d", pg.DSN(), "-c",
		"CREATE TABLE public.jobs (id int PRIMARY KEY); INSERT INTO public.jobs VALUES (1), (2);").CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	s := startServe(t, "--addr", "127.0.0.1:0", "--postgres", pg.DSN(), "--poll", "100ms",
		"--watch-under", "postgres:advisory", "--watch-under", "postgres:rows")
	list := s.url + "/api/v1/locks?service=postgres&sort=alerts"

	holder := holdingPsql(t, pg.DSN()+"&application_name=disc-holder", "SELECT pg_advisory_lock(7001);")
	holdingPsql(t, pg.DSN()+"&application_name=disc-split", "SELECT pg_advisory_lock(-5); SELECT pg_advisory_lock(3, 4);")
	rowHolder := holdingPsql(t, pg.DSN()+"&application_name=disc-row-holder", "BEGIN; SELECT id FROM public.jobs WHERE id = 1 FOR UPDATE;")
	var got discoveredLocks
	waitFor(t, "the held locks found", func() bool {
		return listLocks(t, list, &got) && got.has("advisory/7001", 1, 0) && got.has("advisory/-5", 1, 0) && got.has("advisory/3/4", 1, 0)
	})
	waiter := holdingPsql(t, pg.DSN()+"&application_name=disc-waiter", "SELECT pg_advisory_lock(7001);")
	holdingPsql(t, pg.DSN()+"&application_name=disc-row-waiter", "BEGIN; SELECT id FROM public.jobs WHERE id = 1 FOR UPDATE;")
	waitFor(t, "the waiters, and the row lock found through its waiter", func() bool {
		return listLocks(t, list, &got) && got.has("advisory/7001", 1, 1) && got.has("table/public.jobs", 1, 1)
	})
	if tot := got.Totals; tot.Locks != 4 || tot.Held != 4 || tot.Contended != 2 || tot.Pending != 0 {
		t.Errorf("totals %+v, want 4 locks, 4 held, 2 contended, none pending: %v", tot, got.paths())
	}
	// The locks that need a look come first: the two that are waited for.
	if first := got.paths()[:2]; !slices.Contains(first, "advisory/7001") || !slices.Contains(first, "table/public.jobs") {
		t.Errorf("sort=alerts begins with %v, want the contended locks first (%v)", first, got.paths())
	}
	if len(got.Unexplored) != 0 {
		t.Errorf("unexplored %+v: pg_locks is read whole", got.Unexplored)
	}

	// A discovered lock reads like a named one.
	var lock lockqueue.Snapshot
	if code := getJSON(t, s.url+"/api/v1/lock?service=postgres&path=advisory/7001", &lock); code != 200 {
		t.Fatalf("GET the discovered lock: %d", code)
	}
	if len(lock.Nodes) != 2 || !strings.Contains(lock.Nodes[0].Data, `"application":"disc-holder"`) ||
		!strings.Contains(lock.Nodes[1].Data, `"application":"disc-waiter"`) || lock.Nodes[1].WaitsForSource() != lockqueue.ByServer {
		t.Errorf("advisory/7001 nodes %+v", lock.Nodes)
	}
	page := dashboard(t, s.url)
	for _, p := range []string{"advisory/7001", "advisory/-5", "advisory/3/4", "table/public.jobs"} {
		if !strings.Contains(page, p) {
			t.Errorf("the dashboard does not list %s", p)
		}
	}
	if code, body := unwatch(t, s.url, "postgres", "advisory/-5"); code != http.StatusConflict || !strings.Contains(body, "--watch-under postgres:advisory") {
		t.Errorf("DELETE a discovered lock's watch: %d %s, want 409 naming how it was found", code, body)
	}

	// Released: the waiter holds; then nothing holds or waits, and the
	// lock leaves the list, the totals and the dashboard.
	holder.Process.Kill()
	waitFor(t, "the waiter to hold", func() bool { return listLocks(t, list, &got) && got.has("advisory/7001", 1, 0) })
	waiter.Process.Kill()
	rowHolder.Process.Kill()
	waitFor(t, "advisory/7001 and the row lock to leave", func() bool {
		return listLocks(t, list, &got) && !slices.Contains(got.paths(), "advisory/7001") && !slices.Contains(got.paths(), "table/public.jobs")
	})
	if tot := got.Totals; tot.Locks != 2 || tot.Held != 2 || tot.Contended != 0 {
		t.Errorf("totals %+v after the releases, want the 2 locks still held: %v", tot, got.paths())
	}
	if code := getJSON(t, s.url+"/api/v1/lock?service=postgres&path=advisory/7001", nil); code != http.StatusNotFound {
		t.Errorf("GET a lock gone: %d, want 404", code)
	}
	if page := dashboard(t, s.url); strings.Contains(page, "advisory/7001") {
		t.Errorf("the dashboard still lists advisory/7001 after its release")
	}
}

// A --watch-under value postgres or redis cannot discover is refused
// before serve starts, saying what it can.
func TestWatchUnderBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--postgres", "postgres://viz@db1/app", "--watch-under", "postgres:nope"}, `--watch-under postgres:nope: invalid lock name "nope" for postgres discovery: want advisory`},
		{[]string{"--postgres", "postgres://viz@db1/app", "--watch-under", "postgres:"}, "want advisory"},
		{[]string{"--redis", "r1:6379", "--watch-under", "redis:"}, "--watch-under redis:: invalid lock name: a key pattern cannot be empty"},
		{[]string{"--redis", "r1:6379", "--watch-under", "redis:lock *"}, "spaces"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			m := NewMain(io.Discard, io.Discard)
			m.Getenv = func(string) string { return "" }
			err := m.ParseFlags(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseFlags = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// redisOut runs redis-cli against addr and returns its output.
func redisOut(t *testing.T, addr string, args ...string) string {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// fillKeys sets n keys named prefix0… with one MSET per 1,000.
func fillKeys(t *testing.T, addr, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i += 1000 {
		args := []string{"MSET"}
		for j := i; j < min(n, i+1000); j++ {
			args = append(args, prefix+strconv.Itoa(j), "x")
		}
		redisCLI(t, addr, args...)
	}
}

// calls is how many times INFO commandstats says cmd was called.
func calls(stats, cmd string) int {
	for line := range strings.SplitSeq(stats, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// serve --watch-under redis:lock:*: keys redis-cli sets with SET NX PX are
// found, those set before serve started by the walk of the keyspace (SCAN
// over several polls), those set later by the walk or, where the server
// sends keyspace events, at once; a key of another type is no lock. They
// are listed with the same totals as any lock, on the dashboard too, and
// leave when deleted. The reader wrote nothing.
func TestServeRedisDiscovery(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"polling", nil},
		{"keyspace events", []string{"--notify-keyspace-events", "KEA"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := redistest.ForTestWith(t, redislocal.Options{Args: tc.args}).Addr()
			fillKeys(t, m, "cache:", 500)
			redisCLI(t, m, "SET", "lock:a", "tok-A", "NX", "PX", "600000")
			redisCLI(t, m, "RPUSH", "lock:list", "not-a-lock")
			s := startServe(t, "--addr", "127.0.0.1:0", "--redis", m, "--poll", "100ms",
				"--watch-under", "redis:lock:*", "--redis-scan-count", "50")
			list := s.url + "/api/v1/locks?service=redis"

			var got discoveredLocks
			waitFor(t, "lock:a found by the walk", func() bool { return listLocks(t, list, &got) && got.has("lock:a", 1, 0) })
			redisCLI(t, m, "SET", "lock:b", "tok-B", "NX", "PX", "600000")
			waitFor(t, "lock:b found, and the walk ended", func() bool {
				return listLocks(t, list, &got) && got.has("lock:b", 1, 0) && len(got.Unexplored) == 0
			})
			if tot := got.Totals; tot.Locks != 2 || tot.Held != 2 || tot.Contended != 0 || slices.Contains(got.paths(), "lock:list") {
				t.Errorf("totals %+v, locks %v: want lock:a and lock:b held, and no list", tot, got.paths())
			}
			var lock lockqueue.Snapshot
			if code := getJSON(t, s.url+"/api/v1/lock?service=redis&path=lock:b", &lock); code != 200 ||
				len(lock.Nodes) != 1 || !lock.Nodes[0].Holding || lock.Nodes[0].Client() != "tok-B" {
				t.Errorf("GET lock:b: %d, nodes %+v, want tok-B holding", code, lock.Nodes)
			}
			page := dashboard(t, s.url)
			if !strings.Contains(page, "lock:a") || !strings.Contains(page, "lock:b") {
				t.Errorf("the dashboard does not list lock:a and lock:b")
			}
			if code, body := unwatch(t, s.url, "redis", "lock:a"); code != http.StatusConflict || !strings.Contains(body, "--watch-under") {
				t.Errorf("DELETE a found lock's watch: %d %s, want 409 saying how it was found", code, body)
			}

			redisCLI(t, m, "DEL", "lock:a")
			waitFor(t, "lock:a to leave once deleted", func() bool {
				return listLocks(t, list, &got) && !slices.Contains(got.paths(), "lock:a")
			})
			if tot := got.Totals; tot.Locks != 1 || tot.Held != 1 {
				t.Errorf("totals %+v after the release, want lock:b alone: %v", tot, got.paths())
			}
			if code := getJSON(t, s.url+"/api/v1/lock?service=redis&path=lock:a", nil); code != http.StatusNotFound {
				t.Errorf("GET a lock gone: %d, want 404", code)
			}

			stats := redisOut(t, m, "INFO", "commandstats")
			for cmd, want := range map[string]int{"set": 2, "del": 1, "rpush": 1, "mset": 1, "pexpire": 0, "expire": 0,
				"hset": 0, "hincrby": 0, "unlink": 0, "config|set": 0, "flushdb": 0, "flushall": 0} {
				if n := calls(stats, cmd); n != want {
					t.Errorf("%s called %d times, want %d (the test's own): the reader wrote", cmd, n, want)
				}
			}
		})
	}
}

// A keyspace bigger than a few polls' SCANs: until the first walk ends,
// /api/v1/locks and the dashboard say about how many keys it has still to
// look at and the flag that walks faster. Meanwhile a lock key set is
// found at once through the server's keyspace events, not by the walk.
func TestServeRedisDiscoveryUnwalked(t *testing.T) {
	m := redistest.ForTestWith(t, redislocal.Options{Args: []string{"--notify-keyspace-events", "KEA"}}).Addr()
	fillKeys(t, m, "cache:", 20000)
	s := startServe(t, "--addr", "127.0.0.1:0", "--redis", m, "--poll", "200ms",
		"--watch-under", "redis:lock:*", "--redis-scan-count", "10")
	var got discoveredLocks
	// Folders is 1 (at least a key) until DBSIZE has been read.
	waitFor(t, "the unexplored note", func() bool {
		return listLocks(t, s.url+"/api/v1/locks", &got) && len(got.Unexplored) > 0 && got.Unexplored[0].Folders > 1
	})
	u := got.Unexplored[0]
	if u.Service != "redis" || u.Flag != "--redis-scan-count" || u.Limit != 10 || u.Folders < 15000 || u.Folders > 20000 ||
		!strings.Contains(u.Message, "--redis-scan-count") {
		t.Errorf("unexplored %+v, want redis, about 20,000 keys left, 10 a poll, --redis-scan-count", u)
	}
	if page := dashboard(t, s.url); !strings.Contains(page, "keys still to look at") || !strings.Contains(page, "Raise --redis-scan-count") {
		t.Errorf("the dashboard lacks the banner")
	}

	redisCLI(t, m, "SET", "lock:new", "tok-N", "NX", "PX", "600000")
	waitFor(t, "lock:new found by its keyspace event", func() bool {
		return listLocks(t, s.url+"/api/v1/locks", &got) && got.has("lock:new", 1, 0)
	})
	if len(got.Unexplored) == 0 || got.Unexplored[0].Folders < 15000 {
		t.Errorf("unexplored %+v: the walk, 10 keys a poll, cannot have found lock:new", got.Unexplored)
	}
}

// serve --redis-db N reads database N of every master, not 0: the named
// lock's key there, the keys its --watch-under pattern's SCAN walks, and
// its keyspace events (a key set in N found by its event, the walk being
// far from done); a lock of the same name in database 0 is not shown. A
// database the server does not have is an error on the lock, naming the
// flag.
func TestServeRedisDatabase(t *testing.T) {
	m := redistest.ForTestWith(t, redislocal.Options{Args: []string{"--notify-keyspace-events", "KEA", "--databases", "16"}}).Addr()
	in := func(db string, args ...string) {
		t.Helper()
		if out := redisOut(t, m, append([]string{"-n", db}, args...)...); strings.Contains(out, "ERR") {
			t.Fatalf("redis-cli -n %s %v: %s", db, args, out)
		}
	}
	in("0", "SET", "orders-lock", "tok-zero", "NX", "PX", "600000")
	in("0", "SET", "lock:zero", "tok-zero", "NX", "PX", "600000")
	in("3", "SET", "orders-lock", "tok-three", "NX", "PX", "600000")
	in("3", "SET", "lock:three", "tok-three", "NX", "PX", "600000")

	s := startServe(t, "--addr", "127.0.0.1:0", "--redis", m, "--redis-db", "3", "--poll", "100ms",
		"--watch", "redis:orders-lock", "--watch-under", "redis:lock:*")
	var got discoveredLocks
	waitFor(t, "database 3's locks, walked to the end", func() bool {
		return listLocks(t, s.url+"/api/v1/locks?service=redis", &got) && got.has("orders-lock", 1, 0) && got.has("lock:three", 1, 0) &&
			len(got.Unexplored) == 0
	})
	if slices.Contains(got.paths(), "lock:zero") || got.Totals.Locks != 2 {
		t.Errorf("locks %v (totals %+v): want database 3's orders-lock and lock:three alone", got.paths(), got.Totals)
	}
	snap := redisLock(t, s, "orders-lock", "orders-lock held", func(s lockqueue.Snapshot) bool { return len(s.Holders()) == 1 })
	if c := snap.Nodes[0].Client(); c != "tok-three" {
		t.Errorf("orders-lock held by %q, want database 3's tok-three", c)
	}
	waitFor(t, "the named lock's keyspace channel in database 3", func() bool {
		return strings.Contains(redisOut(t, m, "PUBSUB", "CHANNELS", "__keyspace@3__:*"), "__keyspace@3__:orders-lock")
	})
	if ch := strings.TrimSpace(redisOut(t, m, "PUBSUB", "CHANNELS", "__keyspace@0__:*")); ch != "" {
		t.Errorf("subscribed to database 0's keyspace channels %q", ch)
	}

	// Database 5, too big to walk soon at 10 keys a poll: a key set there
	// is found by database 5's keyspace event.
	for i := 0; i < 20000; i += 1000 {
		args := []string{"MSET"}
		for j := i; j < i+1000; j++ {
			args = append(args, "cache:"+strconv.Itoa(j), "x")
		}
		in("5", args...)
	}
	s5 := startServe(t, "--addr", "127.0.0.1:0", "--redis", m, "--redis-db", "5", "--poll", "200ms",
		"--watch-under", "redis:lock:*", "--redis-scan-count", "10")
	waitFor(t, "the walk of database 5 under way", func() bool {
		return listLocks(t, s5.url+"/api/v1/locks", &got) && len(got.Unexplored) > 0 && got.Unexplored[0].Folders > 1
	})
	in("5", "SET", "lock:five", "tok-five", "NX", "PX", "600000")
	waitFor(t, "lock:five found by its keyspace event", func() bool {
		return listLocks(t, s5.url+"/api/v1/locks", &got) && got.has("lock:five", 1, 0)
	})
	if len(got.Unexplored) == 0 || got.Unexplored[0].Folders < 15000 {
		t.Errorf("unexplored %+v: the walk, 10 keys a poll, cannot have found lock:five", got.Unexplored)
	}
	if slices.Contains(got.paths(), "lock:zero") || slices.Contains(got.paths(), "lock:three") {
		t.Errorf("serve --redis-db 5 lists %v: another database's locks", got.paths())
	}

	s16 := startServe(t, "--addr", "127.0.0.1:0", "--redis", m, "--redis-db", "16", "--poll", "100ms", "--watch", "redis:orders-lock")
	snap = redisLock(t, s16, "orders-lock", "the lock's error", func(s lockqueue.Snapshot) bool { return s.Error != "" })
	for _, w := range []string{"redis " + m, "DB index is out of range", "--redis-db is past the server's databases"} {
		if !strings.Contains(snap.Error, w) {
			t.Errorf("serve --redis-db 16 of 16 databases: lock error %q lacks %q", snap.Error, w)
		}
	}
}

// A Redis database given the wrong way is refused before serve starts,
// saying how to give it.
func TestRedisDatabaseBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--redis", "redis://r1:6379/3"}, `--redis "redis://r1:6379/3": want HOST:PORT, not a URL: give the database as --redis-db N (redis://HOST:PORT/3 is --redis HOST:PORT --redis-db 3)`},
		{[]string{"--redis", "r1:6379/3"}, "give the database as --redis-db N"},
		{[]string{"--redis", "r1:6379", "--redis-db", "-1"}, "--redis-db -1: want a database number, 0 (the default) or more"},
		{[]string{"--redis", "r1:6379", "--redis-db", "three"}, `invalid value "three" for flag -redis-db`},
		{[]string{"--redis-db", "3"}, "--redis-db and --redis-tls* need --redis HOST:PORT"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			m := NewMain(io.Discard, io.Discard)
			m.Getenv = func(string) string { return "" }
			err := m.ParseFlags(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseFlags = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
