package redislock

import (
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Words are how the pages word a Redis lock: one key, one holder, its
// value the owner's token and its PX the time it has left.
func Words() *lockservice.Words {
	legend := append(lockservice.ModeItems(lockqueue.Exclusive), lockservice.Holding, lockservice.RuleArrow)
	return &lockservice.Words{
		Legend:  legend,
		Columns: lockservice.Columns{Client: "token", Lease: "TTL left"},
		Missing: "free: no key",
		Source:  source,
	}
}

// source words how the reader follows the key.
func source(src string) (term, value string) {
	switch src {
	case "poll":
		return "read from", "polling the key"
	case "keyspace":
		return "read from", "keyspace events"
	}
	return lockservice.NeutralSource(src)
}
