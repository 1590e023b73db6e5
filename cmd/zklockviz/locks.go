package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/zkwatch"
)

// lockServiceNames are the services a --watch or --watch-under value may
// name before its first ':' ("etcd:/locks/orders", "redis:orders-lock",
// "postgres:advisory/42"): classServices' names, ZooKeeper's first. A name
// whose service is not given (no --etcd for etcd:) is refused by
// serveConfig.
var lockServiceNames = func() []string {
	names := make([]string, len(classServices))
	for i, s := range classServices {
		names[i] = s.name
	}
	return names
}()

// serviceLock is one --watch or --watch-under value: a lock of a service.
type serviceLock struct {
	Service string // a lockServiceNames entry
	Name    string // the lock in the service's own terms
}

// parseServiceLock reads a service-qualified lock: when the text before
// the first ':' is a service's name, the rest is that service's lock;
// anything else is a ZooKeeper path, as --watch always took.
// A service's name is read in any case ("Redis:orders"), as people type it.
func parseServiceLock(v string) serviceLock {
	if svc, name, ok := strings.Cut(v, ":"); ok && slices.Contains(lockServiceNames, strings.ToLower(svc)) {
		return serviceLock{Service: strings.ToLower(svc), Name: name}
	}
	return serviceLock{Service: lockqueue.ZooKeeper, Name: v}
}

// closestService is the service name a mistyped prefix most likely meant
// ("reddis" for redis, "postgresql" or "pg" for postgres), or "" when none
// is close: at most two edits, or a prefix of one another.
func closestService(typed string) string {
	typed = strings.ToLower(typed)
	for _, s := range classServices {
		if slices.Contains(s.aliases, typed) {
			return s.name
		}
	}
	best, bestD := "", 3
	for _, svc := range lockServiceNames {
		if d := editDistance(typed, svc); d < bestD {
			best, bestD = svc, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between two short ASCII words.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// serviceLocks are the locks of each service other than ZooKeeper, by
// service name.
type serviceLocks map[string][]string

// splitLocks parses flagName's values: ZooKeeper paths (checked) and the
// other services' locks, which each service's own config checks.
func splitLocks(flagName string, values []string) (zkPaths []string, others serviceLocks, err error) {
	others = serviceLocks{}
	for _, v := range values {
		l := parseServiceLock(v)
		if l.Service != lockqueue.ZooKeeper {
			others[l.Service] = append(others[l.Service], l.Name)
			continue
		}
		if err := zkwatch.ValidatePath(l.Name); err != nil {
			if typed, rest, ok := strings.Cut(v, ":"); ok {
				if svc := closestService(typed); svc != "" {
					return nil, nil, fmt.Errorf("%s %s: no service %q: did you mean %s:%s? (a lock is a ZooKeeper /path or SERVICE:NAME, SERVICE one of %s)",
						flagName, v, typed, svc, rest, strings.Join(lockServiceNames, ", "))
				}
			}
			return nil, nil, fmt.Errorf("%s: %w (another service's lock is SERVICE:NAME, SERVICE one of %s)",
				flagName, err, strings.Join(lockServiceNames[1:], ", "))
		}
		zkPaths = append(zkPaths, l.Name)
	}
	return zkPaths, others, nil
}

// checkGiven refuses locks of a service whose connection flag is missing.
func checkGiven(flagName string, locks serviceLocks, given map[string]bool) error {
	for _, svc := range lockServiceNames {
		if len(locks[svc]) > 0 && !given[svc] {
			return fmt.Errorf("%s %s:%s: no %s server given: add --%s", flagName, svc, locks[svc][0], svc, svc)
		}
	}
	return nil
}
