package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"
	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/static"
	"github.com/zklockviz/zklockviz/views"
)

// Snapshots is the part of the hub the pages read for their first paint.
type Snapshots interface {
	Latest(path string) (lockqueue.Snapshot, bool)
	List() []lockqueue.Snapshot
	Summaries
}

var _ Snapshots = (*hub.Hub)(nil)

// The browser pages: the dashboard (/), the lock view (/lock?path=), the
// classroom (/sim) and their assets (/static/*), served when
// Config.Pages is set. They render a first paint from the hub; the scripts
// then follow the websocket (whose frames carry the lock page's parts,
// rendered here) and the JSON API.

// newPages makes the pages of cfg (New has filled in its defaults).
func newPages(cfg Config, pending *pendingLocks, w *statusWatch, log *slog.Logger) *pages {
	a, err := loadAssets(static.FS)
	if err != nil {
		// The assets are compiled in; failing here is a build mistake.
		panic(fmt.Sprintf("web: static assets: %v", err))
	}
	p := &pages{
		snaps: cfg.Hub, sim: cfg.Classroom, assets: a, log: log, services: cfg.Services,
		history: cfg.History, parts: &partsCache{}, pending: pending,
	}
	if w != nil {
		p.historyStatus, p.historyNow = w.get, w.peek
	}
	// The dashboard's first paint says the ZooKeeper reader's own session
	// state, as GET /api/v1/locks does; without one it infers the state
	// from the watched locks.
	if zk, err := cfg.Services.Default(); err == nil && zk.Reader != nil {
		p.conn = zk.Reader.Connection
	}
	return p
}

type pages struct {
	history  history.Source
	sparks   sparkCache
	moments  momentCache
	snaps    Snapshots
	sim      bool
	assets   *assets
	log      *slog.Logger
	conn     func() lockqueue.Connection
	services *lockservice.Registry
	// parts caches GET /parts/lock of each lock's newest snapshot; nil
	// renders every request.
	parts *partsCache
	// facts keeps each long queue's counts and positions (factsCache).
	facts factsCache
	// partRenders counts the renders of GET /parts/lock.
	partRenders atomic.Int64
	// historyStatus says whether the recorder records once what was
	// offered to it is recorded (Config.HistorySynced), historyNow as it
	// is now (Config.HistoryStatus); nil without a recorder.
	historyStatus, historyNow func() history.Status
	// pending are the watched locks not read yet (the server's).
	pending *pendingLocks
}

func (p *pages) page(title, active string) views.Page {
	return p.pageWith(title, active, p.historyStatus)
}

// pageWith is page with the history's status from status.
func (p *pages) pageWith(title, active string, status func() history.Status) views.Page {
	pg := views.Page{Title: title, Active: active, SimEnabled: p.sim, Version: p.assets.version}
	if status != nil {
		st := status()
		pg.HistoryOff = historyOff(st)
		pg.HistoryRole, pg.HistoryRoleState = views.RecorderRole(st.Role, time.Now())
	}
	return pg
}

// historyOff says, while the recorder does not record, since when and why;
// "" while it records.
func historyOff(st history.Status) string {
	if st.Recording {
		return ""
	}
	return fmt.Sprintf("since %s: %s", views.When(st.Since), st.Why)
}

func (p *pages) dashboard(w http.ResponseWriter, r *http.Request) {
	if d, ok := p.dashboardModel(w, r); ok {
		p.render(w, r, http.StatusOK, views.DashboardPage(d))
	}
}

// dashboardLive is the changing part of the dashboard alone, which
// dashboard.js fetches to refresh the page: the server words every label.
func (p *pages) dashboardLive(w http.ResponseWriter, r *http.Request) {
	if d, ok := p.dashboardModel(w, r); ok {
		p.render(w, r, http.StatusOK, views.DashboardLive(d))
	}
}

