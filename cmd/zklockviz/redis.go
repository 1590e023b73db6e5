package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/redis/redislock"
)

// redisFlags are serve's --redis* flags.
type redisFlags struct {
	addrs             envList
	user, password    string
	tlsOn, skipVerify bool
	ca, cert, key     string
	scanCount         int
	db                int
}

func (f *redisFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.addrs, "redis", "")
	fs.StringVar(&f.user, "redis-user", "", "")
	fs.StringVar(&f.password, "redis-password", "", "")
	fs.BoolVar(&f.tlsOn, "redis-tls", false, "")
	fs.StringVar(&f.ca, "redis-tls-ca", "", "")
	fs.StringVar(&f.cert, "redis-tls-cert", "", "")
	fs.StringVar(&f.key, "redis-tls-key", "", "")
	fs.BoolVar(&f.skipVerify, "redis-tls-insecure-skip-verify", false, "")
	fs.IntVar(&f.scanCount, "redis-scan-count", redislock.DefaultScanCount, "")
	fs.IntVar(&f.db, "redis-db", 0, "")
}

// redisConfig is serve's Redis reader; nil without --redis.
type redisConfig struct {
	// Addrs are the masters; several are one Redlock.
	Addrs              []string
	Username, Password string
	TLS                *tls.Config
	// DB is the database of every master's locks (--redis-db).
	DB int
	// Names are the Redis locks of --watch redis:NAME.
	Names []string
	// Patterns are the key patterns of --watch-under redis:PATTERN,
	// walked with SCAN COUNT ScanCount.
	Patterns  []string
	ScanCount int
}

// config checks the flags, the Redis locks named by --watch and the key
// patterns of --watch-under; nil without --redis.
func (f redisFlags) config(names, patterns []string) (*redisConfig, error) {
	tlsGiven := f.tlsOn || f.skipVerify || f.ca != "" || f.cert != "" || f.key != ""
	if len(f.addrs.values) == 0 {
		if f.user != "" || f.password != "" || tlsGiven || f.db != 0 {
			return nil, fmt.Errorf("--redis-user, --redis-password, --redis-db and --redis-tls* need --redis HOST:PORT")
		}
		return nil, nil
	}
	if f.user != "" && f.password == "" {
		return nil, fmt.Errorf("--redis-user %s needs --redis-password (or ZKLOCKVIZ_REDIS_PASSWORD)", f.user)
	}
	c := &redisConfig{Username: f.user, Password: f.password, Names: names, Patterns: patterns, ScanCount: f.scanCount, DB: f.db}
	if f.db < 0 {
		return nil, fmt.Errorf("--redis-db %d: want a database number, 0 (the default) or more, as SELECT takes it", f.db)
	}
	if f.scanCount < 1 {
		return nil, fmt.Errorf("--redis-scan-count %d: want a positive SCAN COUNT such as %d", f.scanCount, redislock.DefaultScanCount)
	}
	var err error
	if c.Addrs, err = parseRedisAddrs(f.addrs.values); err != nil {
		return nil, err
	}
	if tlsGiven {
		if c.TLS, err = tlsFromFiles("--redis-tls", f.ca, f.cert, f.key, f.skipVerify); err != nil {
			return nil, err
		}
		c.TLS = cmp.Or(c.TLS, &tls.Config{MinVersion: tls.VersionTLS12})
	}
	for _, n := range names {
		if err := redislock.CheckName(n); err != nil {
			return nil, fmt.Errorf("--watch redis:%s: %w", n, err)
		}
	}
	for _, p := range patterns {
		if err := redislock.CheckPattern(p); err != nil {
			return nil, fmt.Errorf("--watch-under redis:%s: %w", p, err)
		}
	}
	return c, nil
}

