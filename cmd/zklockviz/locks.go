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
// "postgres:advisory/42"). They are the registry's names, listed here
// because flags are read before any service is built; a name whose service
// is not given (no --etcd for etcd:) is refused by serveConfig.
var lockServiceNames = []string{lockqueue.ZooKeeper, "etcd", "redis", "postgres"}

// serviceLock is one --watch or --watch-under value: a lock of a service.
type serviceLock struct {
	Service string // a lockServiceNames entry
	Name    string // the lock in the service's own terms
}

// parseServiceLock reads a service-qualified lock: when the text before
// the first ':' is a service's name, the rest is that service's lock;
// anything else is a ZooKeeper path, as --watch always took.
func parseServiceLock(v string) serviceLock {
	if svc, name, ok := strings.Cut(v, ":"); ok && slices.Contains(lockServiceNames, svc) {
		return serviceLock{Service: svc, Name: name}
	}
	return serviceLock{Service: lockqueue.ZooKeeper, Name: v}
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
