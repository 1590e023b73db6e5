package web

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Frame is one websocket message. Type "snapshot" carries a whole Snapshot;
// type "delta" carries the Delta fields at the top level.
type Frame struct {
	Type     string              `json:"type"`
	Snapshot *lockqueue.Snapshot `json:"snapshot,omitempty"`
	// Window is set when the nodes are a window of a long queue (a
	// windowed socket's, window.go): which part of it they are. A frame
	// without it carries, or patches to, every node.
	Window *Window `json:"window,omitempty"`
	*Delta
}

// Frame types.
const (
	FrameSnapshot = "snapshot"
	FrameDelta    = "delta"
)

// Delta turns the snapshot with revision Base, the last one sent on this
// socket, into the next one. Every folder-level field is sent whole; nodes
// are patched: Upsert holds the nodes that are new or changed in any field,
// in the new snapshot's order, At the position of each in the new node
// list, and Remove the names that are gone. A client drops the removed and
// upserted names from its list and puts each upsert at its position: the
// order is the server's (lockqueue.SortNodes), never derived again.
type Delta struct {
	Service               string               `json:"service,omitempty"`
	Path                  string               `json:"path"`
	Base                  int64                `json:"base"`
	Revision              int64                `json:"revision"`
	Connection            lockqueue.Connection `json:"connection"`
	WatchSource           string               `json:"watchSource"`
	Recipe                lockqueue.Recipe     `json:"recipe"`
	Exists                bool                 `json:"exists"`
	Leases                int                  `json:"leases"`
	LeasesInferred        bool                 `json:"leasesInferred"`
	Alerts                []lockqueue.Alert    `json:"alerts"`
	InvisibleChildWatches int                  `json:"invisibleChildWatches"`
	UpdatedAt             time.Time            `json:"updatedAt"`
	Error                 string               `json:"error"`
	UnknownSince          time.Time            `json:"unknownSince,omitzero"`
	Note                  string               `json:"note,omitempty"`
	AnonymousWaiters      int                  `json:"anonymousWaiters,omitempty"`
	AnonymousSince        time.Time            `json:"anonymousSince,omitzero"`
	// Filling is set while the reader is still reading the nodes' data
	// (lockqueue.Snapshot.Filling); a delta without it says they are all read.
	Filling *lockqueue.Filling `json:"filling,omitempty"`
	Upsert  []lockqueue.Node   `json:"upsert"`
	At      []int              `json:"at"`
	Remove  []string           `json:"remove"`
}

// ApplyDelta patches prev with d the way a client must. It fails when d was
// computed against another snapshot: the client has missed a frame and
// should reconnect for a fresh snapshot.
func ApplyDelta(prev lockqueue.Snapshot, d *Delta) (lockqueue.Snapshot, error) {
	if d.Service != prev.Service || d.Path != prev.Path || d.Base != prev.Revision {
		return prev, fmt.Errorf("delta for %s@%d does not apply to %s@%d", d.Path, d.Base, prev.Path, prev.Revision)
	}
	if len(d.At) != len(d.Upsert) {
		return prev, fmt.Errorf("delta for %s@%d: %d positions for %d upserts", d.Path, d.Base, len(d.At), len(d.Upsert))
	}
	drop := make(map[string]bool, len(d.Remove)+len(d.Upsert))
	for _, name := range d.Remove {
		drop[name] = true
	}
	for _, n := range d.Upsert {
		drop[n.Name] = true
	}
	kept := make([]lockqueue.Node, 0, len(prev.Nodes))
	for _, n := range prev.Nodes {
		if !drop[n.Name] {
			kept = append(kept, n)
		}
	}
	nodes := make([]lockqueue.Node, 0, len(kept)+len(d.Upsert))
	for i, n := range d.Upsert {
		at := d.At[i]
		if at < len(nodes) || at > len(nodes)+len(kept) {
			return prev, fmt.Errorf("delta for %s@%d: upsert %s at %d is out of place", d.Path, d.Base, n.Name, at)
		}
		take := at - len(nodes)
		nodes = append(append(nodes, kept[:take]...), n)
		kept = kept[take:]
	}
	nodes = append(nodes, kept...)
	return lockqueue.Snapshot{
		Service: d.Service, Path: d.Path, Recipe: d.Recipe, Revision: d.Revision, Connection: d.Connection,
		WatchSource: d.WatchSource, Exists: d.Exists, Leases: d.Leases, LeasesInferred: d.LeasesInferred, Nodes: nodes,
		Alerts: d.Alerts, InvisibleChildWatches: d.InvisibleChildWatches, UpdatedAt: d.UpdatedAt,
		Error: d.Error, UnknownSince: d.UnknownSince, Note: d.Note, AnonymousWaiters: d.AnonymousWaiters,
		AnonymousSince: d.AnonymousSince, Filling: d.Filling,
	}, nil
}

// wireSnapshot gives empty lists as [] rather than null, so scripts can
// iterate without checks, and stamps each node's wait edges
// (Snapshot.WithWaitEdges) so the browser draws the server's.
func wireSnapshot(s lockqueue.Snapshot) lockqueue.Snapshot {
	s = s.WithWaitEdges()
	s.Nodes = nonNil(s.Nodes)
	s.Alerts = nonNil(s.Alerts)
	return s
}

