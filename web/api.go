package web

import (
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/zkwatch"
)

// maxBody bounds request bodies of the JSON API.
const maxBody = 64 << 10

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok"))
}

// LockSummary is one entry of GET /api/v1/locks.
type LockSummary struct {
	Path       string               `json:"path"`
	Recipe     lockqueue.Recipe     `json:"recipe"`
	Holders    []string             `json:"holders"`
	Waiters    []string             `json:"waiters"`
	Alerts     []lockqueue.Alert    `json:"alerts"`
	Connection lockqueue.Connection `json:"connection"`
	// QueueLength counts lock nodes (holders and waiters), not foreign children.
	QueueLength int `json:"queueLength"`
	// OldestWaitMs is how long the longest-waiting waiter has waited, by its
	// node's ctime; 0 with no waiters.
	OldestWaitMs int64     `json:"oldestWaitMs"`
	Exists       bool      `json:"exists"`
	Revision     int64     `json:"revision"`
	UpdatedAt    time.Time `json:"updatedAt"`
	Error        string    `json:"error,omitempty"`
	// Pending marks a watched path whose first read has not landed yet.
	Pending bool `json:"pending,omitempty"`
}

// LocksResponse is the body of GET /api/v1/locks.
type LocksResponse struct {
	Locks []LockSummary `json:"locks"`
	// Connection is the watcher's own ZooKeeper session state: connected,
	// reconnecting or expired; left out when no watcher runs (a simulator
	// only server).
	Connection lockqueue.Connection `json:"connection,omitempty"`
}

func summarize(snap lockqueue.Snapshot, now time.Time) LockSummary {
	sum := LockSummary{
		Path: snap.Path, Recipe: snap.Recipe, Connection: snap.Connection,
		Holders: nonNil(snap.Holders()), Waiters: nonNil(snap.Waiters()), Alerts: snap.Alerts,
		Exists: snap.Exists, Revision: snap.Revision, UpdatedAt: snap.UpdatedAt, Error: snap.Error,
	}
	if sum.Alerts == nil {
		sum.Alerts = []lockqueue.Alert{}
	}
	sum.QueueLength = len(sum.Holders) + len(sum.Waiters)
	_, oldest := snap.Oldest()
	if !oldest.IsZero() && now.After(oldest) {
		sum.OldestWaitMs = now.Sub(oldest).Milliseconds()
	}
	return sum
}

func (s *Server) handleLocks(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	resp := LocksResponse{Locks: []LockSummary{}}
	seen := map[string]bool{}
	for _, snap := range s.cfg.Hub.List() {
		resp.Locks = append(resp.Locks, summarize(snap, now))
		seen[snap.Path] = true
	}
	if s.cfg.Watcher != nil {
		resp.Connection = s.cfg.Watcher.Connection()
		added := false
		for _, p := range s.cfg.Watcher.Paths() {
			if !seen[p] {
				resp.Locks = append(resp.Locks, LockSummary{Path: p, Holders: []string{}, Waiters: []string{},
					Alerts: []lockqueue.Alert{}, Pending: true})
				added = true
			}
		}
		if added {
			slices.SortFunc(resp.Locks, func(a, b LockSummary) int { return strings.Compare(a.Path, b.Path) })
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleLock(w http.ResponseWriter, r *http.Request) {
	p, err := s.lockPath(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	snap, ok := s.cfg.Hub.Latest(p)
	if !ok {
		if s.watched(p) {
			writeError(w, r, s.log, errorf(ErrUnavailable, "%s is watched but not read yet; retry shortly", p))
			return
		}
		writeError(w, r, s.log, errorf(ErrNotFound, "%s is not watched (POST /api/v1/watch to add it)", p))
		return
	}
	writeJSON(w, http.StatusOK, wireSnapshot(snap))
}

// WatchRequest is the body of POST /api/v1/watch.
type WatchRequest struct {
	Path string `json:"path"`
}

// WatchResponse answers POST /api/v1/watch.
type WatchResponse struct {
	Path     string `json:"path"`
	Watching bool   `json:"watching"`
}

func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request) {
	var req WatchRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if req.Path == "" {
		writeError(w, r, s.log, errorf(ErrInvalid, `missing path: want {"path": "/locks/orders"}, a lock parent`))
		return
	}
	if err := zkwatch.ValidatePath(req.Path); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if s.cfg.Watcher == nil {
		writeError(w, r, s.log, errorf(ErrUnavailable, "no ZooKeeper watcher is running (serve with --zk)"))
		return
	}
	if err := s.cfg.Watcher.AddPath(req.Path); err != nil {
		if !errors.Is(err, zkwatch.ErrBadPath) {
			err = errorf(ErrUnavailable, "cannot watch %s: %v", req.Path, err)
		}
		writeError(w, r, s.log, err)
		return
	}
	s.log.Info("watch added", "path", req.Path, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, WatchResponse{Path: req.Path, Watching: true})
}

var indexPage = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en"><meta charset="utf-8"><title>zklockviz</title>
<h1>zklockviz</h1>
<p>The browser views are not built into this binary. The API:</p>
<ul>
<li><a href="/api/v1/locks">/api/v1/locks</a>: every lock path
{{range .}}<li><a href="/api/v1/lock?path={{.}}">{{.}}</a>{{end}}
</ul>`))

// handleIndex stands in for the pages when none are plugged in.
func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	var paths []string
	for _, snap := range s.cfg.Hub.List() {
		paths = append(paths, snap.Path)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := indexPage.Execute(w, paths); err != nil {
		s.log.Debug("index page", "err", err)
	}
}

// lockPath reads and checks the ?path= query parameter.
func (s *Server) lockPath(r *http.Request) (string, error) {
	q := r.URL.Query()
	if !q.Has("path") {
		return "", errorf(ErrInvalid, "missing ?path= (a lock parent such as /locks/orders)")
	}
	p := q.Get("path")
	if err := zkwatch.ValidatePath(p); err != nil {
		return "", err
	}
	return p, nil
}

// watched reports whether the watcher follows p.
func (s *Server) watched(p string) bool {
	return s.cfg.Watcher != nil && slices.Contains(s.cfg.Watcher.Paths(), p)
}

// decodeBody reads one JSON object from a bounded body. An empty body is
// an empty object, so the handler's own check names the missing field
// ("missing scenario: want one of …") instead of the decoder saying EOF. A
// malformed one is answered with the field at fault and what it wants.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		var typ *json.UnmarshalTypeError
		var syntax *json.SyntaxError
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.As(err, &tooBig):
			return errorf(ErrTooLarge, "body larger than %d bytes", maxBody)
		case errors.As(err, &typ) && typ.Field != "":
			return errorf(ErrInvalid, "bad JSON body: %s: want %s, got %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
		case errors.As(err, &typ):
			return errorf(ErrInvalid, "bad JSON body: want a JSON object, got %s", typ.Value)
		case errors.As(err, &syntax):
			return errorf(ErrInvalid, "bad JSON body: %v (at byte %d)", syntax, syntax.Offset)
		}
		return errorf(ErrInvalid, "bad JSON body: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(ErrInvalid, "bad JSON body: more than one value")
	}
	return nil
}

// jsonKind names a Go kind the way a JSON body's author thinks of it.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "struct", "map", "ptr":
		return "an object"
	case "slice", "array":
		return "an array"
	}
	return "a number"
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
