package zookeeper

import (
	"cmp"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Words are how the pages word ZooKeeper's locks: every mode, and the
// watches its sessions hold, which the server's watch table reports.
func Words() *lockservice.Words {
	legend := lockservice.ModeItems(lockqueue.Read, lockqueue.Write, lockqueue.Exclusive, lockqueue.Lease, lockqueue.Unknown)
	legend = append(legend, lockservice.Holding,
		lockservice.LegendItem{Key: "stalled-holder", Swatch: "stalled", Label: "holds by rule, client still waiting (stalled)",
			Title: "dashed red ring and an hourglass: the recipe says it holds, but its session still watches another node of the lock: its client missed the wake-up"})
	legend = append(legend, arrows...)
	return &lockservice.Words{
		Legend:     legend,
		Columns:    lockservice.Columns{Watches: true, Edge: true, Session: true},
		Missing:    "the lock parent does not exist (yet)",
		Source:     func(src string) (string, string) { return "watches from", cmp.Or(src, "none") },
		Watches:    true,
		ReadOnly:   "zklockviz sets one persistent recursive watch on the lock (on ZooKeeper before 3.6, a children watch on its folder) and never writes to ZooKeeper.",
		NoReader:   "a ZooKeeper watcher",
		ReaderFlag: "--zk",
	}
}

// arrows are the edges of a ZooKeeper lock: the recipe's rule and the
// watches the server's table reports.
var arrows = []lockservice.LegendItem{
	{Key: "rule", Swatch: "rule", Label: "recipe: waits for", Title: "solid, above the lane: what its recipe says it waits for"},
	{Key: "confirmed", Swatch: "actual", Label: "watches (as it should)", Title: "dashed, below the lane: the watch its session holds, as the recipe says"},
	{Key: "children", Swatch: "actual", Label: "watches all children (herd)", Title: "dashed up into the parent bar: a children watch; every waiter is woken by every change"},
	{Key: "unexpected", Swatch: "actual", Label: "watches something else", Title: "dashed: its session watches a node the recipe does not say"},
	{Key: "missing", Swatch: "rule", Label: "should watch, does not", Title: "the recipe says it waits for this node, but its session watches nothing"},
	{Key: "dangling", Swatch: "actual", Label: "watches a gone node", Title: "dashed into a small ghost: a leaked watch on a deleted node"},
	{Key: "deadlock", Swatch: "actual", Label: "watch cycle (deadlock)", Title: "heavy red: nodes that wait on each other, a stalled holder included"},
	{Key: "stalled", Swatch: "actual", Label: "what a stalled holder still waits for", Title: "heavy dashed red from a holder: the watch its client is stuck on"},
}