// exactCutoff: up to this many nodes both encodings are built and the
// smaller sent; above it the cost of encoding a big snapshot per change is
// avoided and the node counts decide.
const exactCutoff = 256

// encoder turns one socket's sequence of snapshots into frames, each
// computed from scratch. The websocket handler shares frames between
// sockets instead (frames.go); encoder is the reference it must agree with.
type encoder struct {
	prev lockqueue.Snapshot
	sent bool
}

// frame encodes s as a delta against the last snapshot sent, or whole when
// that is smaller or there is nothing to patch.
func (e *encoder) frame(s lockqueue.Snapshot) ([]byte, string, error) {
	var prev *lockqueue.Snapshot
	if e.sent {
		prev = &e.prev
	}
	b, kind, err := encodeFrame(prev, s, nil)
	if err != nil {
		return nil, "", err
	}
	e.prev, e.sent = wireSnapshot(s), true
	return b, kind, nil
}

// encodeFrame encodes s as a delta against prev (the last snapshot sent on
// a socket; nil for none), or whole when that is smaller or there is
// nothing to patch. It depends on nothing but prev and s, so sockets that
// hold the same prev and get the same s can share its result. index, when
// not nil, gives the names of prev's nodes (ofPrev) or of s's; nil builds
// them.
func encodeFrame(prev *lockqueue.Snapshot, s lockqueue.Snapshot, index func(ofPrev bool) *names) ([]byte, string, error) {
	return encodeWindowFrame(prev, s, nil, index)
}

