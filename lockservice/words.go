package lockservice

import (
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Words are how the pages word a service's locks in its own terms: the
// lane's legend, the table's columns, the detail pane's lines and the
// sentences a lock page says. Each service's package supplies its own, so
// the pages (views, static) hold no branch on a service's name and a new
// service needs no change there.
type Words struct {
	// Legend is the lane's key: only the shapes and arrows the service's
	// locks can show.
	Legend []LegendItem
	// Columns are the table's optional columns, when the snapshot carries
	// the service-neutral fields (lockqueue's UsesNeutralFields) or the
	// service's own (Watches, Edge, Session).
	Columns Columns
	// Missing says that a live lock has nothing to show.
	Missing string
	// Source words how the reader reads the lock, from Snapshot.WatchSource:
	// a term ("read from") and its value; "" leaves the line out. Nil:
	// NeutralSource.
	Source func(watchSource string) (term, value string)
	// Watches: the service's clients hold watches on nodes (ZooKeeper), so
	// the detail pane says what a node's session watches and its edge.
	Watches bool
	// HideClient leaves the client line out of the detail pane: the
	// service's Details show the client in its own terms.
	HideClient bool
	// Details are the service's own lines about node n of s, and whether
	// they replace the stored ones (session, data, created); nil: none.
	Details func(s lockqueue.Snapshot, n lockqueue.Node) (lines []DetailLine, replace bool)
	// ReadOnly says what watching a lock does to the server, after
	// "Watching is read-only: "; "": that zklockviz never writes to it.
	ReadOnly string
	// NoReader is what a server that cannot add watches runs without
	// ("a ZooKeeper watcher"); "": its reader.
	NoReader string
	// ReaderFlag is the serve flag that connects its reader ("--zk");
	// "": "--" and the service's name.
	ReaderFlag string
}

// LegendItem is one entry of the lane's legend. Swatch says what
// static/queue.js draws beside the words: "mode" (the shape of mode Key),
// "holding", "stalled", or an arrow ("rule" above the lane, "actual"
// below it) of edge kind Key.
type LegendItem struct {
	Key    string `json:"key"`
	Swatch string `json:"swatch"`
	Label  string `json:"label"`
	Title  string `json:"title,omitempty"`
}

// Columns says which of the table's optional columns a lock's service has,
// and the header of each it names in its own terms. A column empty for
// every node of the service (ZooKeeper's watch table on Redis, a lease on
// PostgreSQL) is not shown.
type Columns struct {
	Watches, Edge, Session bool
	// Order, Client, Lease and BlockedBy are the service-neutral fields'
	// columns, headed by the service's word for them; "" leaves one out.
	Order, Client, Lease, BlockedBy string
}

// DetailLine is one line of the detail pane a service words itself. With
// Since set, the pane shows how long before At (the read) it was, and
// when.
type DetailLine struct {
	Term, Value, Class string
	// Title is the whole value where Value is shortened.
	Title     string
	Since, At time.Time
}

// Holding is the legend's entry every service has: a holder's halo.
var Holding = LegendItem{Key: "holding", Swatch: "holding", Label: "holds the lock (yellow halo)"}

// ModeItems are the legend's entries of the modes a service's locks take,
// in the legend's order; the pages label them as every mode is labelled.
func ModeItems(modes ...lockqueue.Mode) []LegendItem {
	out := make([]LegendItem, 0, len(modes))
	for _, m := range modes {
		out = append(out, LegendItem{Key: string(m), Swatch: "mode"})
	}
	return out
}

// NeutralWords are the words of a service that supplies none: the
// service-neutral columns under their own names, every mode, edges by the
// recipe's rule.
func NeutralWords() Words {
	legend := ModeItems(lockqueue.Read, lockqueue.Write, lockqueue.Exclusive, lockqueue.Lease, lockqueue.Unknown)
	legend = append(legend, Holding, RuleArrow)
	return Words{
		Legend:  legend,
		Columns: Columns{Order: "order", Client: "client", Lease: "lease", BlockedBy: "blocked by"},
		Missing: "the lock does not exist (yet)",
	}
}

// RuleArrow is the edge of a service that keeps no record of who waits for
// whom: the recipe's rule, inferred.
var RuleArrow = LegendItem{"rule", "rule", "waits for (inferred)", "solid, above the lane: what the recipe's rule says it waits for; the service keeps no record of it"}

// NeutralSource words a reader's WatchSource when its service says nothing
// of its own: nothing when it reads no more than the lock, else "read
// from" it.
func NeutralSource(src string) (term, value string) {
	if src == "" || src == "none" {
		return "", ""
	}
	return "read from", src
}

// WordsOf are s's words, NeutralWords when it supplies none.
func (s Service) WordsOf() Words {
	if s.Words != nil {
		return *s.Words
	}
	return NeutralWords()
}
