package lockqueue

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Options carry what a folder's children cannot say themselves.
type Options struct {
	// Leases is the lease limit for a semaphore or an N-holder queue; 0 when unknown.
	// A positive limit turns a plain exclusive queue into an N-holder one: the
	// first Leases nodes hold (seed 001).
	Leases int
	// ParentData is the lock parent's data: kazoo's Semaphore keeps its limit there.
	ParentData []byte
	// CVersion is the parent's child-change counter, the source of sequence numbers.
	CVersion int32
	// WatchChildren says the clients use the naive recipe (seed 002's first
	// version): every waiter watches the parent's children, not one node. Their
	// rule is then a children watch, and each waiter still names the node that
	// blocks it in WaitsFor. Nothing in ZooKeeper tells this; the simulator does.
	WatchChildren bool
	// Semaphore, when set, says the children are a semaphore's (the
	// recipe SemaphoreFolders found), read from its path and the folders
	// SemaphoreFolders names, each child with its Folder: the lease nodes
	// and the queue of the lock that guards adding one make one queue.
	Semaphore Recipe
}

// MaxData bounds how much of a node's data a Snapshot carries: a snapshot
// holds the nodes queued now, so the detail pane can show a kilobyte of
// each. The history keeps a quarter of it (history.MaxData) because it
// keeps every node ever queued.
const MaxData = 1024

// seqWrapMargin: warn when fewer than this many sequence numbers are left before
// the signed 32-bit counter wraps.
const seqWrapMargin = 1 << 24

// Build works out the queue under path from its children. It never fails:
// whatever does not fit a recipe becomes an alert.
func Build(path string, children []Child, opt Options) Snapshot {
	// One allocation for every node: it becomes s.Nodes as it is.
	nodes := make([]Node, len(children))
	for i, c := range children {
		nodes[i] = NewNode(c)
	}
	return BuildNodes(path, nodes, opt)
}

// NewNode is what a child says about itself alone: its name parsed, its
// session and data formatted. Build makes one per child each time; a caller
// that rebuilds a queue after each change (the watcher) keeps the nodes of
// the last build and passes them again to BuildNodes, so a child's name is
// parsed and its data encoded once.
func NewNode(c Child) Node {
	nm, ok := ParseName(c.Name)
	n := Node{
		Name: c.Name, Seq: nm.Seq, Mode: nm.Mode, Recipe: nm.Recipe,
		Session: SessionHex(c.EphemeralOwner), Ctime: c.Ctime, Czxid: c.Czxid,
		Foreign: !ok, owner: c.EphemeralOwner, parsed: codeOf(nm.Mode),
		wrapped: ok && nm.HasSeq && nm.Seq < 0,
	}
	n.SetFolder(c.Folder)
	n.Data, n.DataBinary = EncodeData(c.Data)
	return n
}

// NewNamedNode is what a child's name alone says: its order, mode and recipe
// by the name's rule, with no data, creation or session (Unread). A big
// queue's listing is built from these first, then each node replaced by
// NewNode's once its data is read.
func NewNamedNode(name, folder string) Node {
	n := NewNode(Child{Name: name, Folder: folder})
	n.Session, n.unread = "", true
	return n
}

// BuildNodes is Build over nodes made by NewNode, in any order: either
// fresh, or taken from an earlier Snapshot (Build's or JoinWatches' output;
// what they worked out is reset). It takes nodes over: they are reordered
// and filled in place and become s.Nodes, so a caller passes a slice no
// one else uses. Input already in queue order (an earlier snapshot's nodes,
// new ones after them) is not sorted again.
func BuildNodes(path string, nodes []Node, opt Options) Snapshot {
	s := Snapshot{Path: path, Exists: true, Alerts: []Alert{}}
	if nodes == nil {
		nodes = []Node{}
	}
	recipes, nforeign := resetNodes(nodes)
	if nforeign > 0 {
		foreignLast(nodes, nforeign)
	}
	lock, foreign := nodes[:len(nodes)-nforeign], nodes[len(nodes)-nforeign:]

	s.Recipe = folderRecipe(recipes)
	if s.Recipe == NoRecipe {
		s.Recipe = opt.Semaphore // an empty semaphore is still one
	}
	sortNodes(lock, func(a, b *Node) bool { return queueLess(a, b) })
	sortNodes(foreign, func(a, b *Node) bool { return a.Name < b.Name })
	s.Leases, s.LeasesInferred = assignLeases(lock, s.Recipe, opt)
	if opt.WatchChildren {
		for i := range lock {
			if !lock[i].Holding {
				lock[i].WaitsOn = OnChildren
			}
		}
	}

	s.Nodes = nodes
	s.Alerts = folderAlerts(s, recipes, foreign, opt)
	return s
}

