package zkwatch

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// Config configures a Watcher.
type Config struct {
	// Servers are the ensemble's client addresses, "host:port" (port 2181
	// when left out).
	Servers []string
	// Chroot, when set, is prefixed to every path; paths in snapshots are
	// relative to it.
	Chroot         string
	SessionTimeout time.Duration
	// Paths are lock parents to watch (--watch).
	Paths []string
	// Prefixes are folders below which lock parents are discovered
	// (--watch-under), at most MaxDiscoverDepth levels deep.
	Prefixes []string
	// DiscoverLimit bounds the folders below Prefixes that discovery
	// keeps a children watch on (--discover-limit), when it uses children
	// watches (ZooKeeper before 3.6, or ChildrenWatchesOnly); Discovery
	// counts the folders beyond. Default DefaultDiscoverLimit. With a
	// persistent recursive watch per prefix there is no bound.
	DiscoverLimit int
	// Leases gives the lease limit of N-holder queues by path (--leases).
	Leases map[string]int
	// Publish receives every changed snapshot, whole. It is called from the
	// watcher's goroutines, one call at a time, and must not block long
	// (a hub behind it coalesces) nor call AddPath.
	Publish func(lockqueue.Snapshot)
	// Forget, when set, is called with a lock parent's path once the watcher
	// stops watching it (a discovered parent that went away, after its last
	// snapshot (Exists:false) was published; a path given to RemovePath): a hub behind Publish should drop
	// the path, or it keeps serving it as if it were watched. Called like
	// Publish, one call at a time, and never for a path watched again since.
	Forget func(path string)
	// ChildrenWatchesOnly keeps to one-shot children watches, as before
	// ZooKeeper 3.6, instead of a persistent recursive watch on each lock
	// parent (persist.go). A server that refuses persistent watches gets
	// children watches anyway.
	ChildrenWatchesOnly bool
	// Poll is how often the server's watch table is read. Default 1s.
	Poll time.Duration
	// StallGrace is how long a holder's session may keep watching another
	// node of its lock before the holder counts as stalled (its client
	// missed the wake-up). Default two polls: the table can be a poll
	// older than the listing, so a new holder may seem for a poll to still
	// watch its old predecessor.
	StallGrace time.Duration
	// AdminURLs are AdminServer base URLs, one per member (--zk-admin);
	// when empty the four-letter words on each member's client port are used.
	AdminURLs []string
	// Auth are credentials sent on every session (go-zookeeper's AddAuth,
	// which it sends again after each reconnect), e.g. {Scheme: "digest",
	// Credential: "user:password"}, for lock parents whose ACL needs them.
	Auth []Auth
	// TLS, when set, is used for every connection to the members: the
	// ZooKeeper sessions (through zk.WithDialer) and the four-letter words,
	// which the members answer on their TLS client port as well. --zk must
	// then name each member's secureClientPort. AdminServer URLs are
	// fetched with https when they say so, trusting TLS.RootCAs.
	TLS    *tls.Config
	Logger *slog.Logger
}

// Auth is one credential for ZooKeeper's auth providers.
type Auth struct {
	Scheme     string // "digest"
	Credential string // for digest, "user:password"
}

// checked is a Config with its defaults filled in and every field
// validated, and what New derives from it.
type checked struct {
	Config
	servers []string // "host:port", as go-zookeeper wants them
	root    chroot
}

// check validates cfg and fills in its defaults. Every error names the
// flag-level setting it is about.
func (cfg Config) check() (checked, error) {
	servers, err := checkServers(cfg.Servers)
	if err != nil {
		return checked{}, err
	}
	root := chroot("")
	if cfg.Chroot != "" && cfg.Chroot != "/" {
		if err := ValidatePath(cfg.Chroot); err != nil {
			return checked{}, fmt.Errorf("zkwatch: chroot: %w", err)
		}
		root = chroot(cfg.Chroot)
	}
	if err := cfg.checkDurations(); err != nil {
		return checked{}, err
	}
	if err := checkAdminURLs(cfg.AdminURLs); err != nil {
		return checked{}, err
	}
	if err := checkAuth(cfg.Auth); err != nil {
		return checked{}, err
	}
	if cfg.Leases, err = checkLeases(cfg.Leases); err != nil {
		return checked{}, err
	}
	for _, p := range cfg.Paths {
		if err := ValidatePath(p); err != nil {
			return checked{}, fmt.Errorf("zkwatch: watch: %w", err)
		}
	}
	for _, p := range cfg.Prefixes {
		if err := ValidatePath(p); err != nil {
			return checked{}, fmt.Errorf("zkwatch: watch-under: %w", err)
		}
	}
	if cfg.DiscoverLimit < 0 {
		return checked{}, fmt.Errorf("zkwatch: discover-limit: %d is negative", cfg.DiscoverLimit)
	}
	cfg.DiscoverLimit = cmp.Or(cfg.DiscoverLimit, DefaultDiscoverLimit)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return checked{Config: cfg, servers: servers, root: root}, nil
}

func checkServers(given []string) ([]string, error) {
	if len(given) == 0 {
		return nil, errors.New("zkwatch: no ZooKeeper servers given")
	}
	var servers []string
	for _, s := range given {
		s = strings.TrimSpace(s)
		if s == "" || strings.ContainsAny(s, "/ \t") {
			return nil, fmt.Errorf("zkwatch: bad server address %q: want host:port (give a chroot separately)", s)
		}
		servers = append(servers, s)
	}
	return zk.FormatServers(servers), nil
}

// checkDurations fills in the default session timeout, poll interval and
// stall grace, and refuses negative ones.
func (cfg *Config) checkDurations() error {
	cfg.SessionTimeout = cmp.Or(cfg.SessionTimeout, DefaultSessionTimeout)
	if cfg.SessionTimeout < 0 {
		return fmt.Errorf("zkwatch: negative session timeout %v", cfg.SessionTimeout)
	}
	cfg.Poll = cmp.Or(cfg.Poll, DefaultPoll)
	if cfg.Poll < 0 {
		return fmt.Errorf("zkwatch: negative poll interval %v", cfg.Poll)
	}
	cfg.StallGrace = cmp.Or(cfg.StallGrace, 2*cfg.Poll)
	if cfg.StallGrace < 0 {
		return fmt.Errorf("zkwatch: negative stall grace %v", cfg.StallGrace)
	}
	return nil
}

func checkAdminURLs(urls []string) error {
	for _, u := range urls {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return fmt.Errorf("zkwatch: bad AdminServer URL %q: want http://host:port", u)
		}
	}
	return nil
}

func checkAuth(auth []Auth) error {
	for _, a := range auth {
		if a.Scheme == "" || a.Credential == "" {
			return errors.New("zkwatch: auth: want a scheme and a credential, e.g. digest and user:password")
		}
		if a.Scheme == "digest" && !strings.Contains(a.Credential, ":") {
			return errors.New("zkwatch: auth: a digest credential is user:password")
		}
	}
	return nil
}

// checkLeases returns a copy of given, so a caller changing its map later
// cannot change what the watcher reads without a lock.
func checkLeases(given map[string]int) (map[string]int, error) {
	leases := make(map[string]int, len(given))
	for p, n := range given {
		if err := ValidatePath(p); err != nil {
			return nil, fmt.Errorf("zkwatch: leases: %w", err)
		}
		if n < 0 {
			return nil, fmt.Errorf("zkwatch: leases for %s: %d is negative", p, n)
		}
		leases[p] = n
	}
	return leases, nil
}
