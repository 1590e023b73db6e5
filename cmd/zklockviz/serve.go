package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/internal/heaptune"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/metrics"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/web"
	"github.com/zklockviz/zklockviz/zkwatch"
	"github.com/zklockviz/zklockviz/zookeeper/zksim"
)

const defaultAddr = "127.0.0.1:8080"

const serveUsage = `Usage: zklockviz serve [--zk HOST:PORT[,HOST:PORT...][/chroot]] [--etcd URL[,URL...]]
                       [--redis HOST:PORT...] [--postgres DSN] [flags]
       At least one service; ZooKeeper locks and --sim need --zk.

Watches locks read-only and serves the live view at --addr: ZooKeeper lock
parent znodes, etcd lock prefixes (concurrency.Mutex, etcdctl lock), Redis
lock keys (SET NX PX, Redisson, Redlock over several masters) and
PostgreSQL advisory and row locks, side by side. zklockviz never writes to
any of them (the simulator, when enabled with --sim, writes only under
--sim-root on ZooKeeper). However many browsers look, it keeps one watch per
ZooKeeper lock parent (persistent and recursive on ZooKeeper 3.6+, a
children watch before; never the whole tree), one watch per etcd lock
prefix, one read of each Redis lock per master per --poll (or on its
keyspace events), and reads PostgreSQL with one query per --poll.

Flags (repeatable ones may be given many times):
  --zk HOST:PORT[,...][/chroot]  the ensemble; every member, so that the watch
                                 table of each can be read (env ZKLOCKVIZ_ZK)
  --zk-timeout DURATION          how long each member may take to give a
                                 session at startup (default 5s; env
                                 ZKLOCKVIZ_ZK_TIMEOUT); when none does, serve
                                 exits 1 saying what failed at each address
  --addr HOST:PORT               where to serve (default 127.0.0.1:8080; env
                                 ZKLOCKVIZ_ADDR; port 0 picks a free one)
  --watch LOCK                   a lock to watch (repeatable): a ZooKeeper lock
                                 parent /path, or SERVICE:NAME for another
                                 service, e.g. etcd:/locks/orders
  --watch-under PREFIX           find locks below PREFIX (repeatable): lock
                                 parents up to 4 levels below a ZooKeeper
                                 /prefix; etcd:/prefix finds etcd locks by
                                 their keys' names (read every 30 --poll);
                                 postgres:advisory every advisory lock of the
                                 database held or waited on, postgres:rows
                                 every table whose row locks are waited for
                                 (both in the one query per --poll);
                                 redis:PATTERN the keys matching a SCAN MATCH
                                 glob such as redis:lock:* (see
                                 --redis-scan-count). A lock found shows like
                                 a named one, and leaves when nothing holds or
                                 waits on it
  --discover-limit N             how many folders below the ZooKeeper
                                 --watch-under prefixes get a children watch
                                 each, with children watches (ZooKeeper before
                                 3.6; default 2000); the dashboard and
                                 /api/v1/locks say how many were left unread.
                                 On 3.6+ one watch per prefix sees every folder.
                                 Also how many keys --watch-under redis:PATTERN
                                 follows at most
  --zk-children-watches          keep to one-shot children watches, as with
                                 ZooKeeper before 3.6, instead of persistent
                                 recursive watches (3.6+)
  --zk-admin URL                 AdminServer base URL of a member, e.g.
                                 http://zk1:8080 (repeatable, one per member);
                                 used instead of four-letter words
  --zk-auth SCHEME:CREDENTIAL    ZooKeeper credentials for lock parents whose
                                 ACL needs them, e.g. digest:user:password
                                 (env ZKLOCKVIZ_ZK_AUTH; sent again on every
                                 reconnect)
  --zk-tls                       connect to ZooKeeper with TLS: --zk then names
                                 each member's secureClientPort; the
                                 four-letter words go over TLS too
  --zk-tls-ca FILE               PEM CA certificates to trust (default: the
                                 system's); implies --zk-tls
  --zk-tls-cert FILE --zk-tls-key FILE
                                 PEM client certificate and key, for members
                                 with ssl.clientAuth=need; imply --zk-tls
  --zk-tls-insecure-skip-verify  do not verify the members' certificates
                                 (testing only); implies --zk-tls
  --etcd URL[,URL...]            etcd's client URLs, e.g. http://etcd1:2379 (env
                                 ZKLOCKVIZ_ETCD); HOST:PORT means http://, or
                                 https:// with a --etcd-tls-* flag. Its locks
                                 are concurrency.Mutex / etcdctl lock / recipes
                                 RWMutex prefixes: --watch etcd:/locks/orders
  --etcd-user USER --etcd-password PASSWORD
                                 etcd credentials (env ZKLOCKVIZ_ETCD_USER,
                                 ZKLOCKVIZ_ETCD_PASSWORD; prefer the
                                 environment for the password); a role with
                                 read on each lock prefix is all it needs
  --etcd-tls-ca FILE             PEM CA certificates to trust for https://
                                 endpoints (env ZKLOCKVIZ_ETCD_TLS_CA)
  --etcd-tls-cert FILE --etcd-tls-key FILE
                                 PEM client certificate and key, for etcd with
                                 --client-cert-auth (env ZKLOCKVIZ_ETCD_TLS_CERT,
                                 ZKLOCKVIZ_ETCD_TLS_KEY)
  --redis HOST:PORT              a Redis master (repeatable, or a comma list;
                                 env ZKLOCKVIZ_REDIS): several are one Redlock,
                                 held by whoever holds a majority. Its locks
                                 are keys: --watch redis:orders-lock
  --redis-user USER --redis-password PASSWORD
                                 Redis ACL user and password (env
                                 ZKLOCKVIZ_REDIS_USER, ZKLOCKVIZ_REDIS_PASSWORD;
                                 prefer the environment for the password);
                                 --redis-password alone is requirepass's
  --redis-db N                   the database the Redis locks are keys of, on
                                 every master (env ZKLOCKVIZ_REDIS_DB; default
                                 0): --watch redis:NAME, --watch-under
                                 redis:PATTERN and keyspace events
                                 (__keyspace@N__) are its; redis://HOST:PORT/3
                                 is --redis HOST:PORT --redis-db 3
  --redis-tls                    connect to Redis with TLS (tls-port)
  --redis-tls-ca FILE            PEM CA certificates to trust (env
                                 ZKLOCKVIZ_REDIS_TLS_CA); implies --redis-tls
  --redis-tls-cert FILE --redis-tls-key FILE
                                 PEM client certificate and key, for
                                 tls-auth-clients yes (env
                                 ZKLOCKVIZ_REDIS_TLS_CERT, _KEY); imply
                                 --redis-tls
  --redis-tls-insecure-skip-verify
                                 do not verify Redis's certificate (testing
                                 only); implies --redis-tls
  --redis-scan-count N           --watch-under redis:PATTERN walks each
                                 master's keyspace with one SCAN cursor
                                 MATCH PATTERN COUNT N per pattern per --poll
                                 (default 1000): about N keys looked at per
                                 --poll, 1,000 keys/s by default, so 1,000,000
                                 keys take about 17 minutes a walk; walked
                                 again when it ends. With keyspace events on,
                                 a key set is found at once (PSUBSCRIBE)
  --leases /path=N               lease limit of an N-holder queue or Curator
                                 semaphore, which ZooKeeper does not store
                                 (repeatable)
  --poll DURATION                how often the servers' watch tables are read
                                 (default 1s; wchp/wchc cost the server, so
                                 keep it modest on big ensembles), and etcd's
                                 leases' time left (one LeaseTimeToLive per
                                 lease per poll)
  --stall-grace DURATION         how long a holder's session may keep watching
                                 another node of its lock before it is a
                                 stalled holder (default two --poll; env
                                 ZKLOCKVIZ_STALL_GRACE)
  --session-timeout DURATION     the watcher's ZooKeeper session timeout
                                 (default 10s)
  --postgres DSN                 a PostgreSQL to read advisory and row locks
                                 from, read-only, e.g.
                                 postgres://viz@db1:5432/app?sslmode=verify-full
                                 (env ZKLOCKVIZ_POSTGRES); TLS by sslmode,
                                 sslrootcert, sslcert, sslkey in the DSN; the
                                 role needs only pg_monitor. Watch
                                 advisory/KEY, advisory/KEY1/KEY2 or
                                 table/SCHEMA.TABLE (--watch postgres:NAME, or
                                 POST /api/v1/watch with "service":"postgres");
                                 polled every --poll
  --postgres-password PASSWORD   the role's password, kept out of the DSN (env
                                 ZKLOCKVIZ_POSTGRES_PASSWORD; PGPASSWORD and
                                 ~/.pgpass work too)
  --postgres-long-wait DURATION  alert on a wait longer than this (default
                                 30s; 0 turns it off)
  --postgres-idle-alert DURATION alert on a holder idle in a transaction
                                 longer than this (default 10s; 0: off)
  --sim                          enable the simulator (writes under --sim-root)
  --sim-root /path               the simulator's sandbox (default /zklockviz/sim)
  --allowed-origin PATTERN       an extra origin allowed to open websockets and
                                 POST, e.g. viz.example.com or
                                 https://*.example.com (repeatable)
  --auth-token TOKEN             require this token on every request but
                                 /healthz: "Authorization: Bearer TOKEN", or
                                 basic auth with TOKEN as password (env
                                 ZKLOCKVIZ_TOKEN)
  --insecure                     allow a non-loopback --addr without a token
  --shutdown-timeout DURATION    bound on a graceful stop (default 10s)
` + historyUsage + `  --log-level LEVEL              debug, info, warn or error (default info)
  --log-format FORMAT            text or json (default text)

Production, read-only:
  The actual watches come from each member's watch table. Either whitelist the
  four-letter words zklockviz reads, in every member's zoo.cfg:
      4lw.commands.whitelist=wchp,wchc,cons,dump,mntr,ruok,srvr
  or point --zk-admin at every member's AdminServer (admin.serverPort; on by
  default at 8080, and not covered by the whitelist). Without either the
  queues, holders and waiters still show; whom each waiter really watches
  shows as unknown. Children watches are never listed by ZooKeeper: herd-style
  waiters show as "children". zklockviz's session needs only read (r) on the
  lock parents and their nodes (--zk-auth when an ACL asks for credentials).

  PostgreSQL: one query per --poll reads every watched lock from pg_locks,
  pg_stat_activity and pg_blocking_pids, in a session that is read-only
  (default_transaction_read_only=on). A role with pg_monitor and nothing else
  is enough:
      CREATE ROLE viz LOGIN PASSWORD '...' IN ROLE pg_monitor;
  and pass the password in ZKLOCKVIZ_POSTGRES_PASSWORD. --watch-under
  postgres:advisory and postgres:rows widen the same query: no query is added
  per lock found, and pg_locks is bounded by the server's own lock table
  (max_locks_per_transaction x max_connections). Only the DSN's database is
  read, and a row lock shows only while someone waits for it: pg_locks keeps
  no row for a row lock nobody waits for. Whom each waiter waits
  for is PostgreSQL's own answer (pg_blocking_pids), shown as confirmed. An
  unreachable server or a refused login shows on the dashboard, on its locks
  and in the log; the other services keep working.

  etcd: zklockviz keeps one watch per lock prefix and reads the leases of its
  keys; it never writes. An etcd user whose role has read on the prefixes
  is enough:
      etcdctl role add zklockviz
      etcdctl role grant-permission zklockviz read --prefix /locks/
      etcdctl user add zklockviz && etcdctl user grant-role zklockviz zklockviz
  etcd keeps no list of watchers: whom each waiter waits for is the recipe's
  rule (the key with the next lower create revision), shown as inferred. An
  unreachable etcd or a refused login shows on its locks and in the log; the
  other services keep working.
  Redis: zklockviz reads each watched lock's key on every master with TYPE,
  PTTL, GET or HGETALL and PUBSUB NUMSUB (Redisson's waiters), once per
  --poll, or on keyspace events when notify-keyspace-events has them on
  (read with CONFIG GET, never set). It never writes. An ACL user with
      ACL SETUSER zklockviz on >PASSWORD ~* resetchannels -@all +ping +type
        +pttl +get +hgetall +pubsub|numsub +info
  is enough (+select with --redis-db); add +config|get +subscribe
  &__keyspace@0__:* (@N with --redis-db N) for keyspace events, and +scan
  +dbsize (+psubscribe with keyspace events) for --watch-under redis:PATTERN.
  Each pattern costs each master one SCAN of --redis-scan-count keys per
  --poll, and a TYPE for each key it matches not yet followed; each key found
  is then read like a named lock. Spin-lock waiters (redsync, SET NX retries)
  leave no trace on the server: only holders show, with their time left, per
  master.

  zklockviz binds 127.0.0.1 by default. To serve other hosts, set a token (or
  put it behind an authenticating proxy and pass --insecure).

  Memory: unless GOGC is set, serve gives Go's collector a headroom of 48 MiB
  or half the live heap, whichever is more (GOGC between 400 and 50, set
  from the live heap after each collection). A small server collects rarely;
  a big one (a queue of 100,000 nodes makes tens of MB of short-lived
  garbage) peaks near 1.5 times its live heap, the peak a container's memory
  limit sees. GOGC=100 (Go's default) trades memory for less CPU.

Examples:
  zklockviz serve --zk zk1:2181,zk2:2181,zk3:2181 --watch-under /locks
  zklockviz serve --zk zk1:2181/myapp --watch /locks/orders --watch /locks/billing
  zklockviz serve --zk zk1:2181,zk2:2181 --zk-admin http://zk1:8080 --zk-admin http://zk2:8080 --watch-under /locks
  ZKLOCKVIZ_TOKEN=$(openssl rand -hex 16) zklockviz serve --zk zk1:2181 --addr 0.0.0.0:8080 --watch-under /locks
  zklockviz serve --etcd http://etcd1:2379,http://etcd2:2379 --watch etcd:/locks/orders
  zklockviz serve --zk zk1:2181 --watch-under /locks --postgres 'postgres://viz@db1:5432/app?sslmode=verify-full' --watch postgres:advisory/42 --watch postgres:table/public.orders
  ZKLOCKVIZ_ETCD_PASSWORD=... zklockviz serve --zk zk1:2181 --watch-under /locks --etcd https://etcd1:2379 --etcd-user zklockviz --etcd-tls-ca ca.pem --watch-under etcd:/locks
  ZKLOCKVIZ_REDIS_PASSWORD=... zklockviz serve --redis r1:6379 --redis r2:6379 --redis r3:6379 --redis-user zklockviz --watch redis:orders-lock
  zklockviz serve --postgres 'postgres://viz@db1:5432/app' --watch-under postgres:advisory --watch-under postgres:rows --redis r1:6379 --watch-under 'redis:lock:*'

Endpoints: / (locks), /lock?path=, /api/v1/locks, /api/v1/lock?path=
(&service=etcd, postgres or redis for another service's lock),
POST /api/v1/watch {"path":"/x"}, DELETE /api/v1/watch?path=/x, /ws?path= (live), /healthz, /metrics,
/api/v1/version;
history: /api/v1/lock?path=&at=, /api/v1/lock/history?path=&from=&to=,
/api/v1/lock/stats?path=&from=&to=, /api/v1/history/locks,
/api/v1/lock/export?path=&from=&to= (an incident as one offline HTML file);
/lock?path=&at= opens the lock view at a past moment.
`