// dashboardModel is the dashboard now: the totals and the page of locks
// the URL asks for (GET /api/v1/locks's parameters; the locks that need a
// look first by default), of ?service= when it names one.
func (p *pages) dashboardModel(w http.ResponseWriter, r *http.Request) (views.Dashboard, bool) {
	q, err := parseLocksQuery(r.URL.Query(), p.services, views.DashboardSort, views.DashboardLimit)
	if err != nil {
		p.fail(w, r, statusOf(err), err.Error())
		return views.Dashboard{}, false
	}
	now := time.Now()
	page := listLocks(p.snaps, p.pending, p.services, q, now)
	rows := make([]views.LockRow, len(page.Rows))
	for i, l := range page.Rows {
		rows[i] = views.NewLockRow(l.Summary, l.Pending, now)
	}
	var conns []string
	for c := range page.DefaultConns {
		conns = append(conns, string(c))
	}
	pg := p.page("Locks", "dashboard")
	pg.Modules = p.assets.modules("dashboard.js") // it imports queue.js for its words
	d := views.NewDashboard(pg, rows, views.DashboardList{
		Q: q.q, State: q.state, Sort: q.sort, Limit: q.limit, Cursor: r.URL.Query().Get("cursor"),
		Next: page.Next, Prev: page.Prev, Offset: page.Offset, Matched: page.Matched, Totals: views.Totals(page.Totals),
	}, serviceView(p.services.DefaultOrName()), conns)
	if p.conn != nil {
		d.SetWatcherConnection(string(p.conn()))
	}
	var statuses []views.ServiceStatus
	for _, svc := range p.services.All() {
		st := views.NewServiceStatus(serviceView(svc), false, "", nil)
		if svc.Reader != nil {
			st = views.NewServiceStatus(st.Service, true, svc.Reader.Connection(), svc.Reader.Err())
		}
		statuses = append(statuses, st)
	}
	d.SetServices(statuses)
	d.Unexplored = unexplored(p.services)
	for _, a := range page.Across {
		d.Across = append(d.Across, views.Alert{Kind: a.Kind, Message: a.Message, Locks: a.Locks})
	}
	if p.history != nil {
		d.SetSparklines(p.sparks.of(p.history, p.snaps.Latest, p.log))
	}
	d.OnlyService(q.service)
	return d, true
}

// serviceView is svc as the pages name it and word its locks.
func serviceView(svc lockservice.Service) views.Service { return views.NewService(svc) }

// serviceViewNamed is the service a snapshot names (its wire name) as the
// pages word it: the neutral words when it is not registered.
func serviceViewNamed(reg *lockservice.Registry, name string) views.Service {
	svc, err := reg.Lookup(name)
	if err != nil {
		svc = lockservice.Service{Name: name}
	}
	return views.NewService(svc)
}

