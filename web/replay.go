package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/views"
)

// The lock page at a past moment (?at=) and its figures, from the history
// (Config.History): without one the pages are live only.

// past is the lock at the moment a page asks for (?at=); a zero
// replay.At when it asks for the present.
type past struct {
	replay views.Replay
	snap   lockqueue.Snapshot
	known  bool
}

// moment reads ?at= and rebuilds the lock then.
func (p *pages) moment(id lockqueue.LockID, q url.Values) (past, error) {
	var pt past
	if p.history == nil {
		return pt, nil
	}
	pt.replay = views.Replay{On: true, ExportHref: exportHref(id, time.Now().Add(-defaultWindow), time.Now())}
	if !q.Has("at") || q.Get("at") == "" {
		return pt, nil
	}
	at, err := parseTime("at", q.Get("at"))
	if err != nil {
		return pt, err
	}
	key, err := historyKey(p.history, p.snaps.Latest, id, q)
	if errors.Is(err, ErrUnavailable) {
		return pt, err
	}
	if err != nil {
		// Which cluster's history to show is not known: none is.
		pt.replay = views.ReplayOf(history.State{}, false, at)
		pt.replay.ExportHref = exportHref(id, at.Add(-defaultWindow/2), at.Add(defaultWindow/2))
		return pt, nil
	}
	m := p.moments.of(key, at, func() rebuilt {
		st, err := p.history.At(key, at)
		m := rebuilt{st: st, known: err == nil}
		if err != nil && !errors.Is(err, history.ErrNoHistory) {
			m.err = fmt.Errorf("the history of %s at %s: %w", id.Name, views.When(at), err)
		} else if m.known {
			m.gap, m.inGap = gapAt(p.history, key, st, at)
		}
		return m
	})
	if m.err != nil {
		return pt, m.err
	}
	href := exportHref(id, at.Add(-defaultWindow/2), at.Add(defaultWindow/2))
	pt.replay = views.ReplayOf(m.st, m.known, at)
	pt.replay.ExportHref = href
	if m.known {
		pt.snap, pt.known = m.st.Snapshot(), true
		if m.inGap {
			pt.replay.Seen, pt.replay.Why = false, m.gap.Why
			markUnknown(&pt.snap, m.gap)
		}
	}
	return pt, nil
}

// unreadableMoment is the moment ?at= asks for while the history cannot
// be read (why): nothing known of it, and why not.
func unreadableMoment(id lockqueue.LockID, q url.Values, why error) (past, error) {
	at, err := parseTime("at", q.Get("at"))
	if err != nil {
		return past{}, err
	}
	r := views.Replay{On: true, At: at, Off: why.Error(), ExportHref: exportHref(id, at.Add(-defaultWindow/2), at.Add(defaultWindow/2))}
	return past{replay: r}, nil
}

// rebuilt is a lock at a past moment as the history rebuilds it.
type rebuilt struct {
	st    history.State
	known bool
	gap   history.Span // the stretch the history does not know about, and why
	inGap bool
	err   error
}

// Bounds of the moment cache: how long a rebuilt moment is reused, and how
// many are kept.
const (
	momentTTL  = 2 * time.Second
	maxMoments = 64
)

// momentCache shares rebuilt moments between requests: a scrub frame asks
// for the same moment twice at once, the lane's snapshot (/parts/lock-at)
// and the table's page (/parts/lock?at=), and the history is read for it
// once; a moment asked for while it is being rebuilt waits for it. Entries
// live momentTTL: a moment close to now can still learn of a gap.
type momentCache struct {
	mu    sync.Mutex
	calls map[momentKey]*momentCall
}

type momentKey struct {
	lock string
	at   int64
}

type momentCall struct {
	done chan struct{}
	made time.Time
	m    rebuilt
}

// of is the lock of history key lock at at, rebuilt by build unless it
// was lately.
func (c *momentCache) of(lock string, at time.Time, build func() rebuilt) rebuilt {
	key := momentKey{lock, at.UnixNano()}
	now := time.Now()
	c.mu.Lock()
	if call, ok := c.calls[key]; ok && (call.made.IsZero() || now.Sub(call.made) < momentTTL) {
		c.mu.Unlock()
		<-call.done
		return call.m
	}
	if c.calls == nil {
		c.calls = map[momentKey]*momentCall{}
	}
	if len(c.calls) >= maxMoments {
		for k, old := range c.calls {
			// Expired ones go, then any finished while still full.
			if !old.made.IsZero() && (now.Sub(old.made) >= momentTTL || len(c.calls) >= maxMoments) {
				delete(c.calls, k)
			}
		}
	}
	call := &momentCall{done: make(chan struct{})}
	c.calls[key] = call
	c.mu.Unlock()

	m := build()
	c.mu.Lock()
	call.m, call.made = m, time.Now()
	if m.err != nil {
		delete(c.calls, key) // asked again, read again
	}
	c.mu.Unlock()
	close(call.done)
	return m
}

