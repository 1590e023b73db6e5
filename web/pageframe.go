package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/views"
)

// A lock page's socket (?window=FROM:SIZE) carries, beside each frame's
// nodes, which bring their lane's lines (windowOf), with &parts=1 the
// sections of the parts that changed since its last frame
// (views.LockPartSections: the banner, summary, alerts, the table's page
// and its counts, the selected node's details; the same render GET
// /parts/lock answers, shared through partsCache). They are made once per
// snapshot and view with the frame, which every socket on that view
// shares, so the page asks the server nothing per change: it draws the
// nodes and swaps the parts in.

// maxFilterLen bounds a table filter a socket asks for.
const maxFilterLen = 200

// parseViewParts reads ?parts=1 and, with it, the table's ?page= (by
// default the window's), its filter ?q= and ?show=1: the table's page is
// the one that has the node (?node=), wherever it is.
func parseViewParts(v *view, q url.Values) error {
	if !q.Has("parts") {
		return nil
	}
	v.parts = true
	v.page = v.from / v.size
	if q.Has("page") {
		n, err := strconv.Atoi(q.Get("page"))
		if err != nil || n < 0 {
			return errorf(ErrInvalid, "bad ?page=%q: want the table's page, from 0", q.Get("page"))
		}
		v.page = n
	}
	v.filter = q.Get("q")
	v.show = q.Get("show") == "1"
	if len(v.filter) > maxFilterLen {
		return errorf(ErrInvalid, "?q= is %d bytes: a table filter has at most %d", len(v.filter), maxFilterLen)
	}
	return nil
}

// tableQuery is the table's page the view shows.
func (v view) tableQuery() views.TableQuery {
	q := views.TableQuery{Page: v.page, Size: v.size, Filter: v.filter, Selected: v.node}
	if v.show {
		q.Show = v.node
	}
	return q
}

// partsFunc renders the parts of a lock's snapshot for a view, and says
// what they say of the history ("" while it records).
type partsFunc func(snap lockqueue.Snapshot, v view) (part *renderedPart, historyOff string)

// pageExtra is what a parts socket's frame carries beside the nodes.
type pageExtra struct {
	Parts string `json:"parts,omitempty"`
	// HistoryOff, with the parts, says since when and why the history does
	// not record; left out while it does.
	HistoryOff string `json:"historyOff,omitempty"`
	// Scene, with the parts, is the deadlock through other locks that the
	// lock is in, drawn beside its lane (scene.go); left out when none.
	Scene *scene `json:"scene,omitempty"`
}

// withPage adds to b, a windowed frame's JSON object, the sections of
// snap's parts whose hashes are not those the socket had (f.partsHad), and
// the lock's deadlock scene, from f.latest (nil: none). sums are the hashes
// of the sections the socket has then.
func (f *sockFrames) withPage(b []byte, snap lockqueue.Snapshot) (_ []byte, sums []uint64, _ error) {
	part, off := f.parts(snap, f.view)
	if part.err != nil {
		return nil, nil, part.err
	}
	var html []byte
	for i, sec := range part.sections() {
		if i >= len(f.partsHad) || f.partsHad[i] != part.sums[i] {
			html = append(html, sec...)
		}
	}
	x := pageExtra{Parts: string(html), HistoryOff: off}
	if f.latest != nil {
		x.Scene = sceneOf(snap, f.latest)
	}
	// Raw: <, > and & as they are, since only a socket carries the frame;
	// HTML escaped for an HTML page takes six bytes a tag bracket, and the
	// parts are HTML.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return nil, nil, fmt.Errorf("encode the page's parts of %s: %w", snap.Path, err)
	}
	return mergeObjects(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), part.sums, nil
}

// mergeObjects joins two JSON objects with distinct keys into one.
func mergeObjects(a, b []byte) []byte {
	if len(b) <= 2 {
		return a
	}
	out := make([]byte, 0, len(a)+len(b))
	out = append(out, a[:len(a)-1]...)
	out = append(out, ',')
	return append(out, b[1:]...)
}

// socketParts is the renderer of a lock's parts for its sockets: the
// pages', shared with GET /parts/lock; nil without pages.
func (s *Server) socketParts(svc lockservice.Service, name string) partsFunc {
	p := s.pages
	if p == nil {
		return nil
	}
	return func(snap lockqueue.Snapshot, v view) (*renderedPart, string) {
		if s.history != nil {
			s.history.check()
		}
		return p.liveParts(context.Background(), svc, views.LockState{Path: name, Snap: snap, Known: true}, v.tableQuery(), p.historyNow)
	}
}