func (p *pages) lock(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !q.Has("path") {
		p.fail(w, r, http.StatusBadRequest, "The lock view needs a lock parent path: /lock?path=/locks/orders")
		return
	}
	svc, err := serviceOf(p.services, r)
	if err != nil {
		p.fail(w, r, statusOf(err), err.Error())
		return
	}
	lp := q.Get("path")
	if err := svc.CheckName(lp); err != nil {
		p.fail(w, r, statusOf(err), err.Error())
		return
	}
	id := lockqueue.LockID{Service: svc.Name, Name: lp}
	snap, ok := p.snaps.Latest(id.Key())
	// A path with a snapshot is followed, whoever publishes it (the
	// simulator's runs go to the same hub as the watcher's locks).
	watched := ok || watchedBy(svc, lp)
	now := time.Now()
	past, err := p.moment(id, q)
	if errors.Is(err, ErrUnavailable) {
		// The history cannot be read now (its database gone): the page is
		// still the lock's, at the moment asked for, saying why it cannot
		// show it; lock.js shows it once the history records again.
		past, err = unreadableMoment(id, q, err)
	}
	if err != nil {
		code, msg := errorAnswer(w, r, p.log, err)
		p.fail(w, r, code, msg)
		return
	}
	if !past.replay.At.IsZero() {
		snap, ok, now = past.snap, past.known, past.replay.At
	}
	pg := p.page(lp, "lock")
	pg.Modules = p.assets.modules("lock.js")
	sv := serviceView(svc)
	pg.Legend = sv.Legend()
	pg.Body = templ.Attributes{
		"data-path": lp, "data-live": "false", "data-watched": strconv.FormatBool(watched),
		// The page script builds every URL (socket, JSON, watch) from
		// (service, path); the title names the service for whoever reads
		// the page (tools, tests).
		"data-service": sv.Name, "data-service-title": sv.Title, "data-lock-query": views.LockQuery(sv.Name, lp),
		"data-history": strconv.FormatBool(p.history != nil), "data-at": past.replay.AtMillis(),
		// Whether the recorder records: the socket's frames say it again
		// with each change, GET /api/v1/history/status while it does not.
		"data-history-off": pg.HistoryOff,
	}
	var facts *views.QueueFacts
	if past.replay.At.IsZero() {
		facts = p.facts.of(id.Key(), versionOf(snap, ok), snap)
	}
	st := views.LockState{Path: lp, Snap: snap, Facts: facts, Known: ok}
	l := views.NewLockWith(pg, sv, st, views.TableQuery{Size: views.FirstPageRows, Selected: q.Get("node"), Show: q.Get("node")}, now)
	l.Watched, l.CanWatch = watched, svc.Reader != nil
	if ok && past.replay.At.IsZero() && len(snap.Nodes) > windowWholeUpTo {
		l.FirstFrame = p.firstFrame(id, snap, q.Get("node"))
	}
	l.Replay = past.replay
	l.Figures = p.pageFigures(id, q, past.replay.At, pg.HistoryOff != "")
	if !past.replay.At.IsZero() {
		l.Live, l.Banner = false, "" // the replay status says which moment this is
	}
	if !watched {
		l.Banner = "" // nothing is stale: the page says "not watched" instead
	}
	p.render(w, r, http.StatusOK, views.LockPage(l))
}

// firstFrame is the message the lock page's socket sends first for a long
// queue, the window the page opens on (lock.js's first viewWindow: the
// table's first page and the node in the URL), made from the snapshot
// the page is rendered from; nil if it cannot be encoded.
func (p *pages) firstFrame(id lockqueue.LockID, snap lockqueue.Snapshot, node string) []byte {
	v := view{on: true, from: 0, size: views.FirstPageRows, node: node}
	sent, win := windowOf(snap, v, p.facts.window(id.Key(), versionOf(snap, true), snap))
	b, _, err := encodeWindowFrame(nil, sent, win, nil)
	if err != nil {
		p.log.Warn("lock page's first frame", "lock", id.Key(), "err", err)
		return nil
	}
	return b
}

// pageFigures are the lock page's wait and hold figures over the default
// window ending now, or around at when the page replays a moment; nil
// without a history, or when it cannot be read. While the history
// records, the page gets a place for them and fetches them once shown
// (GET /parts/lock-figures): reading an hour of a big queue's history
// before the page answered kept its queue from view for seconds. While it
// does not (historyOff), they are read here, as a history that cannot be
// read (its database gone) has the page show none rather than a place
// that never fills.
func (p *pages) pageFigures(id lockqueue.LockID, q url.Values, at time.Time, historyOff bool) *views.Figures {
	if p.history == nil {
		return nil
	}
	to := time.Now()
	if end := at.Add(defaultWindow / 2); !at.IsZero() && end.Before(to) {
		to = end
	}
	if !historyOff {
		f := views.PendingFigures(to.Add(-defaultWindow), to)
		return &f
	}
	f, err := p.figures(id, q, to.Add(-defaultWindow), to)
	if err != nil {
		// The history is off, or its database gone: the page says so.
		if !errors.Is(err, history.ErrNoHistory) && !errors.Is(err, ErrUnavailable) {
			p.log.Warn("lock page figures", "lock", id.Key(), "err", err)
		}
		return nil
	}
	return &f
}

