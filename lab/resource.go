package lab

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Resource is the shared counter the clients protect with the lock: a
// small HTTP service that logs every write with its writer's fencing token
// and, with fencing on, refuses a token older than the newest it has seen
// (the fix Kleppmann describes: the storage checks the token, not the
// client).
type Resource struct {
	fencing bool

	mu     sync.Mutex
	value  int64
	newest int64
	writes []Write
}

// Write is one write the resource was asked for.
type Write struct {
	At       time.Time `json:"at"`
	Client   string    `json:"client"`
	Token    int64     `json:"token"`
	From, To int64
	Refused  bool `json:"refused,omitempty"`
}

// NewResource returns a resource at 0.
func NewResource(fencing bool) *Resource { return &Resource{fencing: fencing} }

// ServeHTTP answers GET / with the value and POST / (a Write as JSON:
// client, token, from, to) with 200 when written, 409 when refused.
func (r *Resource) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch req.Method {
	case http.MethodGet:
		r.mu.Lock()
		v := r.value
		r.mu.Unlock()
		fmt.Fprint(w, v)
	case http.MethodPost:
		var wr Write
		if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, 1<<10)).Decode(&wr); err != nil {
			http.Error(w, "bad write: "+err.Error(), http.StatusBadRequest)
			return
		}
		if !r.write(wr) {
			http.Error(w, fmt.Sprintf("token %d is older than %d", wr.Token, r.Newest()), http.StatusConflict)
		}
	default:
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
	}
}

func (r *Resource) write(wr Write) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	wr.At = time.Now()
	wr.Refused = r.fencing && wr.Token < r.newest
	if !wr.Refused {
		r.value, r.newest = wr.To, max(r.newest, wr.Token)
	}
	r.writes = append(r.writes, wr)
	return !wr.Refused
}

// Value is the counter now.
func (r *Resource) Value() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.value
}

// Newest is the newest token the resource has taken.
func (r *Resource) Newest() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.newest
}

// Writes are every write asked for, in the order they came.
func (r *Resource) Writes() []Write {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Write(nil), r.writes...)
}
