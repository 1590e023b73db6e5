package web

import (
	"cmp"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// maxBody bounds request bodies of the JSON API.
const maxBody = 64 << 10

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok"))
}

// handleVersion says which build runs (zklockviz version's facts).
func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.cfg.Build)
}

// LockSummary is one entry of GET /api/v1/locks.
type LockSummary struct {
	// Service is the lock's service; left out for ZooKeeper.
	Service string           `json:"service,omitempty"`
	Path    string           `json:"path"`
	Recipe  lockqueue.Recipe `json:"recipe"`
	// Holders and Waiters name the first lockqueue.SummaryNames holders
	// and waiters in queue order; HolderCount and WaiterCount count all.
	Holders []string `json:"holders"`
	Waiters []string `json:"waiters"`
	// HoldersWho and WaitersWho say who each of them is, as the lane
	// shows it (lockqueue.Node.Who): its label, its data when that is
	// short text, or its client; "" when unknown.
	HoldersWho  []string `json:"holdersWho"`
	WaitersWho  []string `json:"waitersWho"`
	HolderCount int      `json:"holderCount"`
	WaiterCount int      `json:"waiterCount"`
	// Alerts each name at most lockqueue.SummaryNames nodes.
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
	// UnknownSince is when the lock stopped being known (the snapshot's):
	// left out while it is live.
	UnknownSince time.Time `json:"unknownSince,omitzero"`
	// Pending marks a watched path whose first read has not landed yet.
	Pending bool `json:"pending,omitempty"`
	// Filling: the lock is shown from its listing (order, holders,
	// waits-for) while its nodes' data and sessions are read; left out
	// once every node is read.
	Filling *lockqueue.Filling `json:"filling,omitempty"`
}

// LocksResponse is the body of GET /api/v1/locks: a page of locks. The
// locks and the connection come last, as they always have.
type LocksResponse struct {
	// Totals count every watched lock (of ?service= when given), whatever
	// the page, ?q= and ?state=.
	Totals LockTotals `json:"totals"`
	// Matched counts the locks ?q= and ?state= select; Offset how many of
	// them come before this page.
	Matched int `json:"matched"`
	Offset  int `json:"offset"`
	// Sort and Limit are the ones applied.
	Sort  string `json:"sort"`
	Limit int    `json:"limit"`
	// Next and Prev are cursors (?cursor=) for the pages after and
	// before this one, left out when there is none.
	Next  string        `json:"next,omitempty"`
	Prev  string        `json:"prev,omitempty"`
	Locks []LockSummary `json:"locks"`
	// Connection is the watcher's own ZooKeeper session state: connected,
	// reconnecting or expired; left out when no watcher runs (a simulator
	// only server).
	Connection lockqueue.Connection `json:"connection,omitempty"`
	// Unexplored: services whose discovery left folders unread, so the
	// list lacks their locks; left out when none did.
	Unexplored []UnexploredNote `json:"unexplored,omitempty"`
	// Across are the alerts that span several locks (a deadlock through
	// them), each once with every lock it names, whatever the page;
	// left out when there are none.
	Across []AcrossAlert `json:"across,omitempty"`
}

func summarize(l listedLock, now time.Time) LockSummary {
	sum := LockSummary{
		Service: l.Service, Path: l.Path, Recipe: l.Recipe, Connection: l.Connection,
		Holders: summaryNames(l.Holders, false), Waiters: summaryNames(l.Waiters, false),
		HoldersWho: summaryNames(l.Holders, true), WaitersWho: summaryNames(l.Waiters, true),
		HolderCount: l.HolderCount, WaiterCount: l.WaiterCount,
		Alerts: l.Alerts, Exists: l.Exists, Revision: l.Revision, UpdatedAt: l.UpdatedAt, Error: l.Error, Pending: l.Pending,
		UnknownSince: l.UnknownSince, Filling: l.Filling,
	}
	if sum.Alerts == nil {
		sum.Alerts = []lockqueue.Alert{}
	}
	sum.QueueLength = l.HolderCount + l.WaiterCount
	if oldest := l.OldestWaiter; !oldest.IsZero() && now.After(oldest) {
		sum.OldestWaitMs = now.Sub(oldest).Milliseconds()
	}
	return sum
}

