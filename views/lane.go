package views

import (
	"fmt"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// LaneWords are the words static/queue.js draws the lane with, rendered into
// every page (layout, #lane-words) so that the browser words nothing of its
// own: the lane's labels are the table's and the detail pane's.
type LaneWords struct {
	// Modes lists each mode's label in the legend's order.
	Modes []ModeWord `json:"modes"`
	// Stalled is a stalled holder's state; PartOf, followed by a node's
	// name, the state of a node that is another node's contender too.
	Stalled string `json:"stalled"`
	PartOf  string `json:"partOf"`
	// Provenance words who vouches for a waits-for edge, by
	// lockqueue.Provenance.
	Provenance map[lockqueue.Provenance]string `json:"provenance"`
	// Missing follows the lock's name when it does not exist; Unknown
	// when the snapshot is not live, whatever it shows (never "free").
	Missing string `json:"missing"`
	Unknown string `json:"unknown"`
	// Legend is each service's legend, by service name: only the shapes
	// and arrows its locks can show, in its own terms.
	Legend map[string][]LegendItem `json:"legend"`
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

// serviceModes are the node modes each service's locks take.
var serviceModes = map[string][]lockqueue.Mode{
	lockqueue.ZooKeeper: legendModes,
	lockqueue.Etcd:      {lockqueue.Read, lockqueue.Write, lockqueue.Exclusive},
	postgres:            {lockqueue.Read, lockqueue.Exclusive},
	redis:               {lockqueue.Exclusive},
}

// zooKeeperArrows are the edges of a ZooKeeper lock: the recipe's rule
// and the watches the server's table reports.
var zooKeeperArrows = []LegendItem{
	{"rule", "rule", "recipe: waits for", "solid, above the lane: what its recipe says it waits for"},
	{"confirmed", "actual", "watches (as it should)", "dashed, below the lane: the watch its session holds, as the recipe says"},
	{"children", "actual", "watches all children (herd)", "dashed up into the parent bar: a children watch; every waiter is woken by every change"},
	{"unexpected", "actual", "watches something else", "dashed: its session watches a node the recipe does not say"},
	{"missing", "rule", "should watch, does not", "the recipe says it waits for this node, but its session watches nothing"},
	{"dangling", "actual", "watches a gone node", "dashed into a small ghost: a leaked watch on a deleted node"},
	{"deadlock", "actual", "watch cycle (deadlock)", "heavy red: nodes that wait on each other, a stalled holder included"},
	{"stalled", "actual", "what a stalled holder still waits for", "heavy dashed red from a holder: the watch its client is stuck on"},
}

// Another service has no watches: its edges are the recipe's rule (etcd,
// Redis: inferred, the server keeps no record) or the server's own report
// (PostgreSQL's pg_blocking_pids: confirmed), nothing else.
var (
	ruleArrows = []LegendItem{
		{"rule", "rule", "waits for (inferred)", "solid, above the lane: what the recipe's rule says it waits for; the service keeps no record of it"},
	}
	postgresArrows = []LegendItem{
		{"rule", "rule", "waits for (confirmed)", "solid, above the lane: the first session the server reports this one waits on (pg_blocking_pids)"},
		{"confirmed", "actual", "also blocked by (confirmed)", "below the lane: every other session the server reports this one waits on"},
	}
)

// redis is Redis's service name (redislock.Name).
const redis = "redis"

// legend is a service's legend: its modes, a holder, ZooKeeper's stalled
// holder, its edges.
func legend(service string) []LegendItem {
	var out []LegendItem
	for _, m := range serviceModes[service] {
		out = append(out, LegendItem{Key: string(m), Swatch: "mode", Label: ModeLabel(m)})
	}
	out = append(out, LegendItem{Key: "holding", Swatch: "holding", Label: "holds the lock (yellow halo)"})
	switch service {
	case lockqueue.ZooKeeper:
		out = append(out, LegendItem{Key: "stalled-holder", Swatch: "stalled", Label: "holds by rule, client still waiting (stalled)",
			Title: "dashed red ring and an hourglass: the recipe says it holds, but its session still watches another node of the lock: its client missed the wake-up"})
		return append(out, zooKeeperArrows...)
	case postgres:
		return append(out, postgresArrows...)
	}
	return append(out, ruleArrows...)
}

// ModeWord is one mode's label.
type ModeWord struct {
	Mode  lockqueue.Mode `json:"mode"`
	Label string         `json:"label"`
}

// legendModes is the order the legend lists the modes in.
var legendModes = []lockqueue.Mode{lockqueue.Read, lockqueue.Write, lockqueue.Exclusive, lockqueue.Lease, lockqueue.Unknown}

// Words are the lane's words.
func Words() LaneWords {
	w := LaneWords{
		Stalled: Stalled, PartOf: partOfPrefix, Missing: "  (does not exist)", Unknown: "  (unknown: the last known state, not live)",
		Provenance: map[lockqueue.Provenance]string{lockqueue.ByRule: Provenance(lockqueue.ByRule), lockqueue.ByServer: Provenance(lockqueue.ByServer)},
	}
	for _, m := range legendModes {
		w.Modes = append(w.Modes, ModeWord{Mode: m, Label: ModeLabel(m)})
	}
	w.Legend = map[string][]LegendItem{}
	for service := range serviceModes {
		w.Legend[service] = legend(service)
	}
	return w
}

// A lane of more than LaneAllUpTo nodes is folded: it draws its first and
// last LaneEnds nodes, the page of the table the viewer reads, the selected
// node, and from the middle at most LaneMaxExtra holders, zombies and
// alerted nodes; the rest are "…" groups with their counts. web/window.go
// picks the nodes and sends only those (with a window that says where they
// are); the browser draws what it is sent.
const (
	LaneAllUpTo  = 2*LaneEnds + 20
	LaneEnds     = 50
	LaneMaxExtra = 200
)

// FoldNote says, under a folded lane, what is drawn of a queue of total
// nodes: the table's page [from, to), drawn nodes in all, extra of them
// from the middle (capped: more were left folded).
func FoldNote(total, from, to, drawn, extra int, capped bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Showing nodes %s–%s of %s (the table's page; pick a “…” group or a page to show others), with the holders. ",
		thousands(from+1), thousands(to), thousands(total))
	fmt.Fprintf(&b, "%s of %s nodes are folded into “…” groups. ", thousands(total-drawn), thousands(total))
	fmt.Fprintf(&b, "Drawn: the first %d and the last %d, the table's page, and from the middle %d %s, zombies, selected or alerted nodes",
		LaneEnds, LaneEnds, extra, plural(extra, "holder", "holders"))
	if capped {
		fmt.Fprintf(&b, " (at most %d: more are folded)", LaneMaxExtra)
	}
	fmt.Fprintf(&b, ". An alert names at most %d nodes, so nodes past that are not marked. The table below lists every node.", lockqueue.MaxAlertNames)
	return b.String()
}
