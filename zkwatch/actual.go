package zkwatch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// configPath is watched by Curator (and others) for dynamic reconfig: noise
// in a lock view.
const configPath = "/zookeeper/config"

// pollLoop reads the server's watch table from every member at the poll
// interval (never per viewer) and re-joins every lock with it.
func (w *Watcher) pollLoop(ctx context.Context) {
	t := time.NewTicker(w.cfg.Poll)
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

func (w *Watcher) pollOnce(ctx context.Context) {
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, max(w.cfg.Poll, 2*time.Second))
	defer cancel()

	source := "4lw"
	targets := w.servers
	if len(w.cfg.AdminURLs) > 0 {
		source, targets = "admin", w.cfg.AdminURLs
	}
	infos := make([]memberInfo, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			if source == "admin" {
				infos[i] = fetchAdmin(pctx, w.http, t)
			} else {
				infos[i] = fetch4lw(pctx, t, w.cfg.TLS)
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}

	w.mu.Lock()
	if w.reader != nil {
		if id := w.reader.SessionID(); id != 0 {
			w.ownSessions[id] = true
		}
	}
	own := 0
	for _, l := range w.locks {
		if l.armed {
			own++
		}
		own += l.armedFolders()
	}
	for _, lv := range w.levels {
		if lv.armed && w.byFull[lv.full] == nil {
			own++
		}
	}
	isOwn := func(id int64) bool { return w.ownSessions[id] }
	table := mergeTable(infos, source, isOwn, w.root, own)
	note := tableNote(targets, infos)
	partial := partialNote(infos)
	if partial != "" && partial != w.partialNote {
		w.log.Warn("not every ensemble member is listed", "asked", targets, "why", partial)
	}
	w.partialNote = partial
	if table.Source != w.table.Source || note != w.tableNote {
		w.log.Info("watch table source", "source", table.Source, "note", note)
	}
	w.table, w.tableAt, w.tableNote = table, start, note
	locks := w.lockList()
	w.mu.Unlock()

	for _, l := range locks {
		w.emit(l)
	}
}

// mergeTable merges what the members told into one table: watches and
// connections live on the member a client is connected to, so the union
// over members is the ensemble's. The watcher's own sessions and
// /zookeeper/config are dropped, and paths are made chroot-relative.
// ownChildWatches is the number of children watches the watcher itself
// holds; they are not the invisible waiters' watches the count is about.
func mergeTable(infos []memberInfo, source string, isOwn func(int64) bool, root chroot, ownChildWatches int) lockqueue.WatchTable {
	t := lockqueue.WatchTable{Source: source, ChildWatches: -1}
	watches := map[int64][]string{}
	connected := map[int64]bool{}
	expiry := map[int64]time.Time{}
	watchesKnown, connKnown, countKnown := false, true, true
	anyUp := false
	total, data := 0, 0
	for _, m := range infos {
		if m.Down {
			continue
		}
		anyUp = true
		if m.Watches != nil {
			watchesKnown = true
			data += m.dataWatchTotal()
			for id, paths := range m.Watches {
				if isOwn(id) {
					continue
				}
				for _, p := range paths {
					if p == configPath {
						continue
					}
					if rel, ok := root.rel(p); ok {
						watches[id] = append(watches[id], rel)
					}
				}
			}
		} else {
			countKnown = false
		}
		if m.Connected != nil {
			for id := range m.Connected {
				connected[id] = true
			}
		} else {
			connKnown = false
		}
		for id, at := range m.Expiry {
			if at.After(expiry[id]) {
				expiry[id] = at
			}
		}
		if m.WatchCount >= 0 {
			total += m.WatchCount
		} else {
			countKnown = false
		}
	}
	if !anyUp {
		// Nothing answered: no member says anyone is connected, but that
		// is not evidence that they are not.
		connKnown, countKnown = false, false
	}
	if watchesKnown {
		for id, ps := range watches {
			sort.Strings(ps)
			watches[id] = compactStrings(ps)
		}
		t.Watches = watches
	} else {
		t.Source = "none"
	}
	if connKnown {
		t.Connected = connected
	}
	if len(expiry) > 0 {
		t.Expiry = expiry
	}
	if countKnown && watchesKnown {
		t.ChildWatches = max(0, total-data-ownChildWatches)
	}
	if asked, members := coverage(infos); asked < members {
		t.Partial = true
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