// tableQuery reads a table's page, size, filter, selection and the node
// whose page to show from the URL, as QueueTable in table.js sends them.
func tableQuery(q url.Values) views.TableQuery {
	tq := views.TableQuery{Filter: q.Get("q"), Selected: q.Get("selected"), Show: q.Get("show")}
	tq.Page, _ = strconv.Atoi(q.Get("page"))
	tq.Size, _ = strconv.Atoi(q.Get("size"))
	tq.Size = min(max(tq.Size, 0), maxTableRows)
	return tq
}

// maxTableRows bounds one page of a table.
const maxTableRows = 500

// latest finds the lock a part of the lock page is about (?service=,
// ?path=) and its newest snapshot, if any.
func (p *pages) latest(r *http.Request) (svc lockservice.Service, name string, snap lockqueue.Snapshot, ok bool, err error) {
	svc, err = serviceOf(p.services, r)
	if err != nil {
		return svc, "", snap, false, err
	}
	name = r.URL.Query().Get("path")
	if err := svc.CheckName(name); err != nil {
		return svc, name, snap, false, err
	}
	snap, ok = p.snaps.Latest(lockqueue.LockID{Service: svc.Name, Name: name}.Key())
	return svc, name, snap, ok, nil
}

// lockParts are the parts of the lock page that follow the lock (banner,
// summary, alerts, a page of the table), from its newest snapshot: the lock
// page's socket brings them with every change (liveParts), and the page
// fetches them when it turns the table's page or filters it, so their
// labels are the server's, the same components as the first paint's. The
// parts of the newest snapshot are cached
// (partsCache) and carry an ETag: their clocks are started from data-since
// by the page, so a render a few seconds old reads the same once ticked.
// A past moment (?at=) is rendered each time.
func (p *pages) lockParts(w http.ResponseWriter, r *http.Request) {
	svc, name, snap, ok, err := p.latest(r)
	if err != nil {
		writeTextError(w, r, p.log, err)
		return
	}
	id := lockqueue.LockID{Service: svc.Name, Name: name}
	past, err := p.moment(id, r.URL.Query())
	if err != nil {
		writeTextError(w, r, p.log, err)
		return
	}
	tq := tableQuery(r.URL.Query())
	var part *renderedPart
	if past.replay.At.IsZero() {
		part, _ = p.liveParts(r.Context(), svc, views.LockState{Path: name, Snap: snap, Known: ok}, tq, p.historyStatus)
	} else {
		pg := p.page(name, "lock")
		st := views.LockState{Path: name, Snap: past.snap, Known: past.known}
		part = renderPart(func() ([]byte, []int, []uint64, error) {
			return p.renderParts(r.Context(), pg, svc, st, tq, past.replay)
		})
	}
	if part.err != nil {
		p.log.Error("render parts", "lock", id.Key(), "err", part.err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	// no-cache, not no-store: the browser keeps the answer and asks again
	// with If-None-Match, which an unchanged lock answers with a 304.
	h := setHeaders(w, "text/html; charset=utf-8", "no-cache")
	h.Set("ETag", part.etag)
	h.Set("Referrer-Policy", "same-origin")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(part.body))
}

// liveParts are the parts of the lock st, its newest snapshot, for the
// table's page tq: rendered once per snapshot,
// view and history status (partsCache), for GET /parts/lock and the lock
// page's socket alike, the history's status read with status (the socket's
// frames do not wait for the recorder). historyOff is what the parts say of
// the history (pages.page).
func (p *pages) liveParts(ctx context.Context, svc lockservice.Service, st views.LockState, tq views.TableQuery, status func() history.Status) (part *renderedPart, historyOff string) {
	id := lockqueue.LockID{Service: svc.Name, Name: st.Path}
	pg := p.pageWith(st.Path, "lock", status)
	render := func() ([]byte, []int, []uint64, error) {
		return p.renderParts(ctx, pg, svc, st, tq, views.Replay{})
	}
	if p.parts == nil {
		return renderPart(render), pg.HistoryOff
	}
	return p.parts.get(id.Key(), versionOf(st.Snap, st.Known), viewKey(tq)+"\x00"+pg.HistoryOff, render), pg.HistoryOff
}

// renderParts renders the parts of the lock st, now or at replay's moment
// when set, on the page pg, and says where each of its sections ends and
// what each one's hash is.
func (p *pages) renderParts(ctx context.Context, pg views.Page, svc lockservice.Service, st views.LockState, tq views.TableQuery, replay views.Replay) ([]byte, []int, []uint64, error) {
	p.partRenders.Add(1)
	id := lockqueue.LockID{Service: svc.Name, Name: st.Path}
	now := replay.At
	if now.IsZero() {
		now = time.Now()
		st.Facts = p.facts.of(id.Key(), versionOf(st.Snap, st.Known), st.Snap)
	}
	l := views.NewLockWith(pg, serviceView(svc), st, tq, now)
	l.Replay, l.Watched = replay, st.Known || watchedBy(svc, st.Path)
	var buf, changed bytes.Buffer
	var cuts []int
	var sums []uint64
	// Shared by every viewer asking meanwhile: the first one leaving must
	// not fail it for the others.
	ctx = context.WithoutCancel(ctx)
	for _, sec := range views.LockPartSections(l) {
		from := buf.Len()
		if err := sec.Render(ctx, &buf); err != nil {
			return nil, nil, nil, fmt.Errorf("render the parts of %s: %w", id.Key(), err)
		}
		cuts = append(cuts, buf.Len())
		told := buf.Bytes()[from:]
		if sec.Changed != nil {
			changed.Reset()
			if err := sec.Changed.Render(ctx, &changed); err != nil {
				return nil, nil, nil, fmt.Errorf("render the parts of %s: %w", id.Key(), err)
			}
			told = changed.Bytes()
		}
		sums = append(sums, sectionSum(told))
	}
	return buf.Bytes(), cuts, sums, nil
}

// lockText is the lock's newest snapshot as plain text, for the lock
// page's "copy as text".
func (p *pages) lockText(w http.ResponseWriter, r *http.Request) {
	svc, name, snap, ok, err := p.latest(r)
	if err != nil {
		writeTextError(w, r, p.log, err)
		return
	}
	// At a past moment (?at=) the text is the queue then.
	past, err := p.moment(lockqueue.LockID{Service: svc.Name, Name: name}, r.URL.Query())
	if err != nil {
		writeTextError(w, r, p.log, err)
		return
	}
	now := time.Now()
	if !past.replay.At.IsZero() {
		snap, ok, now = past.snap, past.known, past.replay.At
	}
	if !ok {
		http.Error(w, name+" is not watched, or not read yet", http.StatusNotFound)
		return
	}
	setHeaders(w, "text/plain; charset=utf-8", "no-store")
	io.WriteString(w, views.QueueText(serviceView(svc), snap, now))
}

// simStrategies are the classroom's strategy choices: one run of either, or
// both side by side.
var simStrategies = map[string]bool{"predecessor": true, "herd": true, "compare": true}

func (p *pages) classroom(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s := views.Sim{Page: p.page("Classroom", "sim"), Enabled: p.sim, Scenario: q.Get("scenario"), Strategy: q.Get("strategy")}
	switch s.Strategy {
	case "":
		s.Strategy = "predecessor"
	case "both":
		// The page offers "both, side by side"; its value is compare.
		s.Strategy = "compare"
	}
	if !simStrategies[s.Strategy] {
		p.fail(w, r, http.StatusBadRequest, fmt.Sprintf("unknown strategy %q: use predecessor, herd or both (compare)", s.Strategy))
		return
	}
	if len(s.Scenario) > 100 {
		p.fail(w, r, http.StatusBadRequest, "scenario name too long")
		return
	}
	if v := q.Get("step"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			p.fail(w, r, http.StatusBadRequest, fmt.Sprintf("step %q is not a step number (0, 1, 2, …)", v))
			return
		}
		s.Step = n
	}
	s.Body = templ.Attributes{"data-sim": strconv.FormatBool(p.sim)}
	// Presentation mode (?present=1, sim.js's p) is painted from the
	// first frame: a projector never shows the page's everyday layout.
	if q.Get("present") == "1" {
		s.Body["data-present"] = "true"
	}
	s.Legends = map[string][]views.LegendItem{}
	for _, svc := range p.services.All() {
		sv := serviceView(svc)
		// By name, and the default service also by "" (its runs name
		// none on the wire).
		s.Legends[sv.Name] = sv.Legend()
		s.Legends[lockqueue.WireService(sv.Name)] = sv.Legend()
	}
	s.Words = p.services.ClassroomWords()
	status := http.StatusOK
	if !p.sim {
		status = http.StatusNotFound
	} else {
		p.warmClassrooms()
	}
	p.render(w, r, status, views.SimPage(s))
}