// encodeWindowFrame is encodeFrame for s, a window of a queue as win says
// (nil: every node); prev is the window sent before.
func encodeWindowFrame(prev *lockqueue.Snapshot, s lockqueue.Snapshot, win *Window, index func(ofPrev bool) *names) ([]byte, string, error) {
	s = wireSnapshot(s)
	if prev != nil {
		// Stamped as s is, so a node whose edges did not change is
		// left out of the delta, and every node is sent again when
		// the snapshot stops or starts using the neutral fields.
		p := prev.WithWaitEdges()
		prev = &p
	}
	whole := func() ([]byte, string, error) {
		b, err := json.Marshal(Frame{Type: FrameSnapshot, Snapshot: &s, Window: win})
		return b, FrameSnapshot, err
	}
	var b []byte
	kind := FrameSnapshot
	var err error
	if prev == nil || prev.Key() != s.Key() {
		b, kind, err = whole()
	} else if d, ok := delta(*prev, s, index); !ok {
		// Duplicate names or a reordering the patch could not express.
		b, kind, err = whole()
	} else {
		switch {
		case len(s.Nodes) <= exactCutoff:
			db, derr := json.Marshal(Frame{Type: FrameDelta, Delta: d, Window: win})
			wb, werr := json.Marshal(Frame{Type: FrameSnapshot, Snapshot: &s, Window: win})
			if err = cmpErr(derr, werr); err == nil {
				b, kind = db, FrameDelta
				if len(wb) <= len(db) {
					b, kind = wb, FrameSnapshot
				}
			}
		case len(d.Upsert)+len(d.Remove) < len(s.Nodes):
			b, err = json.Marshal(Frame{Type: FrameDelta, Delta: d, Window: win})
			kind = FrameDelta
		default:
			b, kind, err = whole()
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("encode %s frame for %s: %w", kind, s.Path, err)
	}
	return b, kind, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// names answers for one snapshot's node names: whether one repeats, and
// where each is. Both are worked out when first asked: a one-node change
// learns that the new snapshot's names are unique from the last one's and
// its few new names (matchNames), without a map of every name, which was
// the biggest part of a delta of a 1,000-node queue.
type names struct {
	nodes []lockqueue.Node
	once  sync.Once
	index map[string]int
	uniq  atomic.Int32 // uniqUnknown, uniqYes or uniqNo
}

const (
	uniqUnknown = iota
	uniqYes
	uniqNo
)

func newNames(nodes []lockqueue.Node) *names { return &names{nodes: nodes} }

// positions maps each name to its node's position (a repeated name to its
// last).
func (n *names) positions() map[string]int {
	n.once.Do(func() {
		n.index = make(map[string]int, len(n.nodes))
		for i := range n.nodes {
			n.index[n.nodes[i].Name] = i
		}
		n.learn(len(n.index) == len(n.nodes))
	})
	return n.index
}

// unique reports whether no name repeats.
func (n *names) unique() bool {
	if u := n.uniq.Load(); u != uniqUnknown {
		return u == uniqYes
	}
	n.positions()
	return n.uniq.Load() == uniqYes
}

func (n *names) learn(unique bool) {
	u := int32(uniqNo)
	if unique {
		u = uniqYes
	}
	n.uniq.CompareAndSwap(uniqUnknown, u)
}

// smallMiddle bounds the nodes between the common head and tail that
// matchNames pairs by scanning rather than by maps.
const smallMiddle = 8

// matchNames says where each of s's nodes was in prev (from; -1 for a new
// name) and which of prev's names are gone, in prev's order; ok is false
// when a name repeats in either. Most changes add or remove a node or two
// and leave the rest where they were: the nodes equal by name at the same
// place from the head and from the tail are paired without maps, and only
// the few between are looked up.
func matchNames(prev, s *names) (from []int, gone []string, ok bool) {
	if !prev.unique() {
		return nil, nil, false
	}
	p, n := prev.nodes, s.nodes
	head := 0
	for head < len(p) && head < len(n) && p[head].Name == n[head].Name {
		head++
	}
	tail := 0
	for tail < len(p)-head && tail < len(n)-head && p[len(p)-1-tail].Name == n[len(n)-1-tail].Name {
		tail++
	}
	pmid, nmid := p[head:len(p)-tail], n[head:len(n)-tail]
	if len(pmid) > smallMiddle || len(nmid) > smallMiddle {
		return matchByMaps(prev, s)
	}
	from = make([]int, len(n))
	for i := range head {
		from[i] = i
	}
	for i := len(n) - tail; i < len(n); i++ {
		from[i] = i + len(p) - len(n)
	}
	// prev's names are unique and its head and tail are s's, so s repeats
	// a name only among its middle nodes, or by a middle name that is in
	// prev but not in prev's middle.
	matched := make([]bool, len(pmid))
	for k := range nmid {
		at, name := head+k, nmid[k].Name
		if hasName(nmid[:k], nil, name) {
			s.learn(false)
			return nil, nil, false
		}
		from[at] = -1
		if j := slices.IndexFunc(pmid, func(n lockqueue.Node) bool { return n.Name == name }); j >= 0 {
			matched[j], from[at] = true, head+j
		} else if hasName(p[:head], p[len(p)-tail:], name) {
			s.learn(false)
			return nil, nil, false
		}
	}
	for j := range pmid {
		if !matched[j] {
			gone = append(gone, pmid[j].Name)
		}
	}
	s.learn(true)
	return from, gone, true
}

func hasName(a, b []lockqueue.Node, name string) bool {
	return slices.ContainsFunc(a, func(n lockqueue.Node) bool { return n.Name == name }) ||
		slices.ContainsFunc(b, func(n lockqueue.Node) bool { return n.Name == name })
}

// matchByMaps is matchNames for any change, by the maps of both.
func matchByMaps(prev, s *names) (from []int, gone []string, ok bool) {
	pindex, sindex := prev.positions(), s.positions()
	if !prev.unique() || !s.unique() {
		return nil, nil, false
	}
	for i := range prev.nodes {
		if _, ok := sindex[prev.nodes[i].Name]; !ok {
			gone = append(gone, prev.nodes[i].Name)
		}
	}
	from = make([]int, len(s.nodes))
	for at := range s.nodes {
		i, ok := pindex[s.nodes[at].Name]
		if !ok {
			i = -1
		}
		from[at] = i
	}
	return from, gone, true
}

// delta patches prev into s; ok is false when either repeats a node name,
// or when nodes left as they were changed places.
// index gives the names of prev's nodes (ofPrev) or of s's; nil makes
// them.
func delta(prev, s lockqueue.Snapshot, index func(ofPrev bool) *names) (*Delta, bool) {
	if index == nil {
		index = func(ofPrev bool) *names {
			if ofPrev {
				return newNames(prev.Nodes)
			}
			return newNames(s.Nodes)
		}
	}
	from, gone, ok := matchNames(index(true), index(false))
	if !ok {
		return nil, false
	}
	d := &Delta{
		Service: s.Service, Path: s.Path, Base: prev.Revision, Revision: s.Revision, Connection: s.Connection,
		WatchSource: s.WatchSource, Recipe: s.Recipe, Exists: s.Exists, Leases: s.Leases, LeasesInferred: s.LeasesInferred,
		Alerts: s.Alerts, InvisibleChildWatches: s.InvisibleChildWatches, UpdatedAt: s.UpdatedAt,
		Error: s.Error, UnknownSince: s.UnknownSince, Note: s.Note, AnonymousWaiters: s.AnonymousWaiters, AnonymousSince: s.AnonymousSince,
		Filling: s.Filling, Upsert: []lockqueue.Node{}, At: []int{}, Remove: append([]string{}, gone...),
	}
	last := -1 // prev's position of the last node kept as it was
	for at := range s.Nodes {
		n := &s.Nodes[at]
		i := from[at]
		if i < 0 || !nodeEqual(&prev.Nodes[i], n) {
			d.Upsert = append(d.Upsert, *n)
			d.At = append(d.At, at)
			continue
		}
		if i < last {
			// Unchanged nodes that swapped places: positions of the
			// upserts alone cannot say so, a whole snapshot can.
			return nil, false
		}
		last = i
	}
	return d, true
}

// nodeEqual is lockqueue.NodesEqual (pointers: a node is hundreds of bytes,
// and a delta compares every node of the queue); TestNodeEqualCoversEveryField
// holds it to every field.
func nodeEqual(a, b *lockqueue.Node) bool { return lockqueue.NodesEqual(a, b) }
