package zkwatch

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// registry holds the lock readers: by the path users give, by the server
// path events name, and by the other folders a semaphore keeps nodes in.
// Its lock is taken before any lock's own (never the other way round).
type registry struct {
	root chroot

	mu      sync.Mutex
	byPath  map[string]*lock
	byFull  map[string]*lock
	folders map[string]*lock // a semaphore's other folders, by server path
	// discovered: the lock was found under a prefix rather than configured
	// or added, so it goes when its parent does.
	discovered map[*lock]bool
}

func newRegistry(root chroot) *registry {
	return &registry{root: root, byPath: map[string]*lock{}, byFull: map[string]*lock{},
		folders: map[string]*lock{}, discovered: map[*lock]bool{}}
}

// add returns the reader of p, made when isNew. Adding a discovered path
// that is already watched changes nothing; adding it otherwise makes it
// stay when its parent goes.
func (g *registry) add(p string, discovered bool) (l *lock, isNew bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l := g.byPath[p]; l != nil {
		if !discovered {
			delete(g.discovered, l)
		}
		return l, false
	}
	l = newLock(p, g.root.full(p))
	g.byPath[p], g.byFull[l.full] = l, l
	if discovered {
		g.discovered[l] = true
	}
	return l, true
}

// Errors of RemovePath.
var (
	// ErrNotWatched: the path is not a watched lock parent.
	ErrNotWatched = errors.New("zkwatch: not watched")
	// ErrDiscovered: the lock parent was found under a --watch-under
	// prefix; discovery would find it again, so it is followed while it
	// exists.
	ErrDiscovered = errors.New("zkwatch: found under a --watch-under prefix, followed while it exists")
)

// remove forgets the configured or added lock parent p and stops its
// reader, which publishes nothing more: not even an Exists:false
// snapshot, since the parent is still there, only no longer watched.
func (g *registry) remove(p string) (*lock, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.byPath[p]
	switch {
	case l == nil:
		return nil, fmt.Errorf("%s: %w", p, ErrNotWatched)
	case g.discovered[l]:
		return nil, fmt.Errorf("%s: %w", p, ErrDiscovered)
	}
	delete(g.byPath, p)
	delete(g.byFull, l.full)
	l.mu.Lock()
	defer l.mu.Unlock()
	g.dropFoldersLocked(l)
	l.removed, l.final = true, true
	if l.stop != nil {
		l.stop()
	}
	return l, nil
}

func (g *registry) get(p string) *lock {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byPath[p]
}

// hasFull reports whether the lock parent at server path full is watched.
func (g *registry) hasFull(full string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byFull[full] != nil
}

func (g *registry) isDiscovered(l *lock) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.discovered[l]
}

func (g *registry) all() []*lock {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Collect(maps.Values(g.byPath))
}

func (g *registry) paths() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Sorted(maps.Keys(g.byPath))
}

// changed routes a watch event to the reader whose watch fired: the lock
// parent's own, a semaphore's other folder's, or, from a persistent watch,
// the parent of the child that changed.
func (g *registry) changed(ev zk.Event) {
	full := ev.Path
	g.mu.Lock()
	l, f := g.byFull[full], g.folders[full]
	var parent *lock
	if l == nil && full != "/" {
		parent = g.byFull[path.Dir(full)]
	}
	g.mu.Unlock()
	if l != nil {
		l.parentEvent()
	}
	if parent != nil {
		parent.childEvent(ev)
	}
	if f != nil {
		f.mu.Lock()
		if _, ok := f.folders[full]; ok {
			f.folders[full] = false
		}
		f.mu.Unlock()
		f.poke()
	}
}

// disarm notes that every watch is gone with an expired session.
func (g *registry) disarm() {
	for _, l := range g.all() {
		l.mu.Lock()
		l.armed = false
		for full := range l.folders {
			l.folders[full] = false
		}
		l.mu.Unlock()
	}
}