// gapLookahead is how far gapAt reads past the moment, first the short
// look then the long one. Nothing is recorded of a lock while the recorder
// does not see it, so a gap learnt of afterwards is the first event after
// any moment inside it: once an event after the moment is read, later ones
// cannot change the answer. A busy lock is settled by the short look, which
// keeps a scrub frame to the segment it is in rather than an hour of them.
var gapLookahead = []time.Duration{time.Minute, defaultWindow}

// gapAt reports whether at falls in a stretch the history does not know
// about: since when, and why. A gap the recorder learns of afterwards (it
// was not running) is recorded when it ends, so the events after at are
// read too.
func gapAt(src history.Source, key string, st history.State, at time.Time) (history.Span, bool) {
	var evs []history.Event
	var end time.Time
	for _, ahead := range gapLookahead {
		end = at.Add(ahead)
		var err error
		if evs, err = src.Events(key, at, end); err != nil {
			return history.Span{From: st.Time}, !st.Live()
		}
		if slices.ContainsFunc(evs, func(e history.Event) bool { return e.Time.After(at) }) {
			break
		}
	}
	for _, g := range history.Gaps(st, evs, end) {
		if !g.From.After(at) && g.To.After(at) {
			return g, true
		}
	}
	return history.Span{}, false
}

// markUnknown marks snap, the lock as the history last saw it before gap,
// as not known from the gap's start on: the state before a gap is the last
// known one, never an answer for a moment inside it (a gap learnt of
// afterwards follows a state that was live).
func markUnknown(snap *lockqueue.Snapshot, gap history.Span) {
	snap.UnknownSince = gap.From
	if snap.Connection == lockqueue.Connected {
		snap.Connection = ""
	}
	if snap.Error == "" {
		snap.Error = gap.Why
	}
}

// exportHref is the incident export of id over [from, to].
func exportHref(id lockqueue.LockID, from, to time.Time) string {
	q := id.Query()
	q.Set("from", fmt.Sprint(from.UnixMilli()))
	q.Set("to", fmt.Sprint(to.UnixMilli()))
	return "/api/v1/lock/export?" + q.Encode()
}

// figures are id's figures over [from, to], histograms included, of the
// cluster q asks for (historyKey); none when which is not known.
func (p *pages) figures(id lockqueue.LockID, q url.Values, from, to time.Time) (views.Figures, error) {
	key, err := historyKey(p.history, p.snaps.Latest, id, q)
	if errors.Is(err, ErrUnavailable) {
		return views.Figures{}, err
	}
	if err != nil {
		return views.Figures{}, nil
	}
	return figuresOf(p.history, key, from, to)
}

// figuresOf are the figures of the lock of history key key.
func figuresOf(src history.Source, key string, from, to time.Time) (views.Figures, error) {
	// The histograms need only the measured waits and holds: they are
	// kept from the figures' own walk of the window, not collected (an
	// hour of a big queue is hundreds of thousands of records).
	var measured []history.Event
	st, err := history.StatsWalk(src, key, from, to, func(e history.Event) {
		_, wait := e.MeasuredWait()
		_, hold := e.MeasuredHold()
		if !e.Synthetic && (wait || hold) {
			measured = append(measured, e)
		}
	})
	if err != nil {
		return views.Figures{}, fmt.Errorf("figures of %s: %w", key, err)
	}
	return views.NewFigures(st, measured), nil
}

// lockFigures is the figures part (GET /parts/lock-figures?from=&to=),
// which the lock page fetches when its window changes.
func (p *pages) lockFigures(w http.ResponseWriter, r *http.Request) {
	if p.history == nil {
		http.Error(w, "the history is off on this server (serve --history=on)", http.StatusNotFound)
		return
	}
	svc, name, _, _, err := p.latest(r)
	if err != nil {
		writeTextError(w, r, p.log, err)
		return
	}
	from, to, err := window(r)
	if err != nil {
		writeTextError(w, r, p.log, err)
		return
	}
	f, err := p.figures(lockqueue.LockID{Service: svc.Name, Name: name}, r.URL.Query(), from, to)
	if err != nil && statusOf(err) == http.StatusServiceUnavailable {
		// A history that cannot be read now (its database gone): the part
		// says so. The page may ask in the moment between a change and
		// its summary saying "history off", and a 503 there would be an
		// error in its console; it asks again once the history records.
		p.render(w, r, http.StatusOK, views.LockFiguresOff(err.Error()))
		return
	}
	if err != nil {
		writeTextError(w, r, p.log, err)
		return
	}
	p.render(w, r, http.StatusOK, views.LockFigures(f))
}

