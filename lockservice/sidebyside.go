package lockservice

import "github.com/zklockviz/zklockviz/lockqueue"

// SideBySideName is scenario 12's name in the classroom, the CLI and the
// API: the same story run on every service at once.
const SideBySideName = "side-by-side"

// SidePane is one run of scenario 12: a service's own scenario (same cast,
// same beats), run as an ordinary run of that service.
type SidePane struct {
	// Service is the lock service's name ("zookeeper", "redis", ...).
	Service  string `json:"service"`
	Scenario string `json:"scenario"`
	// Label tells two runs of one service apart (Redis with and without
	// an owner token).
	Label string `json:"label"`
}

// SideBySide lists scenario 12's panes in the order they are shown: the
// CLI's verdict table and the classroom's panes read it. Redis's and
// PostgreSQL's names are spelled out: their packages import this one.
func SideBySide() []SidePane {
	return []SidePane{
		{Service: lockqueue.ZooKeeper, Scenario: "zk-side-by-side", Label: "ZooKeeper"},
		{Service: "redis", Scenario: "redis-side-by-side", Label: "Redis, no owner token"},
		{Service: "redis", Scenario: "redis-token-side-by-side", Label: "Redis, owner token + fencing"},
		{Service: lockqueue.Etcd, Scenario: "etcd-side-by-side", Label: "etcd"},
		{Service: "postgres", Scenario: "pg-side-by-side", Label: "PostgreSQL"},
	}
}
