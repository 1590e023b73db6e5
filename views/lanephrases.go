package views

// lanePhrases are the lane's titles and labels (LaneWords.Say), which
// static/queue.js fills with the names and counts of what it draws: {x} is
// a value, {n|one|many} the word for a count of one or of any other. The
// browser words nothing of its own.
var lanePhrases = map[string]string{
	"parent.invisible": "  · {n} children {n|watch|watches} the server cannot list",
	"parent.leases":    "  · {n} {n|waits|wait} for a free lease",
	"parent.herd":      "  · herd: {n} {n|watches|watch} all children",
	"parent.herdWhy":   ": every change to the children wakes every one of them",

	"rule.children": "{name} waits on the children of {path}",
	"rule.waits":    "{name} waits for {target}",
	"rule.server":   " ({prov}: the server reports it)",
	"rule.rule":     " ({prov}: by the recipe's rule; the server keeps no record of it)",
	"rule.plain":    " (recipe rule)",
	"rule.missing":  " — but its session watches nothing there",
	"blocked":       "{name} is blocked by {to} ({prov}: the server reports it)",

	"watch":            "{name}'s session watches {target}",
	"watch.children":   "{name}'s session watches the children of {path}",
	"watch.gone":       "gone",
	"watch.leaked":     "watched node {target} no longer exists: a leaked watch",
	"watch.dangling":   " (gone: dangling watch)",
	"watch.unexpected": " (not what its recipe says)",
	"watch.deadlock":   " (part of a watch cycle)",
	"watch.stuck":      " ({name} holds by its recipe's rule, but its client still waits for this node: a stalled holder)",
	"watch.stuckCycle": " ({name} holds by its recipe's rule, but its client still waits for this node: a stalled holder, in a deadlock cycle)",

	"group.holdWait":  "{hold} hold · {wait} wait …",
	"group.holding":   "holding …",
	"group.waiting":   "waiting …",
	"group.positions": "#{from}–#{to}",
	"group.title":     "{count} nodes folded (queue positions {from} to {to}); the table lists them all",
	"group.open":      "; click to show them",

	"cycle.link": "{who} ({session}) holds {here} and waits for {there}: one session in both locks, part of the wait cycle",
	"cycle.tag":  "{who}: holds {here}, waits for {there}",

	"node.aria":           "{name}: {mode}, {state}",
	"node.ariaWaits":      ", waits for {target}",
	"node.ariaStalled":    ", {stalled} {on}",
	"node.ariaPartOf":     ", {partOf}{of}",
	"node.tipState":       "{mode} · {state}",
	"node.tipWaits":       " · waits for {target}",
	"node.tipChildren":    " · waits on the parent's children",
	"node.tipStalled":     "{stalled} {on} (since {since})",
	"node.tipPartOf":      "{partOf}{of}: one contender with it, not a waiter of its own",
	"node.tipSession":     "session {session}",
	"node.tipAlert":       "⚠ {kind}: {message}",
	"node.stillWaits":     "its client still waits",
	"node.waitUnknown":    "when it began to wait is unknown: the service gave no creation time for it (it was there before zklockviz started reading)",
	"node.holdUnknown":    "already holding when this page opened: held at least this long; when it acquired is unknown",
	"node.holdSinceMade":  "already holding when this page opened: the time since its node was created (ZooKeeper's ctime, corrected for the server's measured clock offset); it acquired at or after that, when exactly is unknown",
	"details.holdingFor":  "holding for",
	"details.holdAtLeast": "holding for at least",
	"details.holdAtMost":  "holding for at most (since created)",
}
