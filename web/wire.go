package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

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
// socket, into the next one. Its fields are the snapshot's own fields as
// the snapshot's JSON has them, so a client patches its copy without
// knowing their names: Header holds those, all but the nodes, that are set
// and differ from the base's; Cleared names those the base had and the
// next one leaves out (gone to zero, which the JSON omits). Nodes are
// patched: Upsert holds the nodes that are new or changed in any field,
// in the new snapshot's order, At the position of each in the new node
// list, and Remove the names that are gone. A client drops the removed and
// upserted names from its list and puts each upsert at its position: the
// order is the server's (lockqueue.SortNodes), never derived again.
type Delta struct {
	Base    int64            `json:"base"`
	Header  json.RawMessage  `json:"header,omitempty"`
	Cleared []string         `json:"cleared,omitempty"`
	Upsert  []lockqueue.Node `json:"upsert"`
	At      []int            `json:"at"`
	Remove  []string         `json:"remove"`
}

// snapshotHeader is a snapshot's JSON less its nodes.
type snapshotHeader struct {
	*lockqueue.Snapshot
	// Nodes shadows the snapshot's (the shallower field of a JSON name
	// wins) and is always left out: a delta's nodes are its upserts.
	Nodes struct{} `json:"nodes,omitzero"`
}

// headerPatch is what Delta's Header and Cleared say to turn prev's
// header into s's: the members of s's header JSON that are not in prev's
// alike, and the keys of prev's that s's has not.
func headerPatch(prev, s *lockqueue.Snapshot) (json.RawMessage, []string, error) {
	pb, err := json.Marshal(snapshotHeader{Snapshot: prev})
	if err != nil {
		return nil, nil, err
	}
	sb, err := json.Marshal(snapshotHeader{Snapshot: s})
	if err != nil {
		return nil, nil, err
	}
	pm, sm := members(pb), members(sb)
	set := make([]byte, 0, len(sb))
	for _, m := range sm {
		if i := slices.IndexFunc(pm, func(p member) bool { return bytes.Equal(p.key, m.key) }); i >= 0 && bytes.Equal(pm[i].val, m.val) {
			continue
		}
		set = append(append(append(append(set, ','), m.key...), ':'), m.val...)
	}
	if len(set) == 0 {
		set = nil // nothing changed: no header
	} else {
		set[0] = '{'
		set = append(set, '}')
	}
	var cleared []string
	for _, p := range pm {
		if !slices.ContainsFunc(sm, func(m member) bool { return bytes.Equal(p.key, m.key) }) {
			// A struct field's JSON name needs no escapes: its quotes off.
			cleared = append(cleared, string(p.key[1:len(p.key)-1]))
		}
	}
	return set, cleared, nil
}

// member is one member of a JSON object: its key, quoted, and its value.
type member struct{ key, val []byte }

// members splits obj, a JSON object as encoding/json writes it (valid,
// no spaces), into its members, which share obj's bytes. A scan rather
// than a map: every delta splits two headers, and headerPatch, the scan
// included, costs about 3.5 µs and 13 allocations a delta.
func members(obj []byte) []member {
	out := make([]member, 0, 24) // a snapshot has about 20 fields
	for i := 1; i < len(obj)-1; {
		k := i
		i = stringEnd(obj, i)
		v := i + 1 // past the ':'
		i = valueEnd(obj, v)
		out = append(out, member{key: obj[k : v-1], val: obj[v:i]})
		i++ // past the ',' (or onto the closing brace)
	}
	return out
}

// stringEnd is the index just past the JSON string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd is the index just past the JSON value that starts at b[i],
// a member's value inside an object: where the next ',' or the object's
// '}' is.
func valueEnd(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
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
		p.Alerts = nonNil(p.Alerts) // as s's: not a change of the header
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
	} else if ch, ok := changed(*prev, s, index); !ok {
		// Duplicate names or a reordering the patch could not express.
		b, kind, err = whole()
	} else {
		// The delta's nodes are copied only once it is known to be sent
		// or weighed: a change of every node of a big queue (a watch-table
		// verdict) copied the whole queue into a delta only to drop it.
		var d *Delta
		var header json.RawMessage
		var cleared []string
		header, cleared, err = headerPatch(prev, &s)
		if err == nil && len(ch.at) != len(s.Nodes) {
			d = ch.delta(prev.Revision, s)
			d.Header, d.Cleared = header, cleared
		}
		switch {
		case err != nil:
		case d == nil:
			// It keeps no node: the whole snapshot is hardly bigger, and
			// lets a client start afresh, as past the cutoff below.
			b, kind, err = whole()
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

// changes is what a delta from prev to s holds, as positions: the nodes of
// s new or changed (at) and the names of prev's nodes gone.
type changes struct {
	at   []int
	gone []string
}

// delta is the Delta of c from the snapshot of revision base to s.
func (c changes) delta(base int64, s lockqueue.Snapshot) *Delta {
	d := &Delta{Base: base, Upsert: make([]lockqueue.Node, 0, len(c.at)), At: c.at, Remove: append([]string{}, c.gone...)}
	for _, at := range c.at {
		d.Upsert = append(d.Upsert, s.Nodes[at])
	}
	return d
}

// changed finds the changes that patch prev into s; ok is false when
// either repeats a node name, or when nodes left as they were changed
// places. index gives the names of prev's nodes (ofPrev) or of s's; nil
// makes them.
func changed(prev, s lockqueue.Snapshot, index func(ofPrev bool) *names) (changes, bool) {
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
		return changes{}, false
	}
	c := changes{at: []int{}, gone: gone}
	last := -1 // prev's position of the last node kept as it was
	for at := range s.Nodes {
		n := &s.Nodes[at]
		i := from[at]
		if i < 0 || !nodeEqual(&prev.Nodes[i], n) {
			c.at = append(c.at, at)
			continue
		}
		if i < last {
			// Unchanged nodes that swapped places: positions of the
			// upserts alone cannot say so, a whole snapshot can.
			return changes{}, false
		}
		last = i
	}
	return c, true
}

// nodeEqual is lockqueue.NodesEqual (pointers: a node is hundreds of bytes,
// and a delta compares every node of the queue); TestNodeEqualCoversEveryField
// holds it to every field.
func nodeEqual(a, b *lockqueue.Node) bool { return lockqueue.NodesEqual(a, b) }