// armedWatches counts the children watches the readers hold now. A
// persistent recursive watch counts as one: ZooKeeper 3.8 counts it twice
// in mntr's zk_watch_count and once among the data watches wchs lists,
// so it adds one to what the table takes for children watches. A lock
// under a --watch-under prefix takes the prefix's watch, which discovery
// counts.
func (g *registry) armedWatches() int {
	n := 0
	for _, l := range g.all() {
		l.mu.Lock()
		if l.armed && !l.viaPrefix.Load() {
			n++
		}
		for _, armed := range l.folders {
			if armed {
				n++
			}
		}
		l.mu.Unlock()
	}
	return n
}

// setFolders records the folders besides its path whose children watches
// l holds now, so their events reach l, and forgets those it no longer
// reads. The server keeps a forgotten watch until it fires, which it does
// when that folder goes.
func (g *registry) setFolders(l *lock, lists []listing) {
	g.whileLive(l, func() {
		now := make(map[string]bool, len(lists))
		for _, ls := range lists {
			now[ls.full] = true
		}
		for full := range l.folders {
			if !now[full] && g.folders[full] == l {
				delete(g.folders, full)
			}
		}
		for full := range now {
			g.folders[full] = l
		}
		if len(now) == 0 {
			now = nil
		}
		l.folders = now
	})
}

// expectFolders routes the events of the folders at fulls (server paths)
// to l before l lists them: a listing sets the folder's watch, which can
// fire before setFolders records it, and an event no one is routed is
// lost with the spent watch. Until listed, a folder counts as unarmed;
// setFolders forgets those that turn out not to be listed.
func (g *registry) expectFolders(l *lock, fulls []string) {
	g.whileLive(l, func() {
		for _, full := range fulls {
			g.folders[full] = l
			if _, ok := l.folders[full]; !ok {
				if l.folders == nil {
					l.folders = map[string]bool{}
				}
				l.folders[full] = false
			}
		}
	})
}

// whileLive runs fn with the registry's lock and l's held, unless l was
// removed (its folders were dropped then and must stay so).
func (g *registry) whileLive(l *lock, fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.removed {
		fn()
	}
}

// dropFolders forgets all of l's other folders.
func (g *registry) dropFolders(l *lock) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	g.dropFoldersLocked(l)
}

// dropFoldersLocked is dropFolders with both locks held.
func (g *registry) dropFoldersLocked(l *lock) {
	for full := range l.folders {
		if g.folders[full] == l {
			delete(g.folders, full)
		}
	}
	l.folders = nil
}

// dropDiscovered forgets the discovered locks at server path full (when
// self) and below it, and stops their readers; it returns them, each
// holding its last snapshot (Exists:false) still to publish, as of epoch.
// Configured locks stay.
func (g *registry) dropDiscovered(full string, self bool, epoch uint64) []*lock {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*lock
	for p, l := range g.byFull {
		if under(p, full, self) && g.discovered[l] {
			g.forgetLocked(l, epoch)
			out = append(out, l)
		}
	}
	return out
}

// dropDiscoveredAt is dropDiscovered of the lock at full alone, without
// looking at every lock: discovery knows when nothing was found below.
func (g *registry) dropDiscoveredAt(full string, epoch uint64) []*lock {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.byFull[full]
	if l == nil || !g.discovered[l] {
		return nil
	}
	g.forgetLocked(l, epoch)
	return []*lock{l}
}

// forgetLocked forgets the discovered lock l and stops its reader.
func (g *registry) forgetLocked(l *lock, epoch uint64) {
	delete(g.byFull, l.full)
	delete(g.byPath, l.path)
	delete(g.discovered, l)
	l.mu.Lock()
	g.dropFoldersLocked(l)
	l.removeLocked(epoch)
	l.mu.Unlock()
}

// under reports whether server path p is below full, or is full itself
// when self.
func under(p, full string, self bool) bool {
	return (self && p == full) || strings.HasPrefix(p, strings.TrimSuffix(full, "/")+"/")
}

// newLock makes the reader of a lock parent, not read yet.
func newLock(p, full string) *lock {
	l := &lock{path: p, full: full, kick: make(chan struct{}, 1)}
	l.base = lockqueue.Build(p, nil, lockqueue.Options{})
	l.base.Exists = false
	l.base.Error = "not read yet: waiting for a ZooKeeper session"
	return l
}
