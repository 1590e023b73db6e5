package zksim

import (
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// recipe is a strategy's pseudocode as the classroom shows it, with the
// lines each client state points at (numbered from 1).
type recipe struct {
	simulator.Recipe
	create, children, hold, watch, wait, release, write int
}

// recipeFor returns the pseudocode a lock kind's clients follow under a
// strategy. Lease standbys always watch the children (seed 001).
func recipeFor(lock simulator.LockKind, s simulator.Strategy) recipe {
	if lock == simulator.LeaseLock {
		return recipe{Recipe: simulator.Recipe{
			Strategy: simulator.Children,
			Lines: []string{
				"create(P + \"/<me>-lock-\", EPHEMERAL_SEQUENTIAL)",
				"children = getChildren(P, watch=true)",
				"if my node is among the N lowest: hold a lease; return",
				"stand by: wait for any change to P's children",
				"goto 2",
				"work: write(resource, token = czxid of my node)",
				"release: delete(my node)",
			},
		},
			create: 1, children: 2, hold: 3, watch: 2, wait: 4, write: 6, release: 7,
		}
	}
	node := "P + \"/<me>-lock-\""
	holdRule := "if my node is the lowest: hold the lock; return"
	pick := "pred = the node just below mine"
	if lock == simulator.RW {
		node = "P + (reader ? \"/R_\" : \"/W_\")"
		holdRule = "reader: hold if no W_ is below me; writer: hold if nothing is below me"
		pick = "pred = reader ? the nearest W_ below me : the node just below mine"
	}
	if s == simulator.Herd {
		return recipe{Recipe: simulator.Recipe{
			Strategy: simulator.Herd,
			Lines: []string{
				"create(" + node + ", EPHEMERAL_SEQUENTIAL)",
				"children = getChildren(P, watch=true)",
				holdRule,
				"wait for any change to P's children (every waiter wakes)",
				"goto 2",
				"work: write(resource, token = czxid of my node)",
				"release: delete(my node)",
			},
		},
			create: 1, children: 2, hold: 3, watch: 2, wait: 4, write: 6, release: 7,
		}
	}
	// exists() rather than getData(): it is what ZooKeeper's own recipe
	// uses, and when pred is already gone it answers "no node" (and leaves a
	// creation watch, which never fires: sequence numbers are not reused)
	// where getData() fails without setting any watch. Either way the client
	// must go back to getChildren, which line 5 does.
	return recipe{Recipe: simulator.Recipe{
		Strategy: simulator.Predecessor,
		Lines: []string{
			"create(" + node + ", EPHEMERAL_SEQUENTIAL)",
			"children = getChildren(P)   // no watch",
			holdRule,
			pick,
			"if not exists(P + \"/\" + pred, watch=true): goto 2",
			"wait for pred's deletion (only this client wakes)",
			"goto 2",
			"work: write(resource, token = czxid of my node)",
			"release: delete(my node)",
		},
	},
		create: 1, children: 2, hold: 3, watch: 5, wait: 6, write: 8, release: 9,
	}
}

// nodePrefix is the name a client asks ZooKeeper to create under the lock;
// the server appends the 10-digit sequence. The R_/W_ names are seed 000's,
// exactly, so lockqueue reads them as recipe "seed-rw"; the others follow the
// ZooKeeper recipes page's "<guid>-lock-" with the client's name as guid.
// lockqueue/parse.go knows these markers but does not export them (its
// patterns are unexported regexps), so they are spelt here;
// TestNodePrefixParses checks that lockqueue.ParseName reads each back as
// the mode it was made for.
func nodePrefix(mode lockqueue.Mode, client string) string {
	switch mode {
	case lockqueue.Read:
		return "R_"
	case lockqueue.Write:
		return "W_"
	}
	return client + "-lock-"
}

// buildOptions are the lockqueue options a lock kind's queue is built with
// under a strategy. Herd waiters watch the parent's children, not one node:
// WatchChildren makes their rule a children watch (edge "children", or
// "missing" when the client's record shows none) instead of an exists
// watch their children watch would be judged "unexpected" against.
// WaitsFor still names the node that blocks each waiter, which is what the
// clients read to decide.
func buildOptions(lock simulator.LockKind, leases int, s simulator.Strategy) lockqueue.Options {
	if lock == simulator.LeaseLock {
		return lockqueue.Options{Leases: leases}
	}
	return lockqueue.Options{WatchChildren: s == simulator.Herd}
}
