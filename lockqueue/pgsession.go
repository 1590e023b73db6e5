package lockqueue

import "time"

// PGSession is a PostgreSQL backend's row of pg_stat_activity as pglock's
// reader records it: the data of a PostgreSQL lock's node, as JSON. The
// views read it back to show the session as pg_activity does.
type PGSession struct {
	Pid          int        `json:"pid"`
	Database     *string    `json:"database"`
	User         *string    `json:"user"`
	Application  *string    `json:"application"`
	ClientAddr   *string    `json:"clientAddr"`
	ClientPort   *int       `json:"clientPort"`
	State        *string    `json:"state"`
	BackendStart *time.Time `json:"backendStart"`
	XactStart    *time.Time `json:"xactStart"`
	QueryStart   *time.Time `json:"queryStart"`
	StateChange  *time.Time `json:"stateChange"`
	Query        *string    `json:"query"`
	// Set by the reader, not the query.
	LockMode  string     `json:"lockMode,omitempty"`
	WaitStart *time.Time `json:"waitStart,omitempty"`
}
