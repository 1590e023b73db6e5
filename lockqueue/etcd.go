package lockqueue

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// etcd's lock recipes, as client/v3/concurrency and
// client/v3/experimental/recipes write them. A lock is a key prefix; each
// contender puts one key under "<prefix>/", attached to its session's lease,
// and etcd orders the keys by create revision. No server-side record says
// who waits on whom: a waiter's watch is invisible to an observer, so every
// edge here is the recipe's rule (ByRule).

// Etcd is etcd's service name.
const Etcd = "etcd"

const (
	// EtcdMutex is concurrency.Mutex, which `etcdctl lock` uses too: key
	// "<prefix>/<lease id in hex>".
	EtcdMutex Recipe = "etcd-mutex"
	// EtcdRWMutex is recipes.RWMutex: keys "<prefix>/read/<unix nanos>"
	// and "<prefix>/write/<unix nanos>".
	EtcdRWMutex Recipe = "etcd-rwmutex"
)

// Alert kinds of etcd locks.
const (
	// AlertLeaseExpiring: a holder's lease has less than half its TTL left.
	// A live session renews at a third of the TTL, so it never gets there:
	// its client stopped renewing (paused, partitioned, dead) and the lock
	// passes on when the lease runs out, whether or not the client is done.
	AlertLeaseExpiring = "lease-expiring"
	// AlertNoLease: a lock key without a lease never goes away on its own:
	// if its client dies the lock stays taken until someone deletes it.
	AlertNoLease = "no-lease"
	// AlertLeaseGone: the key's lease no longer exists but the key does.
	AlertLeaseGone = "lease-gone"
	// AlertHolderExpired: the holder's key went while its lease was
	// running out unrenewed: the lock passed on by expiry, not by
	// release, and the old client, if only paused, may still believe it
	// holds (etcd #10811). Shown until the lock passes on again.
	AlertHolderExpired = "holder-expired"
)

// EtcdKey is one key under an etcd lock prefix, as read from etcd.
type EtcdKey struct {
	// Name is the key below "<prefix>/".
	Name           string
	CreateRevision int64
	Value          []byte
	// Lease is the key's lease id; 0 when it has none.
	Lease int64
	// Lease facts from LeaseTimeToLive: its granted TTL (zero while not
	// read yet) and time left; LeaseGone when etcd no longer knows it.
	LeaseTTL, LeaseLeft time.Duration
	LeaseGone           bool
	// Seen is when the reader saw the key's creation; zero when not known.
	Seen time.Time
	// SeenLate: the key was there before the reader looked (etcd keeps no
	// creation time), so Seen is only when the reader first knew it
	// existed: it was made then or earlier. An RWMutex key's name tells
	// its creation by its client's clock, which is taken instead.
	SeenLate bool
}

// LeaseHex formats an etcd lease id as the Mutex recipe names its key.
func LeaseHex(id int64) string { return strconv.FormatInt(id, 16) }

// etcdMode is what a key's name says under the recipes: a Mutex key is the
// lease in hex, an RWMutex key "read/N" or "write/N"; anything else is no
// lock key of a known recipe.
func etcdMode(name string) (Mode, Recipe, bool) {
	if kind, n, ok := strings.Cut(name, "/"); ok {
		if !allDigits(n) {
			return Unknown, NoRecipe, false
		}
		switch kind {
		case "read":
			return Read, EtcdRWMutex, true
		case "write":
			return Write, EtcdRWMutex, true
		}
		return Unknown, NoRecipe, false
	}
	if _, err := strconv.ParseUint(name, 16, 64); err != nil {
		return Unknown, NoRecipe, false
	}
	return Exclusive, EtcdMutex, true
}

// EtcdLockOf is the lock prefix a full etcd key belongs to when its last
// segments are a recipe's key: "/locks/orders/694d8b2f1c3a5e07" and
// "/locks/rw/write/1700000000" are keys of /locks/orders and /locks/rw.
func EtcdLockOf(key string) (prefix string, ok bool) {
	dir, name, ok := cutLast(key)
	if !ok {
		return "", false
	}
	if parent, kind, ok := cutLast(dir); ok && (kind == "read" || kind == "write") && allDigits(name) {
		return parent, parent != ""
	}
	if _, _, ok := etcdMode(name); !ok || strings.Contains(name, "/") {
		return "", false
	}
	return dir, dir != ""
}