// warmClassrooms starts, in the background, the servers that are slow to
// start, now that someone has opened the classroom.
func (p *pages) warmClassrooms() {
	for _, svc := range p.services.All() {
		if w, ok := svc.Classroom.(lockservice.Warmer); ok {
			w.Warm()
		}
	}
}

func (p *pages) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	p.render(w, r, status, views.ErrorPage(p.page(http.StatusText(status), ""), status, msg))
}

// render writes c whole or not at all, so a template error cannot leave half a
// page behind a 200.
func (p *pages) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(r.Context(), &buf); err != nil {
		p.log.Error("render page", "path", r.URL.Path, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	setHeaders(w, "text/html; charset=utf-8", "no-store").Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// assets are the static files with their content hashes. A URL carrying the
// current version (?v=) may be cached for good; any other is revalidated by
// ETag, which is what module imports between the scripts get.
type assets struct {
	files   map[string]asset
	version string
	// imports lists the static files each script imports ("./queue.js").
	imports map[string][]string
}

// importLine matches a script's static import of a sibling file.
var importLine = regexp.MustCompile(`(?m)^(import (?:[^'"]* from )?'\./([^'/]+\.js))';`)

// modules are the static files entry imports, directly or not, in a fixed
// order: what its page preloads.
func (a *assets) modules(entry string) []string {
	seen := map[string]bool{entry: true}
	var out []string
	var walk func(name string)
	walk = func(name string) {
		for _, m := range a.imports[name] {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
				walk(m)
			}
		}
	}
	walk(entry)
	return out
}

type asset struct {
	body  []byte
	etag  string
	ctype string
}

func loadAssets(fsys fs.FS) (*assets, error) {
	a := &assets{files: map[string]asset{}, imports: map[string][]string{}}
	all := sha256.New()
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(name, ".go") {
			return err
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(name))
		switch path.Ext(name) {
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".svg":
			ctype = "image/svg+xml"
		}
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		a.files[name] = asset{body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ctype: ctype}
		if path.Ext(name) == ".js" {
			for _, m := range importLine.FindAllSubmatch(body, -1) {
				a.imports[name] = append(a.imports[name], string(m[2]))
			}
		}
		all.Write([]byte(name))
		all.Write(sum[:])
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(a.files) == 0 {
		return nil, errors.New("no static files embedded")
	}
	a.version = hex.EncodeToString(all.Sum(nil)[:6])
	// A script's imports carry the version too: they are cached for good
	// like the page's own script, and a module imported by two scripts,
	// or by a script and a page, is one module (one URL).
	for name, f := range a.files {
		if len(a.imports[name]) == 0 {
			continue
		}
		f.body = importLine.ReplaceAll(f.body, []byte("${1}?v="+a.version+"';"))
		sum := sha256.Sum256(f.body)
		f.etag = `"` + hex.EncodeToString(sum[:8]) + `"`
		a.files[name] = f
	}
	return a, nil
}

func (p *pages) static(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "*")
	f, ok := p.assets.files[name]
	if !ok {
		http.Error(w, "no such file: /static/"+name, http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	if v := r.URL.Query().Get("v"); v != "" && v == p.assets.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
}
