package zkwatch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// configPath is watched by Curator (and others) for dynamic reconfig: noise
// in a lock view.
const configPath = "/zookeeper/config"

// poller asks every ensemble member, at the poll interval and never per
// viewer, which sessions watch which paths and which are connected, and
// keeps the merged table.
type poller struct {
	servers []string // client ports, for the four-letter words
	admin   []string // AdminServer base URLs, used instead when given
	tls     *tls.Config
	http    *http.Client
	every   time.Duration
	root    chroot
	log     *slog.Logger

	mu  sync.Mutex
	cur tableState
}

// tableState is the last merged table and what to say about it.
type tableState struct {
	table lockqueue.WatchTable
	at    time.Time // when the poll that made it started
	note  string    // why the table is empty, when it is
	// partial: why the table covers only some members, when it does.
	partial string
	// gen counts the tables merged. changed is what differs from the
	// table of gen-1, for a lock to tell whether this table can change
	// anything of it (idle.go): the sessions whose watches or connection
	// differ, or all (nil changed) when something every lock shows
	// differs (source, coverage, note, the invisible children watches).
	gen     uint64
	changed map[int64]bool
	all     bool
}

func newPoller(c checked, log *slog.Logger) *poller {
	return &poller{
		servers: c.servers,
		admin:   c.AdminURLs,
		tls:     c.TLS,
		http:    &http.Client{Timeout: 5 * time.Second, Transport: adminTransport(c.TLS)},
		every:   c.Poll,
		root:    c.root,
		log:     log,
		cur: tableState{table: lockqueue.NoWatches,
			note: "the server's watch table has not been read yet"},
	}
}

func (p *poller) current() tableState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// alerts are the watch-source alerts a snapshot of an existing lock
// carries while the table is unknown or partial.
func (t tableState) alerts(s lockqueue.Snapshot) []lockqueue.Alert {
	switch {
	case !s.Exists:
		return nil
	case t.table.Source == "none":
		return []lockqueue.Alert{{Kind: lockqueue.AlertWatchSource, Nodes: []string{},
			Message: "actual watches unknown: " + t.note}}
	case t.table.Partial:
		return []lockqueue.Alert{{Kind: lockqueue.AlertWatchSource, Nodes: []string{}, Message: t.partial}}
	}
	return nil
}

// pollLoop reads the watch table at the poll interval and re-joins every
// lock with it.
func (w *Watcher) pollLoop(ctx context.Context) {
	t := time.NewTicker(w.poll.every)
	defer t.Stop()
	for {
		w.pollOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pollOnce reads the watch table once and re-joins every lock with it.
func (w *Watcher) pollOnce(ctx context.Context) {
	if w.readTable(ctx) {
		for _, l := range w.locks.all() {
			w.emitAfterPoll(l)
		}
	}
}

// readTable reads the watch table and makes it the current one; false
// when ctx ended meanwhile or a table read since is current already.
func (w *Watcher) readTable(ctx context.Context) bool {
	start := time.Now()
	infos, ok := w.poll.ask(ctx)
	if !ok {
		return false
	}
	own := w.locks.armedWatches() + w.disc.armedWatches(w.locks.hasFull, w.sess.view().epoch)
	return w.poll.merge(infos, w.sess.ownIDs(), own, start)
}

// source names where the table comes from, and whom it asks.
func (p *poller) source() (string, []string) {
	if len(p.admin) > 0 {
		return "admin", p.admin
	}
	return "4lw", p.servers
}

// ask asks every member at once; false when ctx ended meanwhile.
func (p *poller) ask(ctx context.Context) ([]memberInfo, bool) {
	pctx, cancel := context.WithTimeout(ctx, max(p.every, 2*time.Second))
	defer cancel()
	source, targets := p.source()
	infos := make([]memberInfo, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			if source == "admin" {
				infos[i] = fetchAdmin(pctx, p.http, t)
			} else {
				infos[i] = fetch4lw(pctx, t, p.tls)
			}
		})
	}
	wg.Wait()
	return infos, ctx.Err() == nil
}

