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
// answers it (and the answer's "owner" field); DELETE of the run must send
// it back, unless the request holds the server's token. A header, not a
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
}

// ownerKey names a run among every service's: two classrooms' run ids
// may meet.
func ownerKey(service, id string) string { return service + "/" + id }

// add makes a new secret for the run key names.
func (o *runOwners) add(key string) (string, error) {
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
	ids := make(map[string]bool, len(live))
	for _, r := range live {
		ids[ownerKey(service, r.ID())] = true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.m {
		if strings.HasPrefix(k, service+"/") && !ids[k] {
			delete(o.m, k)
		}
	}
}

// mayDelete reports whether r may delete the run key names: the one who
// started it (its secret) or whoever holds the server's token. On a server
// with a token every request holds it (requireAuth), so there ownership
// keeps apart only those who hold no token: none get in.
func (s *Server) mayDelete(key string, r *http.Request) bool {
	return s.holdsToken(r) || s.owners.owns(key, r)
}
