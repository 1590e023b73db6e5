package zkwatch

import (
	"context"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A zombie's removal is told from a fresh watch table, not the last one.
//
// A node is shown a zombie while its session has no connection in the
// last watch table (read every poll). ZooKeeper keeps a session through a
// lost connection for its timeout: a client whose connection dropped (a
// network blip, a process descheduled past its ping, a server restart,
// which restores every session with none connected) comes back to the
// same session and may delete its node at once. The history tells how a
// node went by the last state published before it went: gone while shown
// a zombie, it expired. A client that reconnected and let go before the
// next table would then be recorded as expired, its clean release taken
// for its session's end (the lab's word check found it).
//
// So a read that removes a node last published as a zombie reads the
// table again, one round trip to each member, before it is published:
// when the node's session is connected in it, the client itself deleted
// the node, and the last base joined with that table (the node there, no
// longer a zombie) is published first; its removal then reads as a
// release. A session still not connected keeps its node a zombie, and its
// removal an expiry. Zombies are rare, and a read removes one once.

// zombieGone reports whether the last snapshot l published, live, showed
// a zombie that s, l's next base, no longer has (the same name of the same
// session).
func (l *lock) zombieGone(s lockqueue.Snapshot) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	// A removal seen while not live is told as unseen anyway.
	if !l.published || l.removed || !l.last.Live() || !hasZombieAlert(l.last) {
		return false
	}
	var zombies map[string]int64
	for i := range l.last.Nodes {
		if n := &l.last.Nodes[i]; n.Zombie {
			if zombies == nil {
				zombies = map[string]int64{}
			}
			zombies[n.Name] = n.Owner()
		}
	}
	if zombies == nil {
		return false
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if id, ok := zombies[n.Name]; ok && id == n.Owner() {
			delete(zombies, n.Name)
		}
	}
	return len(zombies) > 0
}

// recheckZombies reads the watch table afresh and publishes l's base,
// still the one before the removal, joined with it. A table that cannot
// tell who is connected (a member down, 4lw refused) clears no zombie:
// the last table's word stands.
func (w *Watcher) recheckZombies(ctx context.Context, l *lock) {
	// A table asked after this one and merged before it is as fresh.
	if w.readTable(ctx); ctx.Err() != nil {
		return
	}
	if t := w.poll.current().table; t.Connected == nil || t.Partial {
		return
	}
	// Other locks are joined with this table at the next poll, as they
	// would have been with the poll's own: nothing of theirs is removed
	// now.
	w.emit(l)
}

// hasZombieAlert reports whether s shows a zombie: its alert is there
// whenever one is, so a change's publish walks no nodes of a big queue
// without one.
func hasZombieAlert(s lockqueue.Snapshot) bool {
	for _, a := range s.Alerts {
		if a.Kind == lockqueue.AlertZombie {
			return true
		}
	}
	return false
}