// serveConfig is serve's validated command line.
type serveConfig struct {
	Servers         []string
	Chroot          string
	ZKTimeout       time.Duration
	Addr            string
	Watch           []string
	WatchUnder      []string
	DiscoverLimit   int
	ChildrenWatches bool
	AdminURLs       []string
	ZKAuth          []zkwatch.Auth
	ZKTLS           *tls.Config
	Leases          map[string]int
	Poll            time.Duration
	StallGrace      time.Duration
	SessionTimeout  time.Duration
	Sim             bool
	SimRoot         string
	AllowedOrigins  []string
	AuthToken       string
	Insecure        bool
	ShutdownTimeout time.Duration
	LogLevel        slog.Level
	LogJSON         bool
	// Etcd is the etcd reader's configuration; nil without --etcd.
	Etcd     *etcdConfig
	Postgres pgConfig
	History  historyConfig
	// Redis is the Redis reader's configuration; nil without --redis.
	Redis *redisConfig
}

// serveFlags is serve's command line as given; config checks it.
type serveFlags struct {
	conn                                  zkConnFlags
	etcd                                  etcdFlags
	tls                                   zkTLSFlags
	redis                                 redisFlags
	addr, zkAuth, simRoot, token          string
	level, format                         string
	watch, under, admin, leases, origins  listFlag
	poll, sessionTimeout, shutdownTimeout time.Duration
	// stallGrace unset: the watcher uses two polls.
	stallGrace    optDuration
	sim, insecure bool
	discoverLimit int
	childWatches  bool
	pg            pgFlags
	history       historyFlags
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	f.conn.register(fs)
	f.tls.register(fs)
	f.etcd.register(fs)
	f.redis.register(fs)
	fs.StringVar(&f.addr, "addr", defaultAddr, "")
	fs.Var(&f.watch, "watch", "")
	fs.Var(&f.under, "watch-under", "")
	fs.IntVar(&f.discoverLimit, "discover-limit", zkwatch.DefaultDiscoverLimit, "")
	fs.BoolVar(&f.childWatches, "zk-children-watches", false, "")
	fs.Var(&f.admin, "zk-admin", "")
	fs.Var(&f.leases, "leases", "")
	fs.StringVar(&f.zkAuth, "zk-auth", "", "")
	fs.DurationVar(&f.poll, "poll", zkwatch.DefaultPoll, "")
	fs.Var(&f.stallGrace, "stall-grace", "")
	fs.DurationVar(&f.sessionTimeout, "session-timeout", zkwatch.DefaultSessionTimeout, "")
	fs.BoolVar(&f.sim, "sim", false, "")
	fs.StringVar(&f.simRoot, "sim-root", defaultSimRoot, "")
	fs.Var(&f.origins, "allowed-origin", "")
	fs.StringVar(&f.token, "auth-token", "", "")
	fs.BoolVar(&f.insecure, "insecure", false, "")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "")
	fs.StringVar(&f.level, "log-level", "info", "")
	fs.StringVar(&f.format, "log-format", "text", "")
	f.pg.register(fs)
	f.history.register(fs)
}

