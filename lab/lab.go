// Package lab runs real lock clients against a real lock service under a
// stream of faults and checks what they believed against what they did: the
// lock lab (zklockviz lab).
//
// Each client is an OS process of its own, so a pause is a real SIGSTOP,
// as a stop-the-world GC pause is, and a crash a real kill -9. Each loops:
// acquire the lock, read a shared counter from the resource, write it back
// one higher with its fencing token, release. It prints what it believes
// as Events, one JSON line each. The resource (this process) logs every
// write and, with fencing on, refuses a token older than one it has seen.
// The clients and the resource share this machine's clock, so their
// events are on one time line.
//
// The package knows no lock service: a service supplies a Locker for the
// client side (zookeeper/zklab, redis/redislab, etcd/etcdlab,
// postgres/pglab) and the command that starts a client.
package lab

import (
	"cmp"
	"encoding/json"
	"strings"
	"time"
)

// Kind is what an event tells.
type Kind string

// Event kinds. A client tells Requested, Acquired, Released, Lost, Wrote,
// Refused and Failed; the runner tells Started, Paused, Resumed, Killed,
// Cut and Healed (a client's connection to the server), and ServerDown and
// ServerUp (Client "server").
const (
	Requested  Kind = "requested" // the client asks for the lock
	Acquired   Kind = "acquired"  // the client believes it holds, with Token and Holder
	Released   Kind = "released"  // it let go
	Lost       Kind = "lost"      // it learnt it no longer holds (its session or lease ended)
	Wrote      Kind = "wrote"     // the resource took its write From → To
	Refused    Kind = "refused"   // the resource refused its write: a stale token
	Failed     Kind = "failed"    // an operation failed (Message)
	Started    Kind = "started"
	Paused     Kind = "paused"
	Resumed    Kind = "resumed"
	Killed     Kind = "killed"
	Cut        Kind = "cut"         // the client's connection to the server is cut
	Healed     Kind = "healed"      // and let back
	ServerDown Kind = "server-down" // the lock server is killed (or stopped)
	ServerUp   Kind = "server-up"   // and answers again
)

// Server is the Client of the runner's events about the lock server.
const Server = "server"

// Event is one line of a run's record.
type Event struct {
	At     time.Time `json:"at"`
	Client string    `json:"client"`
	Kind   Kind      `json:"kind"`
	Token  int64     `json:"token,omitempty"`
	// Holder is who the server knows the client as when it holds (its
	// lock node, key value, lease or backend pid, in the service's words),
	// so that what zklockviz recorded can be matched to the client.
	Holder  string `json:"holder,omitempty"`
	From    int64  `json:"from,omitempty"`
	To      int64  `json:"to,omitempty"`
	Message string `json:"message,omitempty"`
	// Since is, on ServerUp, when the lab started the server again: it
	// first answered somewhere between Since and At (At is when the lab
	// saw an answer, its readiness check or a client's grant).
	Since time.Time `json:"since,omitzero"`
}

// ParseEvent reads one line a client printed.
func ParseEvent(line []byte) (Event, error) {
	var e Event
	err := json.Unmarshal(line, &e)
	return e, err
}

// CompareClients orders clients by their number: c2 before c10.
func CompareClients(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
}
