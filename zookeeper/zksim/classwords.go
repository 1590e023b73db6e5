package zksim

import (
	"fmt"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
)

// ClassroomWords are what the classroom page says of ZooKeeper's runs: the
// herd meter of the recipes' watches, a client's own znode and the watch
// strategies a run is titled by.
var ClassroomWords = lockservice.ClassroomWords{
	Hint: "Click a client or a node to see its session, node, data and wait, and to release, crash or pause it.",
	Actions: map[string]string{
		"release": "delete its node: the lock passes on",
		"crash":   "close its session: ZooKeeper deletes its node at once",
		"pause":   "stop its heartbeats (a GC pause): its session expires later",
	},
	Meters: []lockservice.Meter{
		{Key: "notifications", Label: "notifications", Help: "watch events delivered"},
		{Key: "getChildren", Label: "getChildren", Help: "calls: each woken waiter re-reads the queue"},
		{Key: "wastedWakeups", Label: "wasted wake-ups", Help: "woken, but did not acquire", GoodAtZero: true},
		{Key: "exists", Sum: []string{"exists", "getData"}, Label: "exists / getData", Help: "watches set on one node", Good: true},
	},
	PairsScale:     true,
	NodeLines:      true,
	LegendAllModes: true,
	Strategies: map[string]string{
		"herd":        "herd: every waiter watches all children",
		"children":    "children: every standby watches the lock's children",
		"predecessor": "predecessor: each waiter watches one node",
	},
	Panes: []lockservice.SidePane{{Service: lockqueue.ZooKeeper, Scenario: "zk-side-by-side", Label: "ZooKeeper", Order: 10}},
}

// ClassroomWords are the classroom page's words for ZooKeeper's runs
// (lockservice.ClassroomWorder).
func (*Backend) ClassroomWords() lockservice.ClassroomWords { return ClassroomWords }

// RunWords word a run in ZooKeeper's terms: a lock parent's watches, the
// session timeout, and the recipe's requests, which the classroom counts
// because ZooKeeper counts per server, not per lock.
func (*Backend) RunWords() simulator.RunWords {
	return simulator.RunWords{
		Heading: func(rep simulator.Report) string {
			return fmt.Sprintf("scenario %s (%s lock, %s watching, fencing %s) on %s, session timeout %.1fs",
				rep.Scenario, rep.Lock, rep.Strategy, rep.FencingOnOff(), rep.Path, rep.TimeoutSeconds())
		},
		Counts: func(s simulator.Stats) string {
			return fmt.Sprintf("notifications %d, getChildren %d, exists %d, getData %d, wasted wake-ups %d (creates %d, deletes %d, writes %d, fenced %d; token reads %d, not the recipe's)",
				s.Notifications, s.GetChildren, s.Exists, s.GetData, s.WastedWakeups, s.Create, s.Delete, s.Writes, s.Fenced, s.TokenReads)
		},
		Requests: func(s simulator.Stats) (int, string) {
			return s.GetChildren + s.Exists + s.GetData + s.Create + s.Delete,
				"the clients' ZooKeeper requests (getChildren, exists, getData, create, delete), counted by the classroom: ZooKeeper counts per server, not per lock"
		},
		UntimedViolations: true,
	}
}
