package redislock

import (
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Alert kinds of Redis locks.
const (
	// AlertNoExpiry: the lock key has no time to live; if its holder
	// dies, nobody ever gets the lock.
	AlertNoExpiry = "no-expiry"
	// AlertNotRenewed: a lease that was being renewed (Redisson's
	// watchdog) has fallen below two thirds of its length: its holder has
	// stopped renewing, dead or paused, and will lose the lock.
	AlertNotRenewed = "lease-not-renewed"
	// AlertSplitRedlock: one client holds a majority of the masters while
	// another, which held a majority before and never released it, still
	// holds keys: both may believe they hold the lock.
	AlertSplitRedlock = "split-redlock"
	// AlertLostInRestart: a holder's key was gone when its master
	// answered again after it restarted (or, when INFO is refused, after
	// it stopped answering), before its lease ran out: a server without
	// persistence lost it, and its owner may still believe it holds.
	AlertLostInRestart = "lost-in-restart"
)

// Recipes, as the key's shape tells them.
const (
	RecipeString   lockqueue.Recipe = "redis-set-nx" // SET key token NX PX: redsync, redis-cli, most libraries
	RecipeRedlock  lockqueue.Recipe = "redlock"      // the same on several masters
	RecipeRedisson lockqueue.Recipe = "redisson"     // a hash of "<client id>:<thread id>" → count
)

// Notes that say what Redis cannot show.
const (
	noteSpin = "Spin-lock waiters (redsync, SET NX retry loops) leave no trace on the server: " +
		"who waits, and in what order, cannot be shown."
	noteRedisson = "Redisson waiters are counted by their subscriptions to the lock's unlock channel " +
		"(one per waiting client, not per thread) and cannot be named or ordered; " +
		"spin-lock waiters leave no trace on the server."
)

// notRenewedGrace is how far below two thirds of its lease a renewed
// lease may fall before it counts as not renewed: Redisson renews at
// exactly a third of the lease gone, and the renewal takes a round trip.
const notRenewedGrace = 10 // per cent of the lease

// follow is one watched lock: its loop's state between reads.
type follow struct {
	name   string
	cancel context.CancelFunc
	kick   chan struct{}
	// discovered: found by a pattern, not named; followed while a master
	// holds it as a lock. Reader.mu guards it.
	discovered bool

	mu      sync.Mutex
	guesses []string // per master, the key's type read last

	// The loop's own, between reads.
	owners    map[string]*ownerSeen
	majority  string          // who last held a majority of the masters
	overtaken map[string]bool // majority holders another has taken over from
	rev       int64
	last      lockqueue.Snapshot
	published bool
	// runIDs: per master, its run id at this lock's last good read there.
	runIDs []string
	// lost are the owners whose keys a restart took, by owner.
	lost map[string]lostKey
	// waitersSince is when a read first showed Redisson waiters, zero
	// while none wait: a waiter's subscription says nothing of its start.
	waitersSince time.Time
}

// lostKey is an owner's key that a master lost in a restart.
type lostKey struct {
	node  string
	addrs []string
	// due is when its lease would have run out; zero for a key without
	// expiry, whose owner believes it holds until it lets go.
	due time.Time
	// known: the master's run id changed; otherwise a restart is only
	// suspected (INFO refused).
	known bool
	// kept: the owner still held keys on other masters then (a Redlock);
	// once it holds none, it let go or they expired.
	kept bool
}

// ownerSeen is what the reader has seen of one token (or Redisson owner).
type ownerSeen struct {
	first time.Time
	// late: it was there at the reader's first read, or its first read
	// after a gap, so first is not when it came (Node.CtimeAtMost).
	late    bool
	at      time.Time        // the last read that showed it
	lease   map[string]int64 // per master: the longest time to live seen
	left    map[string]int64 // per master: the time left at the last read
	renewed map[string]bool  // per master: the time left has gone up
}

func newFollow(name string, masters int) *follow {
	g := make([]string, masters)
	for i := range g {
		g[i] = typeString
	}
	return &follow{
		name: name, kick: make(chan struct{}, 1), guesses: g,
		owners: map[string]*ownerSeen{}, overtaken: map[string]bool{},
		runIDs: make([]string, masters), lost: map[string]lostKey{},
	}
}

func (f *follow) guess(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.guesses[i]
}

func (f *follow) setGuess(i int, typ string) {
	if typ != typeString && typ != typeHash {
		return
	}
	f.mu.Lock()
	f.guesses[i] = typ
	f.mu.Unlock()
}

// keyHold is one owner's key on one master.
type keyHold struct {
	addr  string
	left  int64 // ms, -1 no expiry
	count string
}

// build turns one round of reads into the lock's snapshot, and says when
// it should be read again at the latest for its alerts to be on time (0:
// no deadline).
func (f *follow) build(reads []keyRead, quorum int, source string, now time.Time) (lockqueue.Snapshot, time.Duration) {
	s := lockqueue.Snapshot{
		Service: Name, Path: f.name, Connection: lockqueue.Connected, WatchSource: source,
		UpdatedAt: now, Note: noteSpin,
	}
	holds, types, mode := f.collect(&s, reads)
	if readable(reads) < quorum {
		// Who holds a majority cannot be told: the last known state,
		// never a free lock; the owners seen stay for the next read.
		var last *lockqueue.Snapshot
		if f.published {
			last = &f.last
		}
		return lockqueue.LastKnown(last, s), 0
	}
	s.Recipe = recipe(types, len(reads))
	switch {
	case s.AnonymousWaiters == 0:
		f.waitersSince = time.Time{}
	case f.waitersSince.IsZero():
		f.waitersSince = now
	}
	if s.AnonymousWaiters > 0 {
		s.AnonymousSince = f.waitersSince
	}
	f.noteLost(reads, holds, now)
	f.see(holds, reads, now)
	majority, deadline := f.addNodes(&s, holds, reads, quorum, mode)
	lockqueue.SortNodes(s.Nodes)
	s.Alerts = append(s.Alerts, f.split(majority, holds, len(reads))...)
	lost, until := f.lostAlerts(holds, now)
	s.Alerts = append(s.Alerts, lost...)
	deadline = earliest(deadline, until)
	sort.SliceStable(s.Alerts, func(i, j int) bool { return s.Alerts[i].Kind < s.Alerts[j].Kind })
	return s, deadline
}

// collect sorts one round of reads by owner: each owner's keys, the key
// types seen and the lock's mode. What the reads say of the connection,
// the waiters and a key that is no lock goes into s.
func (f *follow) collect(s *lockqueue.Snapshot, reads []keyRead) (map[string][]keyHold, map[string]bool, lockqueue.Mode) {
	var errs []string
	holds := map[string][]keyHold{}
	types := map[string]bool{}
	mode := lockqueue.Exclusive
	for _, kr := range reads {
		if kr.err != nil {
			errs = append(errs, kr.err.Error())
			continue
		}
		switch kr.typ {
		case typeNone:
			continue
		case typeString:
			holds[kr.value] = append(holds[kr.value], keyHold{addr: kr.addr, left: kr.pttl})
		case typeHash:
			for field, v := range kr.fields {
				if field == "mode" { // Redisson's read-write lock
					mode = lockqueue.Mode(v)
					continue
				}
				holds[field] = append(holds[field], keyHold{addr: kr.addr, left: kr.pttl, count: v})
			}
			s.AnonymousWaiters = max(s.AnonymousWaiters, int(kr.waiters))
			s.Note = noteRedisson
		default:
			s.Alerts = append(s.Alerts, lockqueue.Alert{Kind: lockqueue.AlertNotALock, Message: fmt.Sprintf(
				"%s on %s is a %s, not a Redis lock (a string token or a Redisson hash)", f.name, kr.addr, kr.typ)})
		}
		types[kr.typ] = true
		s.Exists = true
	}
	if len(errs) > 0 {
		s.Connection, s.Error = lockqueue.Reconnecting, strings.Join(errs, "; ")
	}
	return holds, types, mode
}

// addNodes adds a node for each owner to s, with its lease alerts, and
// answers the owners holding a majority and when the leases should be
// read again at the latest (0: no deadline).
func (f *follow) addNodes(s *lockqueue.Snapshot, holds map[string][]keyHold, reads []keyRead, quorum int, mode lockqueue.Mode) ([]string, time.Duration) {
	var majority []string
	var deadline time.Duration
	for owner, hs := range holds {
		seen := f.owners[owner]
		n := f.node(owner, hs, reads, quorum, seen)
		n.Mode, n.Recipe = mode, s.Recipe
		if s.Recipe == lockqueue.Mixed {
			n.Recipe = RecipeString
			if hs[0].count != "" {
				n.Recipe = RecipeRedisson
			}
		}
		if n.Holding {
			majority = append(majority, owner)
		}
		s.Nodes = append(s.Nodes, n)
		for _, h := range hs {
			s.Alerts = append(s.Alerts, leaseAlerts(f.name, n.Name, h, seen)...)
			deadline = earliest(deadline, nextCheck(h, seen))
		}
	}
	return majority, deadline
}

func recipe(types map[string]bool, masters int) lockqueue.Recipe {
	switch {
	case len(types) == 0:
		return lockqueue.NoRecipe
	case len(types) > 1:
		return lockqueue.Mixed
	case types[typeHash]:
		return RecipeRedisson
	case types[typeString] && masters > 1:
		return RecipeRedlock
	case types[typeString]:
		return RecipeString
	}
	return lockqueue.NoRecipe
}

// see records the owners' times left, noting renewals, and forgets the
// owners that are gone; what a master not read held stays as it was.
func (f *follow) see(holds map[string][]keyHold, reads []keyRead, now time.Time) {
	unread := map[string]bool{}
	for _, kr := range reads {
		if kr.err != nil {
			unread[kr.addr] = true
		}
	}
	for owner := range f.owners {
		if _, ok := holds[owner]; !ok {
			delete(f.owners, owner)
		}
	}
	late := !f.published || !f.last.Live()
	for owner, hs := range holds {
		seen := f.owners[owner]
		if seen == nil {
			seen = &ownerSeen{first: now, late: late, lease: map[string]int64{}, left: map[string]int64{}, renewed: map[string]bool{}}
			f.owners[owner] = seen
		}
		seen.at = now
		on := map[string]bool{}
		for _, h := range hs {
			on[h.addr] = true
			if prev, ok := seen.left[h.addr]; ok && h.left > prev && prev >= 0 {
				seen.renewed[h.addr] = true
			}
			seen.left[h.addr] = h.left
			seen.lease[h.addr] = max(seen.lease[h.addr], h.left)
		}
		for addr := range seen.left {
			if !on[addr] && !unread[addr] { // released there and maybe taken again: start afresh
				delete(seen.left, addr)
				delete(seen.lease, addr)
				delete(seen.renewed, addr)
			}
		}
	}
}

// node is one owner's node: holding when it holds a majority of the
// masters; its time left is the lock's validity, until fewer than a
// majority of its keys remain.
func (f *follow) node(owner string, hs []keyHold, reads []keyRead, quorum int, seen *ownerSeen) lockqueue.Node {
	n := lockqueue.Node{
		Name: printable(owner), Seq: -1, Rare: &lockqueue.Rare{Client: printable(owner)}, Ctime: seen.first,
		CtimeAtMost: seen.late, Holding: len(hs) >= quorum,
	}
	lefts := make([]int64, 0, len(hs))
	for _, h := range hs {
		lefts = append(lefts, h.left)
		n.SetLeaseTTLMs(max(n.LeaseTTLMs(), seen.lease[h.addr]))
	}
	// No expiry (-1) outlasts any time left.
	slices.SortFunc(lefts, func(a, b int64) int { return cmpLeft(b, a) })
	validity := lefts[0]
	if n.Holding {
		validity = lefts[quorum-1]
	}
	if validity > 0 {
		n.SetLeaseLeftMs(validity)
	}
	var lines []string
	if hs[0].count != "" {
		id, thread := splitOwner(owner)
		n.SetClient(printable(id))
		lines = append(lines, fmt.Sprintf("thread %s, reentrancy %s", thread, hs[0].count))
	}
	if len(reads) > 1 {
		lines = append(lines, fmt.Sprintf("holds %d of %d masters (a majority is %d)", len(hs), len(reads), quorum))
		for _, kr := range reads {
			lines = append(lines, kr.addr+": "+onMaster(kr, hs))
		}
	}
	n.Data = strings.Join(lines, "\n")
	return n
}

func onMaster(kr keyRead, hs []keyHold) string {
	if kr.err != nil {
		return "not readable"
	}
	for _, h := range hs {
		if h.addr == kr.addr {
			return "held, " + leftText(h.left)
		}
	}
	if kr.typ == typeNone {
		return "free"
	}
	return "held by another"
}

func leftText(left int64) string {
	if left < 0 {
		return "no expiry"
	}
	return (time.Duration(left) * time.Millisecond).String() + " left"
}

func cmpLeft(a, b int64) int {
	if a == b {
		return 0
	}
	if a == -1 || (b != -1 && a > b) {
		return 1
	}
	return -1
}

// splitOwner splits Redisson's "<client id>:<thread id>".
func splitOwner(owner string) (id, thread string) {
	i := strings.LastIndexByte(owner, ':')
	if i < 0 {
		return owner, "?"
	}
	return owner[:i], owner[i+1:]
}

// printable is a token as a node name: itself when it is readable text,
// its bytes in hex otherwise (redsync's are base64, others' raw bytes).
func printable(token string) string {
	if utf8.ValidString(token) && strings.IndexFunc(token, unicode.IsControl) < 0 {
		return token
	}
	return "0x" + hex.EncodeToString([]byte(token))
}

// leaseAlerts are one owner's alerts on one master.
func leaseAlerts(lock, node string, h keyHold, seen *ownerSeen) []lockqueue.Alert {
	if h.left == -1 {
		return []lockqueue.Alert{{Kind: AlertNoExpiry, Nodes: []string{node}, Message: fmt.Sprintf(
			"%s has no expiry on %s: if its holder dies, it stays locked forever (SET without PX, or PERSIST)", lock, h.addr)}}
	}
	lease := seen.lease[h.addr]
	if seen.renewed[h.addr] && h.left < notRenewedBelow(lease) {
		return []lockqueue.Alert{{Kind: AlertNotRenewed, Nodes: []string{node}, Message: fmt.Sprintf(
			"%s's lease on %s was renewed before (%s), but only %s is left, below two thirds of it: "+
				"its holder stopped renewing (dead or paused; Redisson's watchdog renews at a third gone)",
			node, h.addr, time.Duration(lease)*time.Millisecond, leftText(h.left))}}
	}
	return nil
}

func notRenewedBelow(lease int64) int64 { return lease*2/3 - lease*notRenewedGrace/100 }

// nextCheck is when h's alerts or expiry next change: its expiry, or for
// a renewed lease the moment it falls below the renewal threshold.
func nextCheck(h keyHold, seen *ownerSeen) time.Duration {
	if h.left < 0 {
		return 0
	}
	d := h.left
	if seen.renewed[h.addr] {
		if t := h.left - notRenewedBelow(seen.lease[h.addr]); t > 0 {
			d = t
		}
	}
	return time.Duration(d+1) * time.Millisecond
}

func earliest(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// split tracks who holds a majority and raises AlertSplitRedlock while a
// former majority holder that never released keeps keys on some masters
// after another took a majority (a master restarted without persistence,
// or a key expired early): its client believes it still holds.
func (f *follow) split(majority []string, holds map[string][]keyHold, masters int) []lockqueue.Alert {
	for o := range f.overtaken {
		if _, ok := holds[o]; !ok {
			delete(f.overtaken, o)
		}
	}
	if _, ok := holds[f.majority]; !ok {
		f.majority = ""
	}
	if len(majority) == 1 {
		if f.majority != "" && f.majority != majority[0] {
			f.overtaken[f.majority] = true
		}
		f.majority = majority[0]
	}
	var alerts []lockqueue.Alert
	if len(majority) > 1 {
		slices.Sort(majority)
		alerts = append(alerts, lockqueue.Alert{Kind: AlertSplitRedlock, Nodes: printables(majority), Message: fmt.Sprintf(
			"%s each hold a majority of the %d masters", strings.Join(printables(majority), " and "), masters)})
	}
	for _, o := range slices.Sorted(maps.Keys(f.overtaken)) {
		if o == f.majority {
			delete(f.overtaken, o)
			continue
		}
		if f.majority == "" {
			continue // the newer holder let go: one believer left at most
		}
		alerts = append(alerts, lockqueue.Alert{Kind: AlertSplitRedlock, Nodes: printables([]string{f.majority, o}), Message: fmt.Sprintf(
			"split Redlock: %s holds a majority of the %d masters, but %s, which held a majority before and never released it, "+
				"still holds %d: its client may still believe it holds the lock (a master restarted without persistence, or a key expired early)",
			printable(f.majority), masters, printable(o), len(holds[o]))})
	}
	return alerts
}

func printables(owners []string) []string {
	out := make([]string, len(owners))
	for i, o := range owners {
		out[i] = printable(o)
	}
	return out
}

// readable counts the masters read without an error.
func readable(reads []keyRead) int {
	n := 0
	for _, kr := range reads {
		if kr.err == nil {
			n++
		}
	}
	return n
}

// noteLost finds the owners whose keys a master lost: it answered with a
// new run id (it restarted) and the key an owner held there at the last
// read, its lease not yet run out, is not there. When INFO is refused, a
// key gone the same way across a stretch the master did not answer is a
// suspected restart. Call before see, which forgets the owners gone.
func (f *follow) noteLost(reads []keyRead, holds map[string][]keyHold, now time.Time) {
	restarted := f.restartedMasters(reads)
	if len(restarted) == 0 {
		return
	}
	for owner, seen := range f.owners {
		k := lostOn(owner, seen, holds[owner], restarted, now)
		if len(k.addrs) == 0 {
			continue
		}
		k.kept = len(holds[owner]) > 0
		if was, ok := f.lost[owner]; ok { // lost on other masters before
			k = k.mergedWith(was)
		}
		f.lost[owner] = k
	}
}

// restartedMasters are the masters read that restarted since this lock's
// last good read there, by address: true when the run id changed, false
// when a restart is only suspected (no run id to compare, and the lock was
// not live at the last publish). It keeps each master's new run id.
func (f *follow) restartedMasters(reads []keyRead) map[string]bool {
	restarted := map[string]bool{}
	for i, kr := range reads {
		if kr.err != nil {
			continue
		}
		switch prev := f.runIDs[i]; {
		case prev != "" && kr.runID != "" && kr.runID != prev:
			restarted[kr.addr] = true
		case (prev == "" || kr.runID == "") && f.published && !f.last.Live():
			restarted[kr.addr] = false
		}
		if kr.runID != "" {
			f.runIDs[i] = kr.runID
		}
	}
	return restarted
}

// lostOn is owner's key as the restarted masters lost it: the masters where
// seen had it, its lease not run out by now, that no longer hold it (held);
// no addresses when none lost it.
func lostOn(owner string, seen *ownerSeen, held []keyHold, restarted map[string]bool, now time.Time) lostKey {
	on := map[string]bool{}
	for _, h := range held {
		on[h.addr] = true
	}
	k := lostKey{node: printable(owner), known: true}
	for _, addr := range slices.Sorted(maps.Keys(seen.left)) {
		known, ok := restarted[addr]
		left := seen.left[addr]
		due := seen.at.Add(time.Duration(left) * time.Millisecond)
		if !ok || on[addr] || (left >= 0 && !now.Before(due)) {
			continue // not restarted, still there, or its lease ran out anyway
		}
		k.addrs, k.known = append(k.addrs, addr), k.known && known
		if left >= 0 && due.After(k.due) {
			k.due = due
		}
		if left < 0 {
			k.due = time.Time{}
		}
	}
	return k
}

// mergedWith is k with what the same owner lost on other masters before
// (was): the addresses of both, known only if both were, and the later
// lease's end (none if either key had no expiry).
func (k lostKey) mergedWith(was lostKey) lostKey {
	k.addrs = slices.Compact(slices.Sorted(slices.Values(append(was.addrs, k.addrs...))))
	k.known = k.known && was.known
	if was.due.IsZero() || (!k.due.IsZero() && was.due.After(k.due)) {
		k.due = was.due
	}
	return k
}

// lostAlerts are the alerts of the keys lost in restarts whose owners may
// still believe they hold them: until the lease would have run out, the
// owner's keys are back where they were lost, or an owner that kept keys
// elsewhere has none left (it let go). until is when the next of them
// ends (0: none).
func (f *follow) lostAlerts(holds map[string][]keyHold, now time.Time) (alerts []lockqueue.Alert, until time.Duration) {
	for _, owner := range slices.Sorted(maps.Keys(f.lost)) {
		k := f.lost[owner]
		back := true
		for _, addr := range k.addrs {
			back = back && slices.ContainsFunc(holds[owner], func(h keyHold) bool { return h.addr == addr })
		}
		gone := k.kept && len(holds[owner]) == 0
		if back || gone || (!k.due.IsZero() && !now.Before(k.due)) {
			delete(f.lost, owner)
			continue
		}
		what := "restarted (its run id changed)"
		if !k.known {
			what = "answered again after an outage, before its lease ran out: it restarted without persistence, " +
				"it seems (grant the reader +info to tell)"
		}
		lasts := "the key had no expiry: until its owner lets go"
		if !k.due.IsZero() {
			lasts = "until its lease would have run out at " + k.due.Format(time.TimeOnly)
			until = earliest(until, k.due.Sub(now)+time.Millisecond)
		}
		alerts = append(alerts, lockqueue.Alert{Kind: AlertLostInRestart, Nodes: []string{k.node}, Message: fmt.Sprintf(
			"%s's key %s was gone when %s %s: its owner may still believe it holds the lock (%s)",
			k.node, f.name, strings.Join(k.addrs, ", "), what, lasts)})
	}
	return alerts, until
}