// sparkTTL is how long a dashboard sparkline is reused: the dashboard is
// fetched again on every change of any lock, and an hour of events need not
// be read for each.
const sparkTTL = 15 * time.Second

// sparkCache keeps the dashboard's sparklines for sparkTTL.
type sparkCache struct {
	mu    sync.Mutex
	lines map[string]cachedSpark
}

type cachedSpark struct {
	at    time.Time
	spark views.Sparkline
}

// of is the sparkline of a dashboard row, from src's last hour of the
// cluster the lock is read from (historyKey).
func (c *sparkCache) of(src history.Source, latest func(string) (lockqueue.Snapshot, bool), log *slog.Logger) func(service, path string) views.Sparkline {
	now := time.Now()
	return func(service, path string) views.Sparkline {
		key, err := historyKey(src, latest, lockqueue.LockID{Service: service, Name: path}, nil)
		if err != nil {
			return views.NewSparkline(nil, now)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if s, ok := c.lines[key]; ok && now.Sub(s.at) < sparkTTL {
			return s.spark
		}
		evs, err := src.Events(key, now.Add(-time.Hour), now)
		if err != nil {
			// The history is off, or its database gone: the dashboard says so.
			if !errors.Is(err, history.ErrNoHistory) && !errors.Is(err, ErrUnavailable) {
				log.Warn("dashboard sparkline", "lock", key, "err", err)
			}
			return views.NewSparkline(nil, now)
		}
		if c.lines == nil {
			c.lines = map[string]cachedSpark{}
		}
		s := views.NewSparkline(evs, now)
		c.lines[key] = cachedSpark{at: now, spark: s}
		return s
	}
}

// lockAt is the lock's snapshot at ?at= for the lane of the lock page,
// as GET /api/v1/lock?at= answers it, but a moment the history has nothing
// of is an empty queue with "known": false rather than a 404: scrubbing
// across the start of the history is not an error. With ?parts=1 the
// answer is HTML: that JSON in a <script type="application/json"
// id="moment"> element, then the lock's parts at the moment as
// GET /parts/lock answers them for the same query (the table's page), so
// a scrub frame is one request, not two racing for the same two cores.
func (p *pages) lockAt(w http.ResponseWriter, r *http.Request) {
	svc, name, _, _, err := p.latest(r)
	if err != nil {
		writeTextError(w, r, p.log, err)
		return
	}
	if p.history == nil || !r.URL.Query().Has("at") {
		http.Error(w, "the history is off on this server, or ?at= is missing", http.StatusNotFound)
		return
	}
	past, err := p.moment(lockqueue.LockID{Service: svc.Name, Name: name}, r.URL.Query())
	if err != nil {
		writeTextError(w, r, p.log, err)
		return
	}
	snap := past.snap
	if !past.known {
		snap = lockqueue.Snapshot{Path: name, WatchSource: "history"}
	}
	answer := struct {
		Known    bool               `json:"known"`
		Snapshot lockqueue.Snapshot `json:"snapshot"`
		// For the page (?parts=1): the window of the moment's queue its
		// lane draws for the table's page, as a live socket would send it.
		Window *Window `json:"window,omitempty"`
	}{Known: past.known, Snapshot: wireSnapshot(snap)}
	if r.URL.Query().Get("parts") != "1" {
		writeJSON(w, http.StatusOK, answer)
		return
	}
	tq := tableQuery(r.URL.Query())
	size := max(tq.Size, 1)
	answer.Snapshot, answer.Window = windowOf(answer.Snapshot, view{on: true, from: tq.Page * size, size: size, node: tq.Selected}, nil)
	// The parts handler itself, into memory: the moment it rebuilds is the
	// one just rebuilt (momentCache). Parts that fail are left out
	// (lockParts logs why): the lane is still drawn, the table stays.
	var pr partsResponse
	p.lockParts(&pr, r)
	p.render(w, r, http.StatusOK, templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		b, err := json.Marshal(answer)
		if err != nil {
			return fmt.Errorf("the snapshot of %s at a moment: %w", name, err)
		}
		// json.Marshal escapes <, > and &, so the snapshot cannot end its
		// element; the parts follow as they are, not escaped into a string.
		fmt.Fprintf(w, "<script type=\"application/json\" id=\"moment\">%s</script>\n", b)
		if pr.code == http.StatusOK {
			_, err = w.Write(pr.body.Bytes())
		}
		return err
	}))
}

// partsResponse keeps in memory the answer of a handler called for
// another's (lockAt's ?parts=1).
type partsResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *partsResponse) Header() http.Header {
	if r.header == nil {
		r.header = http.Header{}
	}
	return r.header
}

func (r *partsResponse) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *partsResponse) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