// config checks the flags and builds serve's configuration.
func (f *serveFlags) config() (serveConfig, error) {
	c := serveConfig{
		ZKTimeout: f.conn.timeout, Addr: f.addr, Poll: f.poll,
		SessionTimeout: f.sessionTimeout, Sim: f.sim, SimRoot: f.simRoot, AllowedOrigins: f.origins,
		AuthToken: f.token, Insecure: f.insecure, ShutdownTimeout: f.shutdownTimeout, StallGrace: f.stallGrace.d,
		DiscoverLimit: f.discoverLimit, ChildrenWatches: f.childWatches,
	}
	if err := f.lockConfig(&c); err != nil {
		return c, err
	}
	if err := f.zkConfig(&c); err != nil {
		return c, err
	}
	err := errors.Join(positive("poll", f.poll), positive("session-timeout", f.sessionTimeout),
		positive("shutdown-timeout", f.shutdownTimeout), checkSimRoot(f.simRoot), checkDiscoverLimit(f.discoverLimit))
	if err != nil {
		return c, err
	}
	if f.stallGrace.set && f.stallGrace.d <= 0 {
		return c, fmt.Errorf("--stall-grace %v: want a positive duration such as 2s", f.stallGrace.d)
	}
	if c.LogLevel, c.LogJSON, err = parseLog(f.level, f.format); err != nil {
		return c, err
	}
	if c.History, err = f.history.config(); err != nil {
		return c, err
	}
	return c, checkExposure(f.addr, f.token, f.insecure)
}