// resetNodes clears what a previous build derived on each node, and says
// which recipes the lock nodes use and how many nodes are foreign.
func resetNodes(nodes []Node) (recipes map[Recipe]bool, nforeign int) {
	recipes = map[Recipe]bool{}
	var last Recipe
	for i := range nodes {
		n := &nodes[i]
		n.Mode, n.Holding, n.WaitsFor, n.WaitsOn = n.parsedMode(), false, "", OnNode
		n.SetPartOf("")
		n.Watching, n.Edge, n.Zombie = nil, EdgeNone, false
		n.SetExpiresInMs(0)
		if n.Foreign {
			nforeign++
			continue
		}
		// A queue's nodes nearly all share one recipe: a map write per
		// node was about a seventh of a 1,000-node change's build and join.
		if n.Recipe != last || len(recipes) == 0 {
			recipes[n.Recipe], last = true, n.Recipe
		}
	}
	return recipes, nforeign
}

// foreignLast moves the nforeign foreign children after the lock nodes,
// keeping each group's order.
func foreignLast(nodes []Node, nforeign int) {
	foreign := make([]Node, 0, nforeign)
	j := 0
	for _, n := range nodes {
		if n.Foreign {
			foreign = append(foreign, n)
		} else {
			nodes[j] = n
			j++
		}
	}
	copy(nodes[j:], foreign)
}

// assignLeases runs the recipe's rule over the sorted lock nodes and says
// how many leases the lock has, and whether that number was inferred from
// the holders rather than known.
func assignLeases(lock []Node, recipe Recipe, opt Options) (leases int, inferred bool) {
	leases = opt.Leases
	if recipe == Kazoo && (opt.Semaphore == Kazoo || onlyMode(lock, Lease)) {
		if n, ok := kazooLimit(opt.ParentData); ok {
			leases = n
		}
	}
	if opt.Semaphore == NoRecipe {
		assign(lock, leases)
		return leases, false
	}
	if n := assignSemaphore(lock, leases); n > 0 {
		return n, true
	}
	return leases, false
}

