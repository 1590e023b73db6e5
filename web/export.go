package web

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/static"
	"github.com/zklockviz/zklockviz/views"
)

// maxExportChanges bounds the moments one incident file shows; each is a
// whole queue, rebuilt from the history.
const maxExportChanges = 500

// handleLockExport answers GET /api/v1/lock/export?path=&from=&to=: the
// window as one self-contained HTML file (views.ExportPage), its CSS and
// script inlined so it opens from a ticket's attachment with no network.
func (s *Server) handleLockExport(w http.ResponseWriter, r *http.Request) {
	page, name, err := s.exportPage(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	setHeaders(w, "text/html; charset=utf-8", "no-store").Set("Content-Disposition", `attachment; filename=`+strconv.Quote(name))
	w.Write(page)
}

// exportPage renders the incident file r asks for, and names it.
func (s *Server) exportPage(r *http.Request) ([]byte, string, error) {
	h, err := s.historyRef(r)
	if err != nil {
		return nil, "", err
	}
	svc, _, err := s.lockRef(r)
	if err != nil {
		return nil, "", err
	}
	evs, err := h.store.Events(h.key, h.from, h.to)
	if err != nil {
		return nil, "", err
	}
	e := views.Export{Service: serviceView(svc), Path: h.id.Name, Cluster: history.ClusterOf(h.key), From: h.from, To: h.to}
	if e.Figures, err = figuresOf(h.store, h.key, h.from, h.to); err != nil {
		return nil, "", err
	}
	if e.Changes, e.Truncated, err = exportChanges(e.Service, h.store, h.key, h.from, evs); err != nil {
		return nil, "", err
	}
	if e.CSS, e.Script, e.Modules, err = exportAssets(); err != nil {
		return nil, "", err
	}
	// The lane draws what the lock page's does: the server's edges, and
	// of a long queue the window its first page shows (the table lists
	// every node).
	for i := range e.Changes {
		c := &e.Changes[i]
		snap, win := windowOf(wireSnapshot(c.Snapshot), view{on: true, size: views.FirstPageRows}, nil)
		c.Snapshot = snap
		if win != nil {
			c.Window = win
		}
	}
	var buf bytes.Buffer
	if err := views.ExportPage(e).Render(r.Context(), &buf); err != nil {
		return nil, "", fmt.Errorf("render the incident of %s: %w", h.id.Key(), err)
	}
	return buf.Bytes(), e.ExportName(), nil
}

// exportChanges is the window's changes, at most maxExportChanges of them
// (truncated says some were left out): the queue as the window starts when
// the history knows it (what the first change changed), then one change per
// moment, since the events recorded at one time are one reading of the lock.
func exportChanges(sv views.Service, store history.Source, key string, from time.Time, evs []history.Event) (changes []views.Change, truncated bool, err error) {
	st, err := store.At(key, from)
	known := err == nil
	switch {
	case known:
		changes = append(changes, views.NewChange(sv, from, nil, st))
	case !errors.Is(err, history.ErrNoHistory):
		return nil, false, err
	}
	for i := 0; i < len(evs); {
		j := i
		for j < len(evs) && evs[j].Time.Equal(evs[i].Time) {
			j++
		}
		if len(changes) == maxExportChanges {
			return changes, true, nil
		}
		// Once the queue is known, each change follows from the one
		// before; asking At for each would replay a segment per change.
		if known {
			st = st.Apply(evs[i:j])
		} else if st, err = store.At(key, evs[i].Time); err == nil {
			known = true
		} else if !errors.Is(err, history.ErrNoHistory) {
			return nil, false, err
		}
		changes = append(changes, views.NewChange(sv, evs[i].Time, evs[i:j], st))
		i = j
	}
	return changes, false, nil
}

// exportAssets are the pages' stylesheet, the incident's stepper and the
// pages' modules it imports (the lane, the time zone), to inline into an
// incident file.
func exportAssets() (css, script string, modules map[string]string, err error) {
	read := func(name string) (string, error) {
		b, err := fs.ReadFile(static.FS, name)
		if err != nil {
			return "", fmt.Errorf("export asset %s: %w", name, err)
		}
		return string(b), nil
	}
	if css, err = read("app.css"); err != nil {
		return "", "", nil, err
	}
	if script, err = read("export.js"); err != nil {
		return "", "", nil, err
	}
	modules = map[string]string{}
	for _, name := range []string{"queue.js", "tz.js"} {
		if modules[name], err = read(name); err != nil {
			return "", "", nil, err
		}
	}
	return css, script, modules, nil
}