func checkDiscoverLimit(n int) error {
	if n < 1 {
		return fmt.Errorf("--discover-limit %d: want a positive number of folders such as %d", n, zkwatch.DefaultDiscoverLimit)
	}
	return nil
}

// lockConfig reads the locks to watch and the other lock services (each
// classServices line's readConfig) into c, and checks that each lock's
// service is given.
func (f *serveFlags) lockConfig(c *serveConfig) error {
	var err error
	var watch, under serviceLocks
	if c.Watch, watch, err = splitLocks("--watch", f.watch); err != nil {
		return err
	}
	if c.WatchUnder, under, err = splitLocks("--watch-under", f.under); err != nil {
		return err
	}
	given := map[string]bool{}
	for _, svc := range classServices {
		if svc.readConfig == nil {
			continue
		}
		if given[svc.name], err = svc.readConfig(f, c, watch[svc.name], under[svc.name]); err != nil {
			return err
		}
	}
	return errors.Join(checkGiven("--watch", watch, given), checkGiven("--watch-under", under, given))
}

// readEtcdConfig reads --etcd and its locks (classService.readConfig).
func readEtcdConfig(f *serveFlags, c *serveConfig, watch, under []string) (bool, error) {
	var err error
	c.Etcd, err = f.etcd.config(watch, under)
	return c.Etcd != nil, err
}

