package main

import (
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
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/metrics"
	"github.com/zklockviz/zklockviz/web"
	"github.com/zklockviz/zklockviz/zkwatch"
)

const defaultAddr = "127.0.0.1:8080"

// errHelp is returned when --help was asked for and answered.
var errHelp = errors.New("help shown")

const serveUsage = `Usage: zklockviz serve --zk HOST:PORT[,HOST:PORT...][/chroot] [flags]

Watches lock parent znodes, read-only, and serves the live view at --addr.
zklockviz never writes to your ZooKeeper (the simulator, when enabled with
--sim, writes only under --sim-root). It keeps one children watch per lock
parent however many browsers look, and never watches the whole tree.

Flags (repeatable ones may be given many times):
  --zk HOST:PORT[,...][/chroot]  the ensemble; every member, so that the watch
                                 table of each can be read (env ZKLOCKVIZ_ZK)
  --addr HOST:PORT               where to serve (default 127.0.0.1:8080; env
                                 ZKLOCKVIZ_ADDR; port 0 picks a free one)
  --watch /path                  a lock parent to watch (repeatable)
  --watch-under /prefix          find lock parents up to 4 levels below prefix
                                 (repeatable)
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
  --leases /path=N               lease limit of an N-holder queue or Curator
                                 semaphore, which ZooKeeper does not store
                                 (repeatable)
  --poll DURATION                how often the servers' watch tables are read
                                 (default 1s; wchp/wchc cost the server, so
                                 keep it modest on big ensembles)
  --session-timeout DURATION     the watcher's ZooKeeper session timeout
                                 (default 10s)
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
  --log-level LEVEL              debug, info, warn or error (default info)
  --log-format FORMAT            text or json (default text)

Production, read-only:
  The actual watches come from each member's watch table. Either whitelist the
  four-letter words zklockviz reads, in every member's zoo.cfg:
      4lw.commands.whitelist=wchp,wchc,cons,dump,mntr,ruok,srvr
  or point --zk-admin at every member's AdminServer (admin.serverPort; on by
  default at 8080, and not covered by the whitelist). Without either the
  queues, holders and waiters still show; whom each waiter really watches
  shows as unknown. Children watches are never listed by ZooKeeper: herd-style
  waiters show as "children".

  zklockviz binds 127.0.0.1 by default. To serve other hosts, set a token (or
  put it behind an authenticating proxy and pass --insecure).

Examples:
  zklockviz serve --zk zk1:2181,zk2:2181,zk3:2181 --watch-under /locks
  zklockviz serve --zk zk1:2181/myapp --watch /locks/orders --watch /locks/billing
  zklockviz serve --zk zk1:2181,zk2:2181 --zk-admin http://zk1:8080 --zk-admin http://zk2:8080 --watch-under /locks
  ZKLOCKVIZ_TOKEN=$(openssl rand -hex 16) zklockviz serve --zk zk1:2181 --addr 0.0.0.0:8080 --watch-under /locks

Endpoints: / (locks), /lock?path=, /api/v1/locks, /api/v1/lock?path=,
POST /api/v1/watch {"path":"/x"}, /ws?path= (live), /healthz, /metrics.
`

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// serveConfig is serve's validated command line.
type serveConfig struct {
	Servers         []string
	Chroot          string
	Addr            string
	Watch           []string
	WatchUnder      []string
	AdminURLs       []string
	ZKAuth          []zkwatch.Auth
	ZKTLS           *tls.Config
	Leases          map[string]int
	Poll            time.Duration
	SessionTimeout  time.Duration
	Sim             bool
	SimRoot         string
	AllowedOrigins  []string
	AuthToken       string
	Insecure        bool
	ShutdownTimeout time.Duration
	LogLevel        slog.Level
	LogJSON         bool
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
	web     *web.Server
	http    *http.Server
	ln      net.Listener
	stopSim func() error
	cancel  context.CancelFunc
	errc    chan error
	closeMu sync.Mutex
	closed  bool
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
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		zkFlag, addr, simRoot, token, level, format string
		watch, under, admin, leases, origins        listFlag
		poll, sessionTimeout, shutdownTimeout       time.Duration
		sim, insecure                               bool
	)
	fs.StringVar(&zkFlag, "zk", getenv("ZKLOCKVIZ_ZK"), "")
	fs.StringVar(&addr, "addr", cmpOr(getenv("ZKLOCKVIZ_ADDR"), defaultAddr), "")
	fs.Var(&watch, "watch", "")
	fs.Var(&under, "watch-under", "")
	fs.Var(&admin, "zk-admin", "")
	fs.Var(&leases, "leases", "")
	var zkAuth string
	var zkTLS zkTLSFlags
	fs.StringVar(&zkAuth, "zk-auth", getenv("ZKLOCKVIZ_ZK_AUTH"), "")
	fs.BoolVar(&zkTLS.on, "zk-tls", false, "")
	fs.StringVar(&zkTLS.ca, "zk-tls-ca", "", "")
	fs.StringVar(&zkTLS.cert, "zk-tls-cert", "", "")
	fs.StringVar(&zkTLS.key, "zk-tls-key", "", "")
	fs.BoolVar(&zkTLS.skipVerify, "zk-tls-insecure-skip-verify", false, "")
	fs.DurationVar(&poll, "poll", zkwatch.DefaultPoll, "")
	fs.DurationVar(&sessionTimeout, "session-timeout", zkwatch.DefaultSessionTimeout, "")
	fs.BoolVar(&sim, "sim", false, "")
	fs.StringVar(&simRoot, "sim-root", defaultSimRoot, "")
	fs.Var(&origins, "allowed-origin", "")
	fs.StringVar(&token, "auth-token", getenv("ZKLOCKVIZ_TOKEN"), "")
	fs.BoolVar(&insecure, "insecure", false, "")
	fs.DurationVar(&shutdownTimeout, "shutdown-timeout", 10*time.Second, "")
	fs.StringVar(&level, "log-level", "info", "")
	fs.StringVar(&format, "log-format", "text", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(m.Stdout, serveUsage)
			return errHelp
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (flags start with --)", fs.Arg(0))
	}

	c := serveConfig{
		Addr: addr, Watch: watch, WatchUnder: under, Poll: poll, SessionTimeout: sessionTimeout,
		Sim: sim, SimRoot: simRoot, AllowedOrigins: origins, AuthToken: token, Insecure: insecure,
		ShutdownTimeout: shutdownTimeout, Leases: map[string]int{},
	}
	bad := usagef
	var err error
	if c.Servers, c.Chroot, err = parseZK(zkFlag); err != nil {
		return bad("%v", err)
	}
	for _, p := range watch {
		if err := zkwatch.ValidatePath(p); err != nil {
			return bad("--watch: %v", err)
		}
	}
	for _, p := range under {
		if err := zkwatch.ValidatePath(p); err != nil {
			return bad("--watch-under: %v", err)
		}
	}
	for _, a := range admin {
		for u := range strings.SplitSeq(a, ",") {
			pu, err := url.Parse(u)
			if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
				return bad("--zk-admin %q: want an AdminServer base URL such as http://zk1:8080", u)
			}
			c.AdminURLs = append(c.AdminURLs, strings.TrimSuffix(u, "/"))
		}
	}
	for _, l := range leases {
		p, n, ok := strings.Cut(l, "=")
		limit, err := strconv.Atoi(n)
		if !ok || err != nil || limit < 1 {
			return bad("--leases %q: want /path=N with N >= 1", l)
		}
		if err := zkwatch.ValidatePath(p); err != nil {
			return bad("--leases: %v", err)
		}
		c.Leases[p] = limit
	}
	if c.ZKAuth, err = parseZKAuth(zkAuth); err != nil {
		return bad("--zk-auth: %v", err)
	}
	if c.ZKTLS, err = zkTLS.config(); err != nil {
		return bad("%v", err)
	}
	if poll <= 0 {
		return bad("--poll %v: must be positive", poll)
	}
	if sessionTimeout <= 0 {
		return bad("--session-timeout %v: must be positive", sessionTimeout)
	}
	if shutdownTimeout <= 0 {
		return bad("--shutdown-timeout %v: must be positive", shutdownTimeout)
	}
	if err := checkSimRoot(simRoot); err != nil {
		return bad("%v", err)
	}
	if err := c.LogLevel.UnmarshalText([]byte(level)); err != nil {
		return bad("--log-level %q: want debug, info, warn or error", level)
	}
	switch format {
	case "text":
	case "json":
		c.LogJSON = true
	default:
		return bad("--log-format %q: want text or json", format)
	}
	loopback, err := isLoopback(addr)
	if err != nil {
		return bad("--addr %q: %v", addr, err)
	}
	if !loopback && token == "" && !insecure {
		return bad("--addr %s is reachable from other hosts; set --auth-token (or ZKLOCKVIZ_TOKEN), or pass --insecure if something in front authenticates", addr)
	}
	m.Config = c
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

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Run starts the watcher and the HTTP server and returns once both are
// under way; Err reports a failure after that. Call Close to stop.
func (m *Main) Run(ctx context.Context) error {
	c := m.Config
	var h slog.Handler
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogJSON {
		h = slog.NewJSONHandler(m.Stderr, opts)
	} else {
		h = slog.NewTextHandler(m.Stderr, opts)
	}
	m.log = slog.New(h)
	slog.SetDefault(m.log)
	m.hub = hub.New()
	m.errc = make(chan error, 2)

	w, err := zkwatch.New(zkwatch.Config{
		Servers: c.Servers, Chroot: c.Chroot, SessionTimeout: c.SessionTimeout,
		Paths: c.Watch, Prefixes: c.WatchUnder, Leases: c.Leases, Publish: m.hub.Publish,
		Poll: c.Poll, AdminURLs: c.AdminURLs, Logger: m.log,
		Auth: c.ZKAuth, TLS: c.ZKTLS, Forget: m.hub.Remove,
	})
	if err != nil {
		return fmt.Errorf("watcher: %w", err)
	}
	m.watcher = w

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel

	var simHandler http.Handler
	if c.Sim {
		simHandler, m.stopSim, err = newSim(runCtx, simDeps{
			Servers: c.Servers, Chroot: c.Chroot, Root: c.SimRoot, Hub: m.hub, Logger: m.log,
		})
		if err != nil {
			cancel()
			return err // newSim's errors say "simulator: " already
		}
	}

	srv, err := web.New(web.Config{
		Hub: m.hub, Watcher: w, Sim: simHandler, Pages: web.PageRoutes(m.hub, c.Sim, web.WithWatcher(w)),
		Metrics:        metrics.Handler(metrics.Config{Hub: m.hub, Connection: w.Connection}),
		AllowedOrigins: c.AllowedOrigins, AuthToken: c.AuthToken, Logger: m.log,
	})
	if err != nil {
		cancel()
		return fmt.Errorf("web: %w", err)
	}
	m.web = srv

	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		cancel()
		return fmt.Errorf("listen on %s: %w", c.Addr, err)
	}
	m.ln = ln
	m.http = &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(h, slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return runCtx },
	}
	// Shutdown does not close hijacked connections: the websockets.
	m.http.RegisterOnShutdown(srv.CloseWebsockets)

	go func() {
		if err := w.Run(runCtx); err != nil {
			m.errc <- fmt.Errorf("watcher: %w", err)
		}
	}()
	go func() {
		if err := m.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.errc <- fmt.Errorf("http: %w", err)
		}
	}()
	m.log.Info("serving", "addr", ln.Addr().String(), "zk", strings.Join(c.Servers, ","), "chroot", c.Chroot,
		"watch", c.Watch, "watchUnder", c.WatchUnder, "sim", c.Sim, "auth", c.AuthToken != "")
	fmt.Fprintf(m.Stderr, "listening on %s\n", m.URL())
	return nil
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
		if err := m.stopSim(); err != nil {
			errs = append(errs, fmt.Errorf("simulator: %w", err))
		}
	}
	m.cancel()
	if m.watcher != nil {
		m.watcher.Close()
	}
	m.log.Info("stopped")
	return errors.Join(errs...)
}

// runServe is the serve command.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	m := NewMain(stdout, stderr)
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
