package web

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"

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
	store, id, from, to, err := s.historyRef(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	svc, _, err := s.lockRef(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	evs, err := store.Events(id.Key(), from, to)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	e := views.Export{Service: serviceView(svc), Path: id.Name, From: from, To: to}
	if e.Figures, err = figuresOf(store, id, from, to); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	// The queue as the window starts, when the history knows it: what the
	// first change changed.
	st, err := store.At(id.Key(), from)
	known := err == nil
	switch {
	case known:
		e.Changes = append(e.Changes, views.NewChange(from, nil, st))
	case !errors.Is(err, history.ErrNoHistory):
		writeError(w, r, s.log, err)
		return
	}
	// One change per moment: the events recorded at one time are one
	// reading of the lock.
	for i := 0; i < len(evs); {
		j := i
		for j < len(evs) && evs[j].Time.Equal(evs[i].Time) {
			j++
		}
		if len(e.Changes) == maxExportChanges {
			e.Truncated = true
			break
		}
		// Once the queue is known, each change follows from the one
		// before; asking At for each would replay a segment per change.
		if known {
			st = st.Apply(evs[i:j])
		} else if st, err = store.At(id.Key(), evs[i].Time); err == nil {
			known = true
		} else if !errors.Is(err, history.ErrNoHistory) {
			writeError(w, r, s.log, err)
			return
		}
		e.Changes = append(e.Changes, views.NewChange(evs[i].Time, evs[i:j], st))
		i = j
	}
	if e.CSS, e.Script, err = exportAssets(); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var buf bytes.Buffer
	if err := views.ExportPage(e).Render(r.Context(), &buf); err != nil {
		writeError(w, r, s.log, fmt.Errorf("render the incident of %s: %w", id.Key(), err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename=`+strconv.Quote(e.ExportName()))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.Write(buf.Bytes())
}

// exportAssets are the pages' stylesheet and the incident's stepper, to
// inline into an incident file.
func exportAssets() (css, script string, err error) {
	c, err := fs.ReadFile(static.FS, "app.css")
	if err != nil {
		return "", "", fmt.Errorf("export stylesheet: %w", err)
	}
	j, err := fs.ReadFile(static.FS, "export.js")
	if err != nil {
		return "", "", fmt.Errorf("export script: %w", err)
	}
	return string(c), string(j), nil
}