// readPostgresConfig reads --postgres and its locks.
func readPostgresConfig(f *serveFlags, c *serveConfig, watch, under []string) (bool, error) {
	var err error
	c.Postgres, err = f.pg.config(watch, under)
	return c.Postgres.DSN != "", err
}

// readRedisConfig reads --redis and its locks.
func readRedisConfig(f *serveFlags, c *serveConfig, watch, under []string) (bool, error) {
	var err error
	c.Redis, err = f.redis.config(watch, under)
	return c.Redis != nil, err
}

// zkConfig reads ZooKeeper's connection into c: --zk may be left out when
// another service is given, serve then shows that service's locks alone.
func (f *serveFlags) zkConfig(c *serveConfig) error {
	var err error
	others := c.Etcd != nil || c.Postgres.DSN != "" || c.Redis != nil
	if f.conn.zk != "" || !others {
		if c.Servers, c.Chroot, err = f.conn.parse(); err != nil {
			if f.conn.zk == "" {
				err = fmt.Errorf("%w, or another lock service (--etcd URL, --postgres DSN, --redis HOST:PORT)", err)
			}
			return err
		}
	}
	if len(c.Servers) == 0 && (len(c.Watch) > 0 || len(c.WatchUnder) > 0 || f.sim) {
		return errors.New("ZooKeeper locks and --sim need --zk HOST:PORT (a lock of another service is named SERVICE:NAME, e.g. etcd:/locks/orders)")
	}
	if c.AdminURLs, err = parseAdminURLs(f.admin); err != nil {
		return err
	}
	if c.Leases, err = parseLeases(f.leases); err != nil {
		return err
	}
	if c.ZKAuth, err = parseZKAuth(f.zkAuth); err != nil {
		return fmt.Errorf("--zk-auth: %w", err)
	}
	c.ZKTLS, err = f.tls.config()
	return err
}

