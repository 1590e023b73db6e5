package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/zklockviz/zklockviz/lockservice"
)

// RunOwnerHeader carries a run's owner secret. POST /api/v1/sim/runs
// answers it (and the answer's "owner" field); a command that moves the run
// (step, back, seek, play, pause, speed, act, script) and DELETE must send
// it back, unless the request holds the server's token or the run was
// started open to all (for a lab where the students drive). A header, not a
// cookie: a cookie would go with a request another site's page makes, and
// a page that started several runs sends the secrets of all of them,
// comma-separated, as one header's list.
const RunOwnerHeader = "X-Zklockviz-Run-Owner"

// runOwners remembers who started each classroom run: the hash of the
// secret its start answered, so the map holds nothing a request could
// replay.
type runOwners struct {
	mu sync.Mutex
	m  map[string][sha256.Size]byte // ownerKey → sha256 of the secret
	// open are the runs started open to all: anyone may move them (not
	// delete them).
	open map[string]bool
}

// ownerKey names a run among every service's: two classrooms' run ids
// may meet.
func ownerKey(service, id string) string { return service + "/" + id }

// add makes a new secret for the run key names; open lets anyone move it.
func (o *runOwners) add(key string, open bool) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("a run's owner secret: %w", err)
	}
	secret := hex.EncodeToString(b)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string][sha256.Size]byte{}
	}
	o.m[key] = sha256.Sum256([]byte(secret))
	if open {
		if o.open == nil {
			o.open = map[string]bool{}
		}
		o.open[key] = true
	}
	return secret, nil
}

// owns reports whether r sends the secret of the run key names.
func (o *runOwners) owns(key string, r *http.Request) bool {
	o.mu.Lock()
	want, ok := o.m[key]
	o.mu.Unlock()
	if !ok {
		return false
	}
	for _, v := range r.Header.Values(RunOwnerHeader) {
		for secret := range strings.SplitSeq(v, ",") {
			got := sha256.Sum256([]byte(strings.TrimSpace(secret)))
			if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
				return true
			}
		}
	}
	return false
}

// forget drops the runs of service that live does not list (deleted,
// reaped or closed with their last viewer): their secrets open nothing.
func (o *runOwners) forget(service string, live []lockservice.Run) {
	gone := goneRuns(service, live)
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.m {
		if gone(k) {
			delete(o.m, k)
			delete(o.open, k)
		}
	}
}

// settleRuns forgets the secrets and answers of svc's runs that are gone,
// then calls then (when not nil) before another request may list runs
// again; it answers the live runs.
func (s *Server) settleRuns(svc lockservice.Service, then func()) []lockservice.Run {
	s.settling.Lock()
	defer s.settling.Unlock()
	runs := svc.Classroom.Runs()
	s.owners.forget(svc.Name, runs)
	s.answers.forget(svc.Name, runs)
	if then != nil {
		then()
	}
	return runs
}

// goneRuns reports whether an ownerKey names a run of service that live
// does not list.
func goneRuns(service string, live []lockservice.Run) func(key string) bool {
	ids := make(map[string]bool, len(live))
	for _, r := range live {
		ids[ownerKey(service, r.ID())] = true
	}
	return func(k string) bool { return strings.HasPrefix(k, service+"/") && !ids[k] }
}

// mayDelete reports whether r may delete the run key names: the one who
// started it (its secret) or whoever holds the server's token. On a server
// with a token every request holds it (requireAuth), so there ownership
// keeps apart only those who hold no token: none get in.
func (s *Server) mayDelete(key string, r *http.Request) bool {
	return s.holdsToken(r) || s.owners.owns(key, r)
}

// isOpen reports whether the run key names was started open to all.
func (o *runOwners) isOpen(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.open[key]
}

// mayControl reports whether r may move the run key names (step, act,
// what-if, back to the script...): who may delete it, and anyone when it
// was started open to all. Everyone else watches it and answers its
// questions (classroom_predict.go).
func (s *Server) mayControl(key string, r *http.Request) bool {
	return s.owners.isOpen(key) || s.mayDelete(key, r)
}

// notYours is the refusal of a command on a run r may not move.
func notYours(id, what string) error {
	return errorf(ErrForbidden,
		"run %s was started by someone else: only the one who started it (with the %s secret its start answered) or whoever holds the server's token may %s; anyone may watch it and answer its questions",
		id, RunOwnerHeader, what)
}