// summaryNames are the nodes' names, never nil.
// summaryNames are the nodes' names, or with who, who each is.
func summaryNames(ns []lockqueue.NodeName, who bool) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
		if who {
			out[i] = n.Who
		}
	}
	return out
}

func (s *Server) handleLocks(w http.ResponseWriter, r *http.Request) {
	q, err := parseLocksQuery(r.URL.Query(), s.cfg.Services, SortPath, defaultLocksLimit)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	now := time.Now()
	page := listLocks(s.cfg.Hub, s.pending, s.cfg.Services, q, now)
	resp := LocksResponse{
		Locks: make([]LockSummary, len(page.Rows)), Connection: zkConnection(s.cfg.Services),
		Totals: page.Totals, Matched: page.Matched, Offset: page.Offset, Sort: q.sort, Limit: q.limit,
		Next: page.Next, Prev: page.Prev, Across: page.Across,
	}
	resp.Unexplored = unexploredNotes(s.cfg.Services)
	for i, l := range page.Rows {
		resp.Locks[i] = summarize(l, now)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleLock(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("at") {
		s.handleLockAt(w, r)
		return
	}
	svc, id, err := s.lockRef(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	p := id.Name
	snap, ok := s.cfg.Hub.Latest(id.Key())
	if !ok {
		if watchedBy(svc, p) {
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
	// Service is the lock's service; ?service= or ZooKeeper when empty.
	Service string `json:"service,omitempty"`
	Path    string `json:"path"`
}

// WatchResponse answers POST /api/v1/watch.
type WatchResponse struct {
	Service  string `json:"service,omitempty"`
	Path     string `json:"path"`
	Watching bool   `json:"watching"`
}

func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request) {
	var req WatchRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	svc, err := serviceNamed(s.cfg.Services, cmp.Or(req.Service, r.URL.Query().Get("service")))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if req.Path == "" {
		writeError(w, r, s.log, errorf(ErrInvalid, `missing path: want {"path": "/locks/orders"}, a lock parent`))
		return
	}
	if err := svc.CheckName(req.Path); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if svc.Reader == nil {
		writeError(w, r, s.log, errorf(ErrUnavailable, "no %s watcher is running (serve with %s)", svc.Title, readerFlag(svc)))
		return
	}
	if err := svc.Reader.Watch(req.Path); err != nil {
		if !isBadName(err) {
			err = errorf(ErrUnavailable, "cannot watch %s: %v", req.Path, err)
		}
		writeError(w, r, s.log, err)
		return
	}
	s.pending.forget()
	s.log.Info("watch added", "service", svc.Name, "path", req.Path, "remote", r.RemoteAddr)
	resp := WatchResponse{Path: req.Path, Watching: true}
	resp.Service = lockqueue.WireService(svc.Name)
	writeJSON(w, http.StatusOK, resp)
}

// handleUnwatch stops following a lock: DELETE /api/v1/watch?service=&path=
// answers 204, or 404 when the lock is not watched. The hub forgets the
// lock, which ends its viewers' sockets.
func (s *Server) handleUnwatch(w http.ResponseWriter, r *http.Request) {
	svc, id, err := s.lockRef(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if !watchedBy(svc, id.Name) {
		writeError(w, r, s.log, errorf(ErrNotFound, "%s is not watched", id.Name))
		return
	}
	if err := svc.Reader.Unwatch(id.Name); err != nil {
		kind := ErrConflict
		if errors.Is(err, lockservice.ErrUnsupported) {
			kind = ErrMethod
		}
		writeError(w, r, s.log, errorf(kind, "cannot stop watching %s: %v", id.Name, err))
		return
	}
	s.pending.forget()
	s.log.Info("watch removed", "service", svc.Name, "path", id.Name, "remote", r.RemoteAddr)
	w.WriteHeader(http.StatusNoContent)
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

// readerFlag is the serve flag that connects svc's reader, as its words
// name it.
func readerFlag(svc lockservice.Service) string {
	return cmp.Or(svc.WordsOf().ReaderFlag, "--"+svc.Name)
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