// Main is the serve command: parse, run, close. Tests drive it in-process
// on port 0.
type Main struct {
	Config serveConfig
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment defaults; os.Getenv when nil.
	Getenv func(string) string

	log     *slog.Logger
	hub     *hub.Hub
	watcher *zkwatch.Watcher
	hist    historyRun
	waits   *crossWaits
	// services are the lock services served, each registered once
	// (registerServices); their readers run and close with Main.
	services *lockservice.Registry
	web      *web.Server
	http     *http.Server
	ln       net.Listener
	stopSim  func() error
	cancel   context.CancelFunc
	errc     chan error
	closeMu  sync.Mutex
	closed   bool
}

// NewMain returns a Main writing to stdout and stderr.
func NewMain(stdout, stderr io.Writer) *Main {
	return &Main{Stdout: stdout, Stderr: stderr}
}

// ParseFlags reads serve's command line into m.Config. Errors wrap
// *usageError; --help prints the usage and returns errHelp.
func (m *Main) ParseFlags(args []string) error {
	getenv := m.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f.register(fs)
	if err := parseFlags(fs, args, getenv, serveUsage, m.Stdout); err != nil {
		return err
	}
	c, err := f.config()
	if err != nil {
		return usagef("%v", err)
	}
	m.Config = c
	return nil
}

// parseAdminURLs reads --zk-admin values, each one URL or a comma list.
func parseAdminURLs(values []string) ([]string, error) {
	var urls []string
	for _, a := range values {
		for u := range strings.SplitSeq(a, ",") {
			pu, err := url.Parse(u)
			if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
				return nil, fmt.Errorf("--zk-admin %q: want an AdminServer base URL such as http://zk1:8080", u)
			}
			urls = append(urls, strings.TrimSuffix(u, "/"))
		}
	}
	return urls, nil
}

// parseLeases reads --leases /path=N values.
func parseLeases(values []string) (map[string]int, error) {
	leases := map[string]int{}
	for _, l := range values {
		p, n, ok := strings.Cut(l, "=")
		limit, err := strconv.Atoi(n)
		if !ok || err != nil || limit < 1 {
			return nil, fmt.Errorf("--leases %q: want /path=N with N >= 1", l)
		}
		if err := zkwatch.ValidatePath(p); err != nil {
			return nil, fmt.Errorf("--leases: %w", err)
		}
		leases[p] = limit
	}
	return leases, nil
}

// parseLog reads --log-level and --log-format.
func parseLog(level, format string) (lvl slog.Level, json bool, err error) {
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return lvl, false, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	switch format {
	case "text":
		return lvl, false, nil
	case "json":
		return lvl, true, nil
	}
	return lvl, false, fmt.Errorf("--log-format %q: want text or json", format)
}

// checkExposure refuses a non-loopback --addr without a token, unless
// --insecure says something in front authenticates.
func checkExposure(addr, token string, insecure bool) error {
	loopback, err := isLoopback(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if !loopback && token == "" && !insecure {
		return fmt.Errorf("--addr %s is reachable from other hosts; set --auth-token (or ZKLOCKVIZ_TOKEN), or pass --insecure if something in front authenticates", addr)
	}
	return nil
}

// parseZK splits "host:port,host:port/chroot".
func parseZK(s string) (servers []string, chroot string, err error) {
	if strings.TrimSpace(s) == "" {
		return nil, "", errors.New("missing --zk HOST:PORT[,HOST:PORT...][/chroot] (or ZKLOCKVIZ_ZK)")
	}
	hosts, root, hasRoot := strings.Cut(s, "/")
	if hasRoot {
		chroot = "/" + root
		if err := zkwatch.ValidatePath(chroot); err != nil {
			return nil, "", fmt.Errorf("--zk chroot: %w", err)
		}
		if chroot == "/" {
			chroot = ""
		}
	}
	for h := range strings.SplitSeq(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, "", fmt.Errorf("--zk %q: empty server in the list", s)
		}
		host, port := h, "2181" // a bare host means the default client port, as zkCli allows
		if strings.Contains(h, ":") {
			var err error
			if host, port, err = net.SplitHostPort(h); err != nil {
				return nil, "", fmt.Errorf("--zk %q: bad server %q, want HOST:PORT ([v6addr]:PORT for IPv6)", s, h)
			}
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" || strings.ContainsAny(host, " \t[]") {
			return nil, "", fmt.Errorf("--zk %q: bad server %q, want HOST:PORT", s, h)
		}
		servers = append(servers, net.JoinHostPort(host, port))
	}
	return servers, chroot, nil
}