// sortNodes sorts nodes stably by less, unless they are sorted already. It
// sorts indexes and moves each node once: nodes are big.
func sortNodes(nodes []Node, less func(a, b *Node) bool) {
	sorted := true
	for i := 1; i < len(nodes); i++ {
		if less(&nodes[i], &nodes[i-1]) {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	idx := make([]int32, len(nodes))
	for i := range idx {
		idx[i] = int32(i)
	}
	// Stable by the index as the last key, which lets the faster unstable
	// sort do it: a stable sort of 100,000 indexes took twice as long.
	slices.SortFunc(idx, func(a, b int32) int {
		switch {
		case less(&nodes[a], &nodes[b]):
			return -1
		case less(&nodes[b], &nodes[a]):
			return 1
		}
		return cmp.Compare(a, b)
	})
	// Moved into place cycle by cycle, one node aside at a time: a copy
	// of the whole queue to move from was 49 MB for 100,000 nodes.
	for i := range idx {
		if idx[i] == int32(i) {
			continue
		}
		tmp, j := nodes[i], i
		for {
			k := int(idx[j])
			idx[j] = int32(j)
			if k == i {
				nodes[j] = tmp
				break
			}
			nodes[j] = nodes[k]
			j = k
		}
	}
}

func folderRecipe(recipes map[Recipe]bool) Recipe {
	switch len(recipes) {
	case 0:
		return NoRecipe
	case 1:
		for r := range recipes {
			return r
		}
	}
	return Mixed
}

func onlyMode(nodes []Node, m Mode) bool {
	for ni := range nodes {
		n := &nodes[ni]
		if n.Mode != m {
			return false
		}
	}
	return len(nodes) > 0
}

// queueLess orders by folder (a semaphore's leases before its lock queue),
// then by the service's own order (etcd's create revision, PostgreSQL's
// wait start; ZooKeeper leaves it 0), then by sequence, then by creation
// (unsequenced lease nodes), then name.
func queueLess(a, b *Node) bool {
	if a.Folder() != b.Folder() {
		return a.Folder() < b.Folder()
	}
	if a.Order() != b.Order() {
		return a.Order() < b.Order()
	}
	if a.Seq != b.Seq {
		return a.Seq < b.Seq
	}
	if a.Czxid != b.Czxid {
		return a.Czxid < b.Czxid
	}
	return a.Name < b.Name
}

// assign decides who holds and whom each waiter waits for, per recipe.
func assign(q []Node, leases int) {
	if len(q) == 0 {
		return
	}
	if onlyMode(q, Lease) {
		// Semaphore leases: every lease node is held, except the newest ones while
		// there are more than the limit (Curator's pending acquirer).
		for i := range q {
			q[i].Holding = leases <= 0 || i < leases
			if !q[i].Holding {
				q[i].WaitsOn = OnChildren
			}
		}
		return
	}
	if leases > 0 && onlyMode(q, Exclusive) {
		// N-holder queue (seed 001): the first N hold; a standby must hear of any
		// holder going, so its rule is a children watch on the parent.
		for i := range q {
			q[i].Mode = Lease
			q[i].Holding = i < leases
			if !q[i].Holding {
				q[i].WaitsOn = OnChildren
			}
		}
		return
	}
	firstWriter := -1
	nearestWriter := -1
	for i := range q {
		n := &q[i]
		switch n.Mode {
		case Read:
			if nearestWriter < 0 {
				n.Holding = true
				break
			}
			if n.Recipe == Curator {
				if downgrade(&q[firstWriter], n) {
					n.Holding = true
					break
				}
				// Curator's readers all watch the first writer in the queue.
				n.WaitsFor = q[firstWriter].Name
			} else {
				n.WaitsFor = q[nearestWriter].Name
			}
		default:
			if i == 0 {
				n.Holding = true
			} else {
				n.WaitsFor = q[i-1].Name
			}
		}
		if n.Mode != Read {
			if firstWriter < 0 {
				firstWriter = i
			}
			nearestWriter = i
		}
	}
}

// downgrade reports whether reader r is Curator's downgrade of writer w:
// InterProcessReadWriteLock grants the read lock at once to the thread that
// holds the write lock, so a reader of the session holding the first writer
// holds beside it and watches nothing. A session is all ZooKeeper shows of a
// thread; another thread of that session would in fact wait, which no
// listing can tell. kazoo's ReadLock and the ZooKeeper recipe's shared lock
// have no such rule: their reader waits for any lower writer, its own
// session's included, so it stays a waiter there (and waits forever).
func downgrade(w, r *Node) bool {
	return w.Holding && w.Recipe == Curator && w.owner != 0 && w.owner == r.owner
}

func folderAlerts(s Snapshot, recipes map[Recipe]bool, foreign []Node, opt Options) []Alert {
	alerts := []Alert{}
	if len(foreign) > 0 {
		var names []string
		for _, n := range foreign {
			names = append(names, n.Name)
		}
		if len(foreign) == len(s.Nodes) {
			alerts = append(alerts, Alert{Kind: AlertNotALock, Nodes: clip(names),
				Message: fmt.Sprintf("%s has %s and %s a lock node of a known recipe", s.Path, Count(len(names), "child", "children"), agree(len(names), "it is not", "none is"))})
		} else {
			alerts = append(alerts, Alert{Kind: AlertForeign, Nodes: clip(names),
				Message: Count(len(names), "child matches", "children match") + " no lock recipe; go-zookeeper's Lock fails on " + agree(len(names), "it", "them") + ", Curator sorts by whole name, kazoo ignores " + agree(len(names), "it", "them")})
		}
	}
	if s.Recipe == Mixed {
		var rs []string
		for r := range recipes {
			rs = append(rs, string(r))
		}
		sort.Strings(rs)
		alerts = append(alerts, Alert{Kind: AlertMixed, Nodes: []string{},
			Message: "nodes of several recipes share this folder (" + strings.Join(rs, ", ") + "); each library sees a different queue"})
	}
	var persistent, wrapped []string
	for ni := range s.Nodes {
		n := &s.Nodes[ni]
		if n.owner == 0 && !n.unread {
			persistent = append(persistent, n.Name)
		}
		if n.wrapped {
			wrapped = append(wrapped, n.Name)
		}
	}
	if len(persistent) > 0 {
		alerts = append(alerts, Alert{Kind: AlertPersistent, Nodes: clip(persistent),
			Message: fmt.Sprintf("%d persistent children: they never go away when their client dies", len(persistent))})
	}
	if len(wrapped) > 0 || int64(opt.CVersion) > int64(1<<31-1-seqWrapMargin) {
		alerts = append(alerts, Alert{Kind: AlertSeqWrap, Nodes: clip(wrapped),
			Message: fmt.Sprintf("the parent's sequence counter (cversion %d) is at or near 2^31; past it names turn negative and every library mis-orders them", opt.CVersion)})
	}
	if s.Leases > 0 {
		held := 0
		for ni := range s.Nodes {
			n := &s.Nodes[ni]
			if n.Holding && n.Mode == Lease {
				held++
			}
		}
		if held > s.Leases {
			alerts = append(alerts, Alert{Kind: AlertOverLeases, Nodes: []string{},
				Message: fmt.Sprintf("%d leases held, limit %d", held, s.Leases)})
		}
	}
	return alerts
}

// clip keeps alert node lists readable on huge folders.
func clip(names []string) []string {
	if len(names) > MaxAlertNames {
		// A copy: a slice of the whole list would keep all of it alive
		// in every snapshot published with the alert.
		return slices.Clone(names[:MaxAlertNames])
	}
	return names
}

// MaxAlertNames is how many nodes an alert names at most (the lock page says
// so under a folded lane).
const MaxAlertNames = 50

// SessionHex formats a session id as zkCli does.
func SessionHex(id int64) string {
	if id == 0 {
		return "0x0" // every persistent node's: no string made per node
	}
	return "0x" + strconv.FormatUint(uint64(id), 16)
}

// EncodeData returns node data as text when it is printable UTF-8, else base64.
// At most MaxData bytes are kept.
func EncodeData(b []byte) (string, bool) {
	if len(b) > MaxData {
		b = b[:MaxData]
	}
	if utf8.Valid(b) && printable(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

func printable(b []byte) bool {
	for _, r := range string(b) {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}