// parseRedisAddrs reads the --redis values, each HOST:PORT or a comma
// list of them; a bare host is port 6379. A master named twice would
// count twice toward a Redlock's majority, so it is refused. A URL's
// parts each have a flag of their own, which the error names.
func parseRedisAddrs(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		for a := range strings.SplitSeq(v, ",") {
			a = strings.TrimSpace(a)
			if strings.Contains(a, "/") {
				return nil, fmt.Errorf("--redis %q: want HOST:PORT, not a URL: give the database as --redis-db N "+
					"(redis://HOST:PORT/3 is --redis HOST:PORT --redis-db 3), a user and password as --redis-user "+
					"and ZKLOCKVIZ_REDIS_PASSWORD, rediss:// as --redis-tls", a)
			}
			host, port := a, "6379"
			if strings.Contains(a, ":") {
				var err error
				if host, port, err = net.SplitHostPort(a); err != nil {
					return nil, fmt.Errorf("--redis %q: want HOST:PORT ([v6addr]:PORT for IPv6)", a)
				}
			}
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" || strings.ContainsAny(host, " \t[]/") {
				return nil, fmt.Errorf("--redis %q: want HOST:PORT, e.g. redis1:6379", a)
			}
			addr := net.JoinHostPort(host, port)
			for _, o := range out {
				if o == addr {
					return nil, fmt.Errorf("--redis %s given twice: each master counts once toward a Redlock's majority", addr)
				}
			}
			out = append(out, addr)
		}
	}
	return out, nil
}

// newRedisReader builds the Redis reader of --redis; nil without it.
func (m *Main) newRedisReader() (*redislock.Reader, error) {
	c := m.Config.Redis
	if c == nil {
		return nil, nil
	}
	// go-redis logs its pool's dial failures on its own, unstructured;
	// the reader names them (once per problem) in the log already.
	redis.SetLogger(redisDebugLog{m.log})
	r, err := redislock.NewReader(redislock.Config{
		Addrs: c.Addrs, Username: c.Username, Password: c.Password, TLS: c.TLS, DB: c.DB,
		Poll: m.Config.Poll, Names: c.Names, Publish: m.readerSink(serversCluster(c.Addrs, c.dbSuffix())), Logger: m.log,
		Patterns: c.Patterns, ScanCount: c.ScanCount, DiscoverLimit: m.Config.DiscoverLimit, Forget: m.hub.Remove,
	})
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	return r, nil
}

// registerRedis registers Redis with its reader (--redis) and its
// classroom (serve --sim), each when there is one, so that ?service=redis
// says what to give when neither is.
func (m *Main) registerRedis() error {
	r, err := m.newRedisReader()
	if err != nil {
		return err
	}
	return m.registerService(redislock.Service(r, nil))
}

// dbSuffix tells the history's cluster of a database other than 0 from
// database 0's on the same masters: a key of one is not the other's.
func (c *redisConfig) dbSuffix() string {
	if c.DB == 0 {
		return ""
	}
	return "/" + strconv.Itoa(c.DB)
}

// redisAddrs are c's masters for the log; none when c is nil.
func (c *redisConfig) addrs() []string {
	if c == nil {
		return nil
	}
	return c.Addrs
}

// redisDebugLog puts go-redis's own log lines at debug level.
type redisDebugLog struct{ log *slog.Logger }

func (l redisDebugLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, fmt.Sprintf(format, v...), "service", redislock.Name, "from", "go-redis")
}

// envList is a repeatable flag whose environment default the command line
// replaces rather than adds to: ZKLOCKVIZ_REDIS=a with --redis b is b
// alone, not a two-master Redlock.
type envList struct {
	values  []string
	fromEnv bool
}

func (l *envList) String() string { return strings.Join(l.values, ",") }

func (l *envList) Set(v string) error {
	if l.fromEnv {
		l.values, l.fromEnv = nil, false
	}
	l.values = append(l.values, v)
	return nil
}

// setByEnvironment marks the values as the environment's default.
func (l *envList) setByEnvironment() { l.fromEnv = true }
