package lockqueue

import (
	"encoding/base64"
	"fmt"
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
}

// MaxData bounds how much of a node's data a Snapshot carries.
const MaxData = 1024

// seqWrapMargin: warn when fewer than this many sequence numbers are left before
// the signed 32-bit counter wraps.
const seqWrapMargin = 1 << 24

// Build works out the queue under path from its children. It never fails:
// whatever does not fit a recipe becomes an alert.
func Build(path string, children []Child, opt Options) Snapshot {
	s := Snapshot{Path: path, Exists: true, Alerts: []Alert{}}
	// One allocation for every node: lock nodes fill it from the front and
	// foreign children go after them, so it becomes s.Nodes as it is.
	lock := make([]Node, 0, len(children))
	var foreign []Node
	recipes := map[Recipe]bool{}
	hasRlock := false
	for _, c := range children {
		nm, ok := ParseName(c.Name)
		n := Node{
			Name: c.Name, Seq: nm.Seq, Mode: nm.Mode, Recipe: nm.Recipe,
			Session: SessionHex(c.EphemeralOwner), Ctime: c.Ctime, Czxid: c.Czxid,
			owner: c.EphemeralOwner, wrapped: ok && nm.HasSeq && nm.Seq < 0,
			kazooLock: ok && nm.Recipe == Kazoo && nm.Kind == "lock",
		}
		n.Data, n.DataBinary = EncodeData(c.Data)
		if !ok {
			n.Foreign = true
			foreign = append(foreign, n)
			continue
		}
		recipes[nm.Recipe] = true
		if nm.Recipe == Kazoo && nm.Kind == "rlock" {
			hasRlock = true
		}
		lock = append(lock, n)
	}

	s.Recipe = folderRecipe(recipes)
	for i := range lock {
		if lock[i].kazooLock && hasRlock {
			lock[i].Mode = Write
		}
	}
	sort.SliceStable(lock, func(i, j int) bool { return queueLess(lock[i], lock[j]) })
	sort.SliceStable(foreign, func(i, j int) bool { return foreign[i].Name < foreign[j].Name })

	s.Leases = opt.Leases
	if s.Recipe == Kazoo && onlyMode(lock, Lease) {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(string(opt.ParentData)), &n); err == nil && n > 0 {
			s.Leases = n
		}
	}
	assign(lock, s.Leases)
	if opt.WatchChildren {
		for i := range lock {
			if !lock[i].Holding {
				lock[i].WaitsOn = "children"
			}
		}
	}

	s.Nodes = append(lock, foreign...)
	s.Alerts = folderAlerts(s, recipes, foreign, opt)
	return s
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
	for _, n := range nodes {
		if n.Mode != m {
			return false
		}
	}
	return len(nodes) > 0
}

// queueLess orders by sequence, then by creation (unsequenced lease nodes), then name.
func queueLess(a, b Node) bool {
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
				q[i].WaitsOn = "children"
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
				q[i].WaitsOn = "children"
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

func folderAlerts(s Snapshot, recipes map[Recipe]bool, foreign []Node, opt Options) []Alert {
	alerts := []Alert{}
	if len(foreign) > 0 {
		var names []string
		for _, n := range foreign {
			names = append(names, n.Name)
		}
		if len(foreign) == len(s.Nodes) {
			alerts = append(alerts, Alert{Kind: AlertNotALock, Nodes: clip(names),
				Message: fmt.Sprintf("%s has %d children and none is a lock node of a known recipe", s.Path, len(names))})
		} else {
			alerts = append(alerts, Alert{Kind: AlertForeign, Nodes: clip(names),
				Message: fmt.Sprintf("%d children match no lock recipe; go-zookeeper's Lock fails on them, Curator sorts them by whole name, kazoo ignores them", len(names))})
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
	for _, n := range s.Nodes {
		if n.owner == 0 {
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
		for _, n := range s.Nodes {
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
	const max = 50
	if len(names) > max {
		return names[:max]
	}
	return names
}

// SessionHex formats a session id as zkCli does.
func SessionHex(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }

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
