// Package redislock is Redis behind the lock-service seam: a live,
// read-only Reader of Redis locks (a string key set with SET NX PX, as
// redsync and redis-cli do; a Redisson hash; several masters read as one
// Redlock) and the Redis classroom.
//
// What a read-only observer can see of a Redis lock is little: the holder's
// token and its time to live, per master; for Redisson, the owner's client
// id and thread, its reentrancy count and how many clients wait on the
// lock's unlock channel. Spin-lock waiters (redsync, SET NX retry loops)
// leave no trace on the server, and no Redis lock keeps an order of
// waiters: the snapshots say so rather than guess.
package redislock

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zklockviz/zklockviz/lockservice"
)

// Name is the service's registry name (?service=redis, --watch redis:KEY).
const Name = "redis"

// maxNameBytes bounds a lock name: Redis allows keys of 512 MB, but a lock
// name travels in URLs, flags and channel names.
const maxNameBytes = 1024

// CheckName checks a lock name: the Redis key as the lock library names it
// (redsync's mutex name, Redisson's lock name). Any key Redis allows is
// fine except an empty one, one that is not UTF-8, one with spaces or
// control characters (they could not be typed in --watch or a URL without
// quoting), or one longer than 1024 bytes.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: a Redis lock name is the lock's key and cannot be empty", lockservice.ErrBadName)
	case len(name) > maxNameBytes:
		return fmt.Errorf("%w: a Redis lock name of %d bytes: at most %d", lockservice.ErrBadName, len(name), maxNameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w %q: a Redis lock name must be UTF-8", lockservice.ErrBadName, name)
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return fmt.Errorf("%w %q: a Redis lock name cannot hold spaces or control characters", lockservice.ErrBadName, name)
	}
	return nil
}

// Service is Redis for the registry. r may be nil (no --redis: a
// classroom-only server), and c may be nil (no classroom); pass an untyped
// nil, not a nil pointer, for no classroom.
func Service(r *Reader, c lockservice.Classroom) lockservice.Service {
	s := lockservice.Service{Name: Name, Title: "Redis", CheckName: CheckName, Classroom: c, Words: Words()}
	if r != nil {
		s.Reader = r
	}
	return s
}
