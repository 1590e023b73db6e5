package lockservice

// SideBySideName is scenario 12's name in the classroom, the CLI and the
// API: the same story run on every service at once.
const SideBySideName = "side-by-side"

// ScenarioWords name and describe a scenario in the classroom's list.
type ScenarioWords struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// SideBySide is scenario 12 as the classroom lists it: its panes are each
// service's (ClassroomWords.Panes), its story the same on all.
var SideBySide = ScenarioWords{
	ID: SideBySideName, Title: "Side by side: every service",
	Description: "The same story on every service, stepped in lockstep: four clients, the holder pauses past its lease or session timeout, then wakes and writes. Each pane has its verdict: mutual exclusion held or broken, and what became of the stale write (accepted, refused by a fencing token, or refused by the server itself).",
}

// SidePane is one run of scenario 12: a service's own scenario (same cast,
// same beats), run as an ordinary run of that service. Each service's
// classroom supplies its panes (ClassroomWords.Panes).
type SidePane struct {
	// Service is the lock service's name ("zookeeper", "redis", ...).
	Service  string `json:"service"`
	Scenario string `json:"scenario"`
	// Label tells two runs of one service apart (Redis with and without
	// an owner token).
	Label string `json:"label"`
	// Order places the pane among every service's: the story reads from
	// a queue kept by the server to none, then to a lease and a lock
	// manager (ZooKeeper 10, Redis 20, etcd 30, PostgreSQL 40).
	Order int `json:"-"`
}