// isLoopback reports whether addr only listens on loopback.
func isLoopback(addr string) (bool, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, errors.New("want HOST:PORT, e.g. 127.0.0.1:8080")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return false, fmt.Errorf("bad port %q", port)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// Run checks that ZooKeeper answers, then starts the watcher and the HTTP
// server and returns once both are under way; Err reports a failure after
// that. Call Close to stop.
func (m *Main) Run(ctx context.Context) error {
	c := m.Config
	h := m.startLog()
	m.hub = hub.New()
	if err := m.startHistory(ctx); err != nil {
		return err
	}
	m.waits = newCrossWaits(m.publishLive, m.hub.Has)
	if len(c.Servers) > 0 {
		if err := m.startWatcher(ctx); err != nil {
			return errors.Join(err, m.closeHistory())
		}
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel
	go m.waits.run(runCtx)
	sim, err := m.newSim(runCtx)
	if err != nil {
		return err
	}
	if err := m.registerServices(sim); err != nil {
		return err
	}
	if m.web, err = m.newWeb(); err != nil {
		return err
	}
	if m.ln, err = net.Listen("tcp", c.Addr); err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			// ZooKeeper's AdminServer listens on 8080 by default too.
			return fmt.Errorf("listen on %s: another program listens there (ZooKeeper's AdminServer takes 8080 by default); give --addr another port, e.g. --addr 127.0.0.1:9090: %w", c.Addr, err)
		}
		return fmt.Errorf("listen on %s: %w", c.Addr, err)
	}
	m.serve(runCtx, h)
	m.log.Info("serving", "addr", m.Addr(), "zk", strings.Join(c.Servers, ","), "chroot", c.Chroot,
		"watch", c.Watch, "watchUnder", c.WatchUnder, "etcd", c.Etcd.endpoints(), "redis", c.Redis.addrs(), "sim", c.Sim, "auth", c.AuthToken != "")
	fmt.Fprintf(m.Stderr, "listening on %s\n", m.URL())
	return nil
}

// startWatcher checks that ZooKeeper answers and starts watching its
// locks.
func (m *Main) startWatcher(ctx context.Context) error {
	if err := m.checkZK(ctx); err != nil {
		return err
	}
	c := m.Config
	w, err := zkwatch.New(zkwatch.Config{
		Servers: c.Servers, Chroot: c.Chroot, SessionTimeout: c.SessionTimeout,
		Paths: c.Watch, Prefixes: c.WatchUnder, Leases: c.Leases, Publish: m.readerSink(serversCluster(c.Servers, c.Chroot)),
		Poll: c.Poll, StallGrace: c.StallGrace, AdminURLs: c.AdminURLs, Logger: m.log,
		Auth: c.ZKAuth, TLS: c.ZKTLS, Forget: m.hub.Remove,
		DiscoverLimit: c.DiscoverLimit, ChildrenWatchesOnly: c.ChildrenWatches,
	})
	if err != nil {
		return fmt.Errorf("%s reader: %w", lockqueue.ZooKeeper, err)
	}
	m.watcher = w
	return nil
}

// serve runs the services' readers and the HTTP server on m.ln until
// runCtx ends or Close; their errors arrive on m.errc.
func (m *Main) serve(runCtx context.Context, h slog.Handler) {
	m.http = &http.Server{
		Handler:           m.web,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(h, slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return runCtx },
	}
	// Shutdown does not close hijacked connections: the websockets.
	m.http.RegisterOnShutdown(m.web.CloseWebsockets)

	// One slot per reader and one for the HTTP server: a failing
	// goroutine never blocks on a full channel.
	m.errc = make(chan error, len(m.services.All())+1)
	for _, svc := range m.services.All() {
		if svc.Reader == nil {
			continue
		}
		go func() {
			if err := svc.Reader.Run(runCtx); err != nil {
				m.errc <- fmt.Errorf("%s reader: %w", svc.Name, err)
			}
		}()
	}
	go func() {
		if err := m.http.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.errc <- fmt.Errorf("http: %w", err)
		}
	}()
}

// startLog sets up the log (the process's default too) and returns its
// handler.
func (m *Main) startLog() slog.Handler {
	var h slog.Handler
	opts := &slog.HandlerOptions{Level: m.Config.LogLevel}
	if m.Config.LogJSON {
		h = slog.NewJSONHandler(m.Stderr, opts)
	} else {
		h = slog.NewTextHandler(m.Stderr, opts)
	}
	m.log = slog.New(h)
	slog.SetDefault(m.log)
	return h
}

// checkZK fails unless a member gives a session within --zk-timeout, and
// warns of each member that does not: a member down is an ensemble's
// normal state, but worth knowing of.
func (m *Main) checkZK(ctx context.Context) error {
	c := m.Config
	timeout := cmp.Or(c.ZKTimeout, defaultZKTimeout)
	results, err := checkZK(ctx, zkTarget{Servers: c.Servers, TLS: c.ZKTLS, Auth: c.ZKAuth, Timeout: timeout})
	if err != nil {
		return err
	}
	for _, r := range results {
		if r.Kind != probeOK {
			what, check := r.describe(timeout)
			m.log.Warn("ZooKeeper member not reachable; serving from the others", "server", r.Server, "problem", what, "check", check)
		}
	}
	return nil
}

