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
	"github.com/zklockviz/zklockviz/pglocal"
	"github.com/zklockviz/zklockviz/redislocal"
)

// discoveredLocks is what the discovery tests read of GET /api/v1/locks.
type discoveredLocks struct {
	Totals struct {
		Locks, Held, Contended, Alerting, Pending int
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
	pg := pglocal.ForTest(t)
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
		!strings.Contains(lock.Nodes[1].Data, `"application":"disc-waiter"`) || lock.Nodes[1].WaitsForSource != lockqueue.ByServer {
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
			m := redislocal.ForTestWith(t, redislocal.Options{Args: tc.args}).Addr()
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
				len(lock.Nodes) != 1 || !lock.Nodes[0].Holding || lock.Nodes[0].Client != "tok-B" {
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
	m := redislocal.ForTestWith(t, redislocal.Options{Args: []string{"--notify-keyspace-events", "KEA"}}).Addr()
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