// merge makes the members' answers, asked from start, the current table,
// and reports whether it did. own are the watcher's sessions, ownWatches
// the children watches it holds. Answers asked before the current table's
// are dropped: a read of the table out of turn (zombie.go) may end before
// the poll's, asked earlier, does.
func (p *poller) merge(infos []memberInfo, own map[int64]bool, ownWatches int, start time.Time) bool {
	source, targets := p.source()
	table := mergeTable(infos, source, func(id int64) bool { return own[id] }, p.root, ownWatches)
	note := tableNote(targets, infos)
	partial := partialNote(infos)
	p.mu.Lock()
	defer p.mu.Unlock()
	if start.Before(p.cur.at) {
		return false
	}
	if partial != "" && partial != p.cur.partial {
		p.log.Warn("not every ensemble member is listed", "asked", targets, "why", partial)
	}
	if table.Source != p.cur.table.Source || note != p.cur.note {
		p.log.Info("watch table source", "source", table.Source, "note", note)
	}
	changed, all := tableDiff(p.cur, table, note, partial)
	p.cur = tableState{table: table, at: start, note: note, partial: partial,
		gen: p.cur.gen + 1, changed: changed, all: all}
	return true
}

// adminTransport trusts the TLS configuration's CAs for https AdminServer
// URLs; nil (the default transport) without TLS.
func adminTransport(cfg *tls.Config) http.RoundTripper {
	if cfg == nil {
		return nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: cfg.RootCAs, InsecureSkipVerify: cfg.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	return t
}

// mergeTable merges what the members told into one table: watches and
// connections live on the member a client is connected to, so the union
// over members is the ensemble's. The watcher's own sessions and
// /zookeeper/config are dropped, and paths are made chroot-relative.
// ownChildWatches is the number of children watches the watcher itself
// holds; they are not the invisible waiters' watches the count is about.
func mergeTable(infos []memberInfo, source string, isOwn func(int64) bool, root chroot, ownChildWatches int) lockqueue.WatchTable {
	u := union{watches: map[int64][]string{}, connected: map[int64]bool{}, expiry: map[int64]time.Time{},
		connKnown: true, countKnown: true}
	for _, m := range infos {
		if !m.Down {
			u.add(m, isOwn, root)
		}
	}
	t := u.table(source, ownChildWatches)
	if asked, members := coverage(infos); asked < members {
		t.Partial = true
	}
	return t
}

// union adds up what the members that are up told.
type union struct {
	watches   map[int64][]string
	connected map[int64]bool
	expiry    map[int64]time.Time
	// Each is known only when every member up told it.
	watchesKnown, connKnown, countKnown bool
	anyUp                               bool
	total, data                         int // watch counts: all, and data watches listed
}

func (u *union) add(m memberInfo, isOwn func(int64) bool, root chroot) {
	u.anyUp = true
	if m.Watches != nil {
		u.watchesKnown = true
		u.data += m.dataWatchTotal()
		u.addWatches(m.Watches, isOwn, root)
	} else {
		u.countKnown = false
	}
	if m.Connected != nil {
		for id := range m.Connected {
			u.connected[id] = true
		}
	} else {
		u.connKnown = false
	}
	for id, at := range m.Expiry {
		if at.After(u.expiry[id]) {
			u.expiry[id] = at
		}
	}
	if m.WatchCount >= 0 {
		u.total += m.WatchCount
	} else {
		u.countKnown = false
	}
}

func (u *union) addWatches(watches map[int64][]string, isOwn func(int64) bool, root chroot) {
	for id, paths := range watches {
		if isOwn(id) {
			continue
		}
		for _, p := range paths {
			if p == configPath {
				continue
			}
			if rel, ok := root.rel(p); ok {
				u.watches[id] = append(u.watches[id], rel)
			}
		}
	}
}

func (u *union) table(source string, ownChildWatches int) lockqueue.WatchTable {
	t := lockqueue.WatchTable{Source: source, ChildWatches: -1}
	if !u.anyUp {
		// Nothing answered: no member says anyone is connected, but that
		// is not evidence that they are not.
		u.connKnown, u.countKnown = false, false
	}
	if u.watchesKnown {
		for id, ps := range u.watches {
			sort.Strings(ps)
			u.watches[id] = compactStrings(ps)
		}
		t.Watches = u.watches
	} else {
		t.Source = "none"
	}
	if u.connKnown {
		t.Connected = u.connected
	}
	if len(u.expiry) > 0 {
		t.Expiry = u.expiry
	}
	if u.countKnown && u.watchesKnown {
		t.ChildWatches = max(0, u.total-u.data-ownChildWatches)
	}
	return t
}

// coverage tells how many ensemble members answered and how many the
// ensemble has, as far as the answers tell. A standalone server is the
// whole ensemble. A leader counts its learners (zk_learners: the followers
// and observers connected to it), so the ensemble has learners+1 serving
// members. Followers alone prove a leader that was not asked. With nothing
// to go on (mntr not whitelisted) members is asked: no claim is made.
func coverage(infos []memberInfo) (asked, members int) {
	follower := false
	members = -1
	for _, m := range infos {
		if m.Down {
			continue
		}
		asked++
		switch m.State {
		case "standalone":
			members = max(members, 1)
		case "leader":
			if m.Learners >= 0 {
				members = max(members, m.Learners+1)
			}
		case "follower", "observer":
			follower = true
		}
	}
	if members < 0 {
		members = asked
		if follower {
			members = asked + 1 // its leader, not asked
		}
	}
	return asked, members
}

// partialNote is the watch-source alert's message when not every member
// was asked.
func partialNote(infos []memberInfo) string {
	asked, members := coverage(infos)
	if asked >= members {
		return ""
	}
	return fmt.Sprintf("only %d of the ensemble's %d or more serving members were asked for their watch tables and connections; "+
		"clients connected to the others look like they watch nothing and have no connection, so zombies, orphans and missing "+
		"watches are not shown for them: list every member in --zk (or one --zk-admin per member)", asked, members)
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// tableNote says, for the log and the watch-source alert, what kept the
// members from telling.
func tableNote(targets []string, infos []memberInfo) string {
	var parts []string
	for i, m := range infos {
		switch {
		case m.Down:
			parts = append(parts, targets[i]+": down")
		case len(m.Errs) > 0:
			msg := errors.Join(m.Errs...).Error()
			if errors.Is(errors.Join(m.Errs...), errNotWhitelisted) {
				msg += " (allow wchp or wchc, cons, dump, mntr in 4lw.commands.whitelist, or pass the AdminServer URLs)"
			}
			parts = append(parts, fmt.Sprintf("%s: %s", targets[i], strings.ReplaceAll(msg, "\n", "; ")))
		}
	}
	return strings.Join(parts, "; ")
}

// maxChangedSessions bounds the sessions a table's diff names: past it
// every lock joins the table anyway, and checking each against a lock's
// owners costs more than the join saves.
const maxChangedSessions = 64

// tableDiff tells what table (with its note and partial text) changes
// from cur: the sessions whose watches or connection differ, or
// all when something every lock shows differs or too many sessions do.
func tableDiff(cur tableState, table lockqueue.WatchTable, note, partial string) (changed map[int64]bool, all bool) {
	old := cur.table
	if old.Source != table.Source || old.Partial != table.Partial || old.ChildWatches != table.ChildWatches ||
		cur.note != note || cur.partial != partial ||
		(old.Connected == nil) != (table.Connected == nil) || (old.Watches == nil) != (table.Watches == nil) {
		return nil, true
	}
	changed = map[int64]bool{}
	mark := func(id int64) bool {
		changed[id] = true
		return len(changed) > maxChangedSessions
	}
	for id, ps := range table.Watches {
		if ops, ok := old.Watches[id]; (!ok || !slices.Equal(ops, ps)) && mark(id) {
			return nil, true
		}
	}
	for id := range old.Watches {
		if _, ok := table.Watches[id]; !ok && mark(id) {
			return nil, true
		}
	}
	for id := range table.Connected {
		if !old.Connected[id] && mark(id) {
			return nil, true
		}
	}
	for id := range old.Connected {
		if !table.Connected[id] && mark(id) {
			return nil, true
		}
	}
	// Expiry is left out: a live session's moves on with each ping, so
	// every table has new ones, and a join shows it only for a zombie,
	// whose countdown makes its lock join every table anyway (idle.go).
	return changed, false
}