// cutLast splits a key at its last "/".
func cutLast(key string) (dir, name string, ok bool) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", "", false
	}
	return key[:i], key[i+1:], true
}

// rwKeyTime is when an RWMutex key was made, by its client's clock: the
// recipe names it after time.Now().UnixNano().
func rwKeyTime(name string) time.Time {
	_, n, _ := strings.Cut(name, "/")
	ns, err := strconv.ParseInt(n, 10, 64)
	if err != nil || ns <= 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// BuildEtcd works out the queue of the etcd lock prefix from its keys, in
// any order. Like Build it never fails: what fits no recipe becomes a
// foreign node and an alert.
func BuildEtcd(prefix string, keys []EtcdKey) Snapshot {
	s := Snapshot{Service: Etcd, Path: prefix, Exists: true, WatchSource: "none", Alerts: []Alert{}, Nodes: make([]Node, 0, len(keys))}
	recipes := map[Recipe]bool{}
	locks := 0
	for _, k := range keys {
		mode, recipe, ok := etcdMode(k.Name)
		n := Node{
			Name: k.Name, Seq: -1, Mode: mode, Recipe: recipe, Ctime: k.Seen, Rare: &Rare{Order: k.CreateRevision},
			Foreign: !ok, parsed: codeOf(mode),
		}
		if (n.Ctime.IsZero() || k.SeenLate) && recipe == EtcdRWMutex {
			if t := rwKeyTime(k.Name); !t.IsZero() {
				n.Ctime = t
			}
		}
		n.CtimeAtMost = k.SeenLate && n.Ctime.Equal(k.Seen) && !n.Ctime.IsZero()
		if k.Lease != 0 {
			r := n.rare()
			r.LeaseID = LeaseHex(k.Lease)
			r.Client = r.LeaseID
			r.LeaseTTLMs, r.LeaseLeftMs = k.LeaseTTL.Milliseconds(), max(k.LeaseLeft.Milliseconds(), 0)
		}
		n.Data, n.DataBinary = EncodeData(k.Value)
		if ok {
			recipes[recipe] = true
			locks++
		}
		s.Nodes = append(s.Nodes, n)
	}
	// NodeLess puts lock keys first, by create revision (Order), so a
	// websocket client re-sorting a delta gets this same order.
	SortNodes(s.Nodes)
	assignEtcd(s.Nodes[:locks])
	s.Recipe = folderRecipe(recipes)
	s.Alerts = etcdAlerts(s.Nodes[:locks], s.Recipe, keys, s.Nodes[locks:])
	return s
}

// assignEtcd applies the recipes' rules to q, in create-revision order.
// Mutex (and an RWMutex writer): the first key holds; a waiter waits for
// the key with the largest create revision below its own (waitDeletes,
// waitOnLastRev over the whole prefix). RWMutex reader: it holds unless a
// writer's key is older, and waits for the newest such writer
// (waitOnLastRev over "<prefix>/write"): a Mutex key under the same prefix
// does not stop it, which the mixed alert says.
func assignEtcd(q []Node) {
	lastWriter := ""
	for i := range q {
		n := &q[i]
		switch {
		case n.Mode == Read:
			n.Holding = lastWriter == ""
			n.WaitsFor = lastWriter
		case i == 0:
			n.Holding = true
		default:
			n.WaitsFor = q[i-1].Name
		}
		if n.WaitsFor != "" {
			n.SetWaitsForSource(ByRule)
		}
		if n.Mode == Write {
			lastWriter = n.Name
		}
	}
}

// etcdAlerts are the lease alerts of the queue's nodes, plus the keys that
// fit no recipe and a prefix shared by two recipes. keys gives each node's lease facts by name.
func etcdAlerts(q []Node, recipe Recipe, keys []EtcdKey, foreign []Node) []Alert {
	byName := make(map[string]EtcdKey, len(keys))
	for _, k := range keys {
		byName[k.Name] = k
	}
	alerts := []Alert{}
	var noLease, gone []string
	for _, n := range q {
		k := byName[n.Name]
		switch {
		case k.Lease == 0:
			noLease = append(noLease, n.Name)
		case k.LeaseGone:
			gone = append(gone, n.Name)
		case n.Holding && k.LeaseTTL > 0 && k.LeaseLeft < k.LeaseTTL/2:
			alerts = append(alerts, Alert{Kind: AlertLeaseExpiring, Nodes: []string{n.Name}, Message: fmt.Sprintf(
				"holder %s: its lease %s has %s of %s left and is not being renewed (a live session renews at a third of its TTL): its client is paused, cut off or dead, and the lock passes on when the lease runs out",
				n.Name, n.LeaseID(), k.LeaseLeft.Round(time.Millisecond), k.LeaseTTL)})
		}
	}
	if len(noLease) > 0 {
		alerts = append(alerts, Alert{Kind: AlertNoLease, Nodes: noLease, Message: fmt.Sprintf(
			"%s without a lease (%s): such a key never expires, so if its client dies the lock stays taken until someone deletes the key",
			Count(len(noLease), "lock key", "lock keys"), strings.Join(clip(noLease), ", "))})
	}
	if len(gone) > 0 {
		alerts = append(alerts, Alert{Kind: AlertLeaseGone, Nodes: gone, Message: fmt.Sprintf(
			"%s whose lease etcd no longer knows (%s): the key outlived its lease, so no client owns it",
			Count(len(gone), "lock key", "lock keys"), strings.Join(clip(gone), ", "))})
	}
	if recipe == Mixed {
		alerts = append(alerts, Alert{Kind: AlertMixed, Message: "Mutex and RWMutex keys under one prefix: the recipes do not exclude each other (an RWMutex reader ignores Mutex keys), so both can hold at once"})
	}
	if len(foreign) > 0 {
		names := make([]string, len(foreign))
		for i, n := range foreign {
			names[i] = n.Name
		}
		alerts = append(alerts, Alert{Kind: AlertForeign, Nodes: names, Message: fmt.Sprintf(
			"%s under the prefix %s no etcd lock recipe's key (a Mutex key is a lease id in hex, an RWMutex key read/N or write/N): %s",
			Count(len(names), "key", "keys"), agree(len(names), "is", "are"), strings.Join(clip(names), ", "))})
	}
	return alerts
}

// HolderExpiredAlert is the alert for a holder whose key went while its
// lease ran out (AlertHolderExpired); now is who holds since, "" if none.
func HolderExpiredAlert(expired, leaseID, now string) Alert {
	next := "no one holds it now"
	if now != "" {
		next = now + " holds it now"
	}
	return Alert{Kind: AlertHolderExpired, Nodes: []string{expired}, Message: fmt.Sprintf(
		"holder %s lost the lock when its lease %s ran out unrenewed, not by releasing it; %s. If %s's client is only paused (GC, partition) it may still believe it holds until it checks IsOwner() or session.Done(): two holders",
		expired, leaseID, next, expired)}
}

// ExpiredHolder is a holder whose key went while its lease ran out
// unrenewed, followed until the lock passes on from its successor.
type ExpiredHolder struct {
	Name, LeaseID string
	// Successor is who held first after it; "" while no one has.
	Successor string
}

// Apply adds the holder-expired alert to s, a later snapshot of the same
// lock; false once the lock has passed on from the successor, when the
// alert is over.
func (e *ExpiredHolder) Apply(s *Snapshot) bool {
	now := strings.Join(s.Holders(), ", ")
	switch {
	case e.Successor == "":
		e.Successor = now
	case now != e.Successor:
		return false
	}
	s.Alerts = append(s.Alerts, HolderExpiredAlert(e.Name, e.LeaseID, now))
	return true
}
