// Package etcdlock is etcd behind the lock-service seam: a read-only live
// reader of the locks etcd's own recipes make (client/v3/concurrency's
// Mutex, which `etcdctl lock` uses, and client/v3/experimental/recipes'
// RWMutex). A lock is a key prefix; its queue is the keys under
// "<prefix>/" in create-revision order (lockqueue.BuildEtcd holds the
// rules).
//
// Per watched prefix the reader keeps ONE watch (WithPrefix, WithPrevKV)
// and, after every (re)connect or compaction, one sorted Get to resync;
// once per --poll it asks LeaseTimeToLive once per distinct lease across
// all locks. None of that depends on how many browsers look. It never
// writes: a user with a read-only role on the prefixes is enough.
package etcdlock

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Name is the service's registry name: ?service=etcd, --watch etcd:/prefix.
const Name = lockqueue.Etcd

// Defaults of Config.
const (
	DefaultPoll    = time.Second
	DefaultTimeout = 3 * time.Second
)

// maxName bounds a lock prefix; etcd's own default request limit is
// 1.5 MiB, but no lock name comes near this.
const maxName = 1024

// Config is the reader's configuration.
type Config struct {
	// Endpoints are etcd's client URLs, e.g. http://etcd1:2379.
	Endpoints []string
	// Username and Password authenticate when etcd has auth enabled.
	Username, Password string
	// TLS, when set, is used for https:// endpoints.
	TLS *tls.Config
	// Prefixes are the locks to watch from the start.
	Prefixes []string
	// Under are prefixes below which the reader finds locks by their keys'
	// names (read keys only, at startup and every 30 polls).
	Under []string
	// Poll is how often leases' time left is read. Default DefaultPoll.
	Poll time.Duration
	// Timeout bounds connecting and each request. Default DefaultTimeout.
	Timeout time.Duration
	// Publish receives every snapshot. Required.
	Publish lockservice.Sink
	// Forget, when set, is told a lock's key (LockID.Key) once unwatched.
	Forget func(key string)
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if len(c.Endpoints) == 0 {
		return c, errors.New("etcd: no endpoint given")
	}
	if c.Publish == nil {
		return c, errors.New("etcd: Config.Publish is required")
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	c.Logger = cmp.Or(c.Logger, slog.Default())
	for _, p := range append(append([]string{}, c.Prefixes...), c.Under...) {
		if err := CheckName(p); err != nil {
			return c, err
		}
	}
	return c, nil
}

// CheckName checks an etcd lock prefix: the name given to
// concurrency.NewMutex, recipe.NewRWMutex or `etcdctl lock`, under which
// the recipes put "<name>/<key>". Any UTF-8 text is an etcd key, so the
// rules only keep out what no lock is named: empty, a trailing "/" (the
// recipes add their own), control characters, very long names.
func CheckName(name string) error {
	switch {
	case name == "":
		return badName(name, "empty: want the prefix given to the lock, e.g. /locks/orders")
	case strings.HasSuffix(name, "/"):
		return badName(name, "drop the trailing /: the recipes add it and put their keys under <name>/")
	case len(name) > maxName:
		return badName(name, fmt.Sprintf("longer than %d bytes", maxName))
	case !utf8.ValidString(name):
		return badName(name, "not valid UTF-8")
	case strings.ContainsFunc(name, unicode.IsControl):
		return badName(name, "has a control character")
	}
	return nil
}

func badName(name, why string) error {
	return fmt.Errorf("%w: etcd lock prefix %q: %s", lockservice.ErrBadName, name, why)
}

// Service is etcd for the registry; r nil when not connected.
func Service(r *Reader) lockservice.Service {
	s := lockservice.Service{Name: Name, Title: "etcd", CheckName: CheckName, Words: Words()}
	if r != nil {
		s.Reader = r
	}
	return s
}

// LockID is the hub's id of the etcd lock prefix.
func LockID(prefix string) lockqueue.LockID { return lockqueue.LockID{Service: Name, Name: prefix} }

// AddrOf names the endpoints as an error names the service's address.
func AddrOf(endpoints []string) string {
	out := make([]string, len(endpoints))
	for i, e := range endpoints {
		out[i] = strings.TrimPrefix(strings.TrimPrefix(e, "http://"), "https://")
	}
	return strings.Join(out, ",")
}
