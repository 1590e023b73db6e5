package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// PageRoutes registers the browser pages: the dashboard (/), the lock view
// (/lock?path=), the classroom (/sim) and their assets (/static/*). Pages
// render a first paint from the hub; the scripts then follow the websocket
// and the JSON API.
func PageRoutes(h Snapshots, simEnabled bool, opts ...PageOption) func(chi.Router) {
	return newPages(h, simEnabled, opts...).routes
}

func newPages(h Snapshots, simEnabled bool, opts ...PageOption) *pages {
	a, err := loadAssets(static.FS)
	if err != nil {
		// The assets are compiled in; failing here is a build mistake.
		panic(fmt.Sprintf("web: static assets: %v", err))
	}
	p := &pages{
		snaps: h, sim: simEnabled, assets: a, log: slog.Default().With("component", "pages"),
		services: &lockservice.Registry{}, parts: &partsCache{},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func (p *pages) routes(r chi.Router) {
	r.Get("/", p.dashboard)
	r.Get("/parts/dashboard", p.dashboardLive)
	r.Get("/parts/lock", p.lockParts)
	r.Get("/parts/lock-text", p.lockText)
	r.Get("/parts/lock-figures", p.lockFigures)
	r.Get("/parts/lock-at", p.lockAt)
	r.Post("/parts/queue-table", p.queueTable)
	r.Post("/parts/queue-node", p.queueNode)
	r.Post("/parts/lane-names", p.laneNames)
	r.Get("/lock", p.lock)
	r.Get("/sim", p.classroom)
	r.Get("/static/*", p.static)
}

// PageOption configures PageRoutes.
type PageOption func(*pages)

// WithServices tells the pages the lock services the server shows: how a
// lock's name is checked, which locks each service's reader follows and
// that POST /api/v1/watch can add more, so the lock view of an unwatched
// lock offers to watch it instead of opening a socket the server refuses.
// With a ZooKeeper reader the dashboard's first paint shows the reader's own
// session state (the "connection" of GET /api/v1/locks); without one it
// infers the state from the watched locks, and says nothing when none is
// watched.
// Without it the pages know no service, and the lock view refuses every
// lock.
func WithServices(reg *lockservice.Registry) PageOption {
	return func(p *pages) {
		p.services = reg
		if zk, err := reg.Lookup(lockqueue.ZooKeeper); err == nil && zk.Reader != nil {
			p.conn = zk.Reader.Connection
		}
	}
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
	// historyStatus says whether the recorder records (WithHistoryStatus).
	historyStatus func() history.Status
}

func (p *pages) page(title, active string) views.Page {
	pg := views.Page{Title: title, Active: active, SimEnabled: p.sim, Version: p.assets.version}
	if p.historyStatus != nil {
		if st := p.historyStatus(); !st.Recording {
			pg.HistoryOff = fmt.Sprintf("since %s: %s", st.Since.Local().Format("15:04:05"), st.Why)
		}
	}
	return pg
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
	page := listLocks(p.snaps, pendingFor(p.services), p.services, q, now)
	rows := make([]views.LockRow, len(page.Rows))
	for i, l := range page.Rows {
		rows[i] = views.NewLockRow(l.Summary, l.Pending, now)
	}
	var conns []string
	for c := range page.ZooKeeperConns {
		conns = append(conns, string(c))
	}
	d := views.NewDashboard(p.page("Locks", "dashboard"), rows, views.DashboardList{
		Q: q.q, State: q.state, Sort: q.sort, Limit: q.limit, Cursor: r.URL.Query().Get("cursor"),
		Next: page.Next, Prev: page.Prev, Offset: page.Offset, Matched: page.Matched, Totals: views.Totals(page.Totals),
	}, conns)
	if p.conn != nil {
		d.SetWatcherConnection(string(p.conn()))
	}
	var statuses []views.ServiceStatus
	for _, svc := range p.services.All() {
		st := views.NewServiceStatus(views.Service{Name: svc.Name, Title: svc.Title}, false, "", nil)
		if svc.Reader != nil {
			st = views.NewServiceStatus(st.Service, true, svc.Reader.Connection(), svc.Reader.Err())
		}
		statuses = append(statuses, st)
	}
	d.SetServices(statuses)
	d.Unexplored = unexplored(p.services)
	if p.history != nil {
		d.SetSparklines(p.sparks.of(p.history, p.snaps.Latest, p.log))
	}
	d.OnlyService(q.service)
	return d, true
}

// serviceView is svc as the pages name it.
func serviceView(svc lockservice.Service) views.Service {
	if svc.Name == lockqueue.ZooKeeper && svc.Title == "" {
		return views.ZooKeeperService
	}
	return views.Service{Name: svc.Name, Title: svc.Title}
}

func (p *pages) lock(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !q.Has("path") {
		p.fail(w, r, http.StatusBadRequest, "The lock view needs a lock parent path: /lock?path=/locks/orders")
		return
	}
	svc, err := serviceOf(p.services, r)
	if err != nil {
		p.fail(w, r, http.StatusNotFound, err.Error())
		return
	}
	lp := q.Get("path")
	if err := svc.CheckName(lp); err != nil {
		p.fail(w, r, http.StatusBadRequest, err.Error())
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
	pg.Body = templ.Attributes{
		"data-path": lp, "data-live": "false", "data-watched": strconv.FormatBool(watched),
		// The page script builds every URL (socket, JSON, watch) from
		// (service, path); the title names the service for whoever reads
		// the page (tools, tests).
		"data-service": sv.Name, "data-service-title": sv.Title,
		"data-history": strconv.FormatBool(p.history != nil), "data-at": past.replay.AtMillis(),
	}
	var facts *views.QueueFacts
	if past.replay.At.IsZero() {
		facts = p.facts.of(id.Key(), versionOf(snap, ok), snap)
	}
	l := views.NewLockWith(pg, sv, lp, snap, facts, ok, views.TableQuery{Size: views.FirstPageRows, Selected: q.Get("node"), Show: q.Get("node")}, now)
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

// errStatus is the status of a lookup's error: a bad name is the
// request's fault, anything else (an unknown service) is not found.
func errStatus(err error) int {
	if isBadName(err) {
		return http.StatusBadRequest
	}
	return http.StatusNotFound
}

// lockParts are the parts of the lock page that follow the lock (banner,
// summary, alerts, a page of the table), from its newest snapshot: the lock page
// fetches them after every change the socket sends, so their labels are
// the server's, the same components as the first paint's. Every viewer
// asks after every change, so the parts of the newest snapshot are cached
// (partsCache) and carry an ETag: their clocks are started from data-since
// by the page, so a render a few seconds old reads the same once ticked.
// A past moment (?at=) is rendered each time.
func (p *pages) lockParts(w http.ResponseWriter, r *http.Request) {
	svc, name, snap, ok, err := p.latest(r)
	if err != nil {
		http.Error(w, err.Error(), errStatus(err))
		return
	}
	id := lockqueue.LockID{Service: svc.Name, Name: name}
	past, err := p.moment(id, r.URL.Query())
	if err != nil {
		writeTextError(w, r, p.log, err)
		return
	}
	now := time.Now()
	if !past.replay.At.IsZero() {
		snap, ok, now = past.snap, past.known, past.replay.At
	}
	tq := tableQuery(r.URL.Query())
	pg := p.page(name, "lock")
	render := func() ([]byte, error) {
		p.partRenders.Add(1)
		var facts *views.QueueFacts
		if past.replay.At.IsZero() {
			facts = p.facts.of(id.Key(), versionOf(snap, ok), snap)
		}
		l := views.NewLockWith(pg, serviceView(svc), name, snap, facts, ok, tq, now)
		l.Replay, l.Watched = past.replay, ok || watchedBy(svc, name)
		var buf bytes.Buffer
		// Shared by every viewer asking meanwhile: the first one leaving
		// must not fail it for the others.
		if err := views.LockParts(l).Render(context.WithoutCancel(r.Context()), &buf); err != nil {
			return nil, fmt.Errorf("render the parts of %s: %w", id.Key(), err)
		}
		return buf.Bytes(), nil
	}
	var part *renderedPart
	if p.parts == nil || !past.replay.At.IsZero() {
		part = renderPart(render)
	} else {
		// The history's status is part of what the parts say.
		part = p.parts.get(id.Key(), versionOf(snap, ok), viewKey(tq)+"\x00"+pg.HistoryOff, render)
	}
	if part.err != nil {
		p.log.Error("render parts", "lock", id.Key(), "err", part.err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// no-cache, not no-store: the browser keeps the answer and asks again
	// with If-None-Match, which an unchanged lock answers with a 304.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", part.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(part.body))
}

// lockText is the lock's newest snapshot as plain text, for the lock
// page's "copy as text".
func (p *pages) lockText(w http.ResponseWriter, r *http.Request) {
	svc, name, snap, ok, err := p.latest(r)
	if err != nil {
		http.Error(w, err.Error(), errStatus(err))
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
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	io.WriteString(w, views.QueueText(snap, now))
}

// maxQueueTableBody bounds the snapshot a classroom sends to be rendered.
const maxQueueTableBody = 1 << 20

// queueTable renders the table of a snapshot the page sends: a classroom
// run's step, which the run keeps, not the hub. The page sends back the
// snapshot it shows, so the table matches the lane at the shown step.
func (p *pages) queueTable(w http.ResponseWriter, r *http.Request) {
	if snap, ok := sentSnapshot(w, r); ok {
		p.render(w, r, http.StatusOK, views.QueueTable(views.NewTable(snap, tableQuery(r.URL.Query()), time.Now())))
	}
}

// queueNode renders the detail pane of ?name= in a snapshot the page sends,
// as queueTable does its table.
func (p *pages) queueNode(w http.ResponseWriter, r *http.Request) {
	if snap, ok := sentSnapshot(w, r); ok {
		p.render(w, r, http.StatusOK, views.NodeDetailsView(views.NewNodeDetails(snap, r.URL.Query().Get("name"), time.Now())))
	}
}

// laneNames answers the name labels of the nodes a lane sends (a JSON list
// of {name, seq}), as a JSON object by name: the rule is the server's
// (views.ShortName), and a name's label never changes, so the lane asks
// once per node it draws.
func (p *pages) laneNames(w http.ResponseWriter, r *http.Request) {
	var nodes []views.NamedNode
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxQueueTableBody)).Decode(&nodes); err != nil {
		http.Error(w, "bad list of nodes: "+err.Error(), http.StatusBadRequest)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if err := json.NewEncoder(w).Encode(views.LaneNames(nodes)); err != nil {
		p.log.Warn("write lane names", "err", err)
	}
}

// sentSnapshot reads the snapshot a page sends to be rendered.
func sentSnapshot(w http.ResponseWriter, r *http.Request) (lockqueue.Snapshot, bool) {
	var snap lockqueue.Snapshot
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxQueueTableBody)).Decode(&snap); err != nil {
		http.Error(w, "bad snapshot: "+err.Error(), http.StatusBadRequest)
		return snap, false
	}
	return snap, true
}

// simStrategies are the classroom's strategy choices: one run of either, or
// both side by side.
var simStrategies = map[string]bool{"predecessor": true, "herd": true, "compare": true}

func (p *pages) classroom(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s := views.Sim{Page: p.page("Classroom", "sim"), Enabled: p.sim, Scenario: q.Get("scenario"), Strategy: q.Get("strategy")}
	if s.Strategy == "" {
		s.Strategy = "predecessor"
	}
	if !simStrategies[s.Strategy] {
		p.fail(w, r, http.StatusBadRequest, fmt.Sprintf("unknown strategy %q: use predecessor, herd or compare", s.Strategy))
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
	for _, svc := range p.services.All() {
		s.Services = append(s.Services, serviceView(svc))
	}
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
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
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
