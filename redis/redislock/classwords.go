package redislock

import (
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
)

// ClassroomWords are what the classroom page says of Redis's runs: what
// polling costs, and what the server counted itself.
var ClassroomWords = lockservice.ClassroomWords{
	Meters: []lockservice.Meter{
		{Key: "commands", Label: "commands sent", Help: "every command the clients sent the server"},
		{Key: "retries", Label: "failed tries", Help: "acquire attempts that found the key taken: what polling costs"},
		// Beside "failed tries" this often reads 0: say why, in the pane.
		{Key: "serverCalls", Label: "server-counted", Help: "lock commands the server itself counted (INFO commandstats), read only in wait steps. " +
			"Redis keeps no queue, so it counts no waiters: the failed tries are the clients' own commands, each answered and forgotten"},
		{Key: "renewals", Label: "renewals", Help: "the watchdog's lease renewals"},
	},
	Panes: []lockservice.SidePane{
		{Service: Name, Scenario: "redis-side-by-side", Label: "Redis, no owner token", Order: 20},
		{Service: Name, Scenario: "redis-token-side-by-side", Label: "Redis, owner token + fencing", Order: 21},
	},
	Say: serverPhrases,
}

// serverPhrases word what a run's Redis servers hold beyond the lane
// (simulator.Servers): each Redlock master's copy of the key, and the
// key's time to live over the run, read with PTTL.
var serverPhrases = map[string]string{
	"masters.aria":      "the key on each of the {n} masters",
	"master.down":       "down",
	"master.downTitle":  "{name} ({addr}) is down: it answers nobody, and holds nothing when it comes back",
	"master.empty":      "empty",
	"master.emptyTitle": "{name} ({addr}) has no copy of the key",
	"master.held":       "{client} · {left}",
	"master.heldTitle":  "{name} ({addr}): the key holds {client}'s token {token}, {leftMs} ms left; {client} has {n} of {of} copies ({majority})",
	"master.majority":   "a majority",
	"master.minority":   "no majority",
	"ttl.aria":          "the key's time to live over {span} of the run: {rises} renewals; held by {holders}",
	"ttl.nobody":        "nobody",
	"ttl.caption":       "the key's time to live (PTTL, read every 50 ms{lease}): ",
	"ttl.lease":         "; lease {lease}",
	"ttl.left":          "{holder}'s key, {left} left",
	"ttl.noKey":         "no key",
	"ttl.renewals":      " · {n} renewals",
	"ttl.heldBy":        " · held by {holders}",
}

// ClassroomWords are the classroom page's words for Redis's runs
// (lockservice.ClassroomWorder).
func (*Backend) ClassroomWords() lockservice.ClassroomWords { return ClassroomWords }

// RunWords count a run's requests as the server did when it counted them
// itself (INFO commandstats, Stats.ServerCalls); the rest is the neutral
// words' key and commands.
func (*Backend) RunWords() simulator.RunWords {
	return simulator.RunWords{Requests: func(s simulator.Stats) (int, string) {
		if s.ServerCalls > 0 {
			return s.ServerCalls, "counted by the server itself (Redis INFO commandstats)"
		}
		return simulator.NeutralRunWords().Requests(s)
	}}
}