// newSim starts the classroom's simulator when --sim is on; nil when off.
func (m *Main) newSim(ctx context.Context) (*simulator.Manager, error) {
	c := m.Config
	if !c.Sim {
		return nil, nil
	}
	sim, stop, err := newSim(ctx, simDeps{
		Servers: c.Servers, Chroot: c.Chroot, Root: c.SimRoot, Hub: m.hub, Logger: m.log,
	})
	if err != nil {
		return nil, err // newSim's errors say "simulator: " already
	}
	m.stopSim = stop
	return sim, nil
}

// labRunner is the Lab page's runner when --sim is on (a server that
// starts throwaway runs for its viewers); nil when off. Its progress lines
// are dropped: each run's errors are in its report.
func (m *Main) labRunner() web.LabRunner {
	if !m.Config.Sim {
		return nil
	}
	return labPageRunner(io.Discard)
}

// newWeb builds the web server over the registered services.
func (m *Main) newWeb() (*web.Server, error) {
	c := m.Config
	now, synced := m.historyStatus()
	srv, err := web.New(web.Config{
		Hub: m.hub, Services: m.services, History: m.historySource(), HistoryStatus: now, HistorySynced: synced,
		Pages: true, Classroom: c.Sim, Lab: m.labRunner(),
		Metrics: metrics.Handler(metrics.Config{Hub: m.hub, Services: m.services.All,
			Extra: append(m.historyCollectors(), buildInfoMetric(build())), Cluster: c.History.Cluster}),
		Build:          build(),
		AllowedOrigins: c.AllowedOrigins, AuthToken: c.AuthToken, Logger: m.log,
	})
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	return srv, nil
}

// closeReaders closes every registered reader; before registration (Run
// failed early), the watcher alone.
func (m *Main) closeReaders() {
	if m.services == nil {
		if m.watcher != nil {
			m.watcher.Close()
		}
		return
	}
	for _, svc := range m.services.All() {
		if svc.Reader != nil {
			svc.Reader.Close()
		}
	}
}

// Addr is the address the server listens on, once Run has returned.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// URL is the server's base URL.
func (m *Main) URL() string { return "http://" + m.Addr() }

// Err receives a failure of the server or watcher after Run.
func (m *Main) Err() <-chan error { return m.errc }

// Close stops serving: it closes every websocket with StatusGoingAway, lets
// requests finish within the shutdown timeout, and stops the watcher and
// simulator. It is safe to call more than once.
func (m *Main) Close() error {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	if m.closed || m.cancel == nil {
		return nil
	}
	m.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownTimeout)
	defer cancel()
	var errs []error
	if m.http != nil {
		if err := m.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		if err := m.web.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if m.stopSim != nil {
		// A shutdown after ZooKeeper went away is still a clean shutdown:
		// say what is left behind, and fail only for anything else.
		for _, err := range joined(m.stopSim()) {
			if errors.Is(err, zksim.ErrSandboxLeft) {
				m.log.Warn(err.Error())
				continue
			}
			errs = append(errs, err)
		}
	}
	m.cancel()
	m.closeReaders()
	if err := m.closeHistory(); err != nil {
		errs = append(errs, err)
	}
	m.log.Info("stopped")
	return errors.Join(errs...)
}

// joined lists the errors errors.Join put together (err itself when it is
// no join; none when nil).
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, joined(e)...)
		}
		return out
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// tuneCollector sets the collector's target for a long-running server
// from its live heap (heaptune), unless the environment sets one.
func tuneCollector(ctx context.Context, getenv func(string) string) {
	if getenv("GOGC") == "" {
		heaptune.Start(ctx, heaptune.Default)
	}
}

// runServe is the serve command.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	tuneCollector(ctx, getenv)
	m := NewMain(stdout, stderr)
	m.Getenv = getenv
	if err := m.ParseFlags(args); err != nil {
		return err
	}
	return serveUntilDone(ctx, m)
}

// serveUntilDone runs m until ctx ends (a signal) or it fails, then closes it.
func serveUntilDone(ctx context.Context, m *Main) error {
	if err := m.Run(ctx); err != nil {
		return errors.Join(err, m.Close())
	}
	var runErr error
	select {
	case <-ctx.Done():
		m.log.Info("shutting down", "reason", context.Cause(ctx))
	case runErr = <-m.Err():
	}
	return errors.Join(runErr, m.Close())
}

// simDeps is what serve --sim hands the simulator (newSim, in sim.go).
type simDeps struct {
	// Servers and Chroot are the ensemble, as given to --zk.
	Servers []string
	Chroot  string
	// Root is the sandbox the simulator may write under (--sim-root).
	Root string
	// Hub receives the simulator's snapshots; Remove finished runs.
	Hub    *hub.Hub
	Logger *slog.Logger
}
