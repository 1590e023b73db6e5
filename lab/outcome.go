package lab

// Outcome is one run of one service as its report tells it: what ran,
// the command that runs it again, the faults it was to do, what the
// checker found and every event. It is the lab's JSON, and what the HTML
// report and the Lab page draw.
type Outcome struct {
	// Service is the service's name (zookeeper, redis, etcd, postgres),
	// Title as people write it; Server and Path are the server as the
	// progress line names it (never a DSN's password) and the lock.
	Service string `json:"service"`
	Title   string `json:"title"`
	Server  string `json:"server"`
	Path    string `json:"path"`
	// Replay is the command line that runs it again: the seed, or the
	// schedule file, fixes the faults.
	Replay   string  `json:"replay"`
	Seed     uint64  `json:"seed"`
	Fencing  bool    `json:"fencing"`
	Schedule []Fault `json:"schedule"`
	// Stopped says the run was stopped before its duration (Ctrl-C, or
	// Stop on the Lab page): the report is of what ran.
	Stopped bool    `json:"stopped,omitempty"`
	Report  Report  `json:"report"`
	Events  []Event `json:"events"`
	// Word is zklockviz's own word checked against the clients' log
	// (lab/word); nil when the check is off or did not run.
	Word *WordResult `json:"word,omitempty"`
	// SVG is the run's time–space diagram (lab/labsvg), or DrawError why
	// there is none: drawn where the run ran, for what shows it.
	SVG       string `json:"-"`
	DrawError string `json:"-"`
	// Error is why the run did not run, or not to its end.
	Error string `json:"error,omitempty"`
}
