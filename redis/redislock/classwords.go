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
		{Key: "serverCalls", Label: "server-counted", Help: "lock commands the server itself counted in wait steps (INFO commandstats)"},
		{Key: "renewals", Label: "renewals", Help: "the watchdog's lease renewals"},
	},
	Panes: []lockservice.SidePane{
		{Service: Name, Scenario: "redis-side-by-side", Label: "Redis, no owner token", Order: 20},
		{Service: Name, Scenario: "redis-token-side-by-side", Label: "Redis, owner token + fencing", Order: 21},
	},
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
