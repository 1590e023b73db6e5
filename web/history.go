package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// The flight recorder's API: a lock's recorded events, the lock as it was
// at a moment (GET /api/v1/lock?at=), and its figures over a window. Times
// are RFC 3339 or unix milliseconds.

// defaultWindow is the window when ?from= is left out.
const defaultWindow = time.Hour

// maxEvents bounds one answer; a longer window is asked for in parts.
const maxEvents = 100_000

// HistoryResponse answers GET /api/v1/lock/history.
type HistoryResponse struct {
	Service string `json:"service,omitempty"`
	Path    string `json:"path"`
	// Cluster is the cluster the history is of (history.UnknownCluster
	// for one recorded before clusters were recorded).
	Cluster string          `json:"cluster"`
	From    time.Time       `json:"from"`
	To      time.Time       `json:"to"`
	Events  []history.Event `json:"events"`
	// Nodes are the lives of the nodes there at from or queued after it:
	// queued, acquired, left and how, their wait and hold.
	Nodes []history.Life `json:"nodes"`
	// Gaps are the stretches the history does not know about.
	Gaps []history.Span `json:"gaps"`
	// Truncated: the window held more events than one answer carries;
	// ask again from the last event's time.
	Truncated bool `json:"truncated,omitempty"`
}

// historyStore is the store, or a 404 saying the history is off.
func (s *Server) historyStore() (history.Source, error) {
	if s.cfg.History == nil {
		return nil, errorf(ErrNotFound, "the history is off on this server (serve --history=on)")
	}
	return s.cfg.History, nil
}

// parseTime reads an RFC 3339 time or unix milliseconds.
func parseTime(name, v string) (time.Time, error) {
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, errorf(ErrInvalid, "?%s=%q: want an RFC 3339 time (2026-11-23T03:12:00Z) or unix milliseconds", name, v)
	}
	return t, nil
}

// window reads ?from= and ?to= (default: the last hour).
func window(r *http.Request) (from, to time.Time, err error) {
	q := r.URL.Query()
	to = time.Now()
	if q.Has("to") {
		if to, err = parseTime("to", q.Get("to")); err != nil {
			return from, to, err
		}
	}
	from = to.Add(-defaultWindow)
	if q.Has("from") {
		if from, err = parseTime("from", q.Get("from")); err != nil {
			return from, to, err
		}
	}
	if from.After(to) {
		return from, to, errorf(ErrInvalid, "?from= (%s) is after ?to= (%s)", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	return from, to, nil
}

// historyKey is the key of the history of id that a request asks about,
// which names its cluster:
//   - the cluster ?cluster= names (history.UnknownCluster: what was
//     recorded before clusters were recorded);
//   - else the cluster the lock is read from now, by its newest snapshot
//     (latest);
//   - else, for a lock not read now, the one cluster it was recorded on.
//
// So a recording of another cluster, or of an unknown one, is never
// answered as the lock's own unless asked for by name; every answer names
// the cluster it is of.
func historyKey(src history.Source, latest func(string) (lockqueue.Snapshot, bool), id lockqueue.LockID, q url.Values) (string, error) {
	if q.Has("cluster") {
		c := q.Get("cluster")
		if c == "" {
			return "", errorf(ErrInvalid, "?cluster= is empty: give a cluster as /api/v1/history/locks lists it, or %s", history.UnknownCluster)
		}
		return history.Key(c, id.Key()), nil
	}
	if snap, ok := latest(id.Key()); ok {
		// A snapshot that names no cluster (a reader that does not tell
		// it) is of an unknown one.
		return history.Key(snap.Cluster, id.Key()), nil
	}
	locks, err := src.Locks()
	if err != nil {
		return "", err
	}
	var clusters []string
	for _, l := range locks {
		if l.LockID == id {
			clusters = append(clusters, l.Cluster)
		}
	}
	switch len(clusters) {
	case 0:
		return id.Key(), nil // nothing recorded: the store says so
	case 1:
		return history.Key(clusters[0], id.Key()), nil
	}
	return "", errorf(ErrInvalid, "%s was recorded on %d clusters (%s): ask with ?cluster=", id.Name, len(clusters), strings.Join(clusters, ", "))
}

// historyRef is the lock, its history's key and the window of a history
// request.
type historyRef struct {
	store    history.Source
	id       lockqueue.LockID
	key      string
	from, to time.Time
}

// historyRef reads r's lock, its history's key and its window.
func (s *Server) historyRef(r *http.Request) (h historyRef, err error) {
	if h.store, err = s.historyStore(); err != nil {
		return h, err
	}
	if _, h.id, err = s.lockRef(r); err != nil {
		return h, err
	}
	if h.key, err = historyKey(h.store, s.cfg.Hub.Latest, h.id, r.URL.Query()); err != nil {
		return h, err
	}
	h.from, h.to, err = window(r)
	return h, err
}

// windowEvents are the events of the lock's history key in [from, to],
// the lock as it was at from (no State when nothing was kept then) and the
// lives of its nodes, from one walk of the window: its restatements are no
// events, but the nodes a first sight in it restates were there when the
// history began, and have lives.
func windowEvents(store history.Source, key string, from, to time.Time) ([]history.Event, history.State, []history.Life, error) {
	before, err := store.At(key, from)
	if err != nil && !errors.Is(err, history.ErrNoHistory) {
		return nil, history.State{}, nil, err
	}
	var evs []history.Event
	lives := history.NewLivesFold(before)
	err = store.Walk(key, from, to, func(e history.Event) error {
		lives.Add(e)
		if !e.Synthetic {
			evs = append(evs, e)
		}
		return nil
	})
	if err != nil {
		return nil, history.State{}, nil, err
	}
	return evs, before, lives.Done(to), nil
}

// fitWindow is where a time bar over [from, to] starts when it asks to fit
// the history (?fit=history): where the history of the lock begins, when
// it knew nothing of the lock at from, else from. The history begins with
// the lock's first sight (a restatement of what was there, no change), and
// the bar starts there: a lock recorded for the last five minutes fills the
// bar, where an hour's window would crowd it into the bar's last twelfth,
// and so does one that has not changed since. A history that begins with a
// change starts a little before it, so the change is not on the bar's edge.
func fitWindow(r *http.Request, store history.Source, key string, before history.State, from, to time.Time) (time.Time, error) {
	switch v := r.URL.Query().Get("fit"); v {
	case "":
		return from, nil
	case "history":
	default:
		return from, errorf(ErrInvalid, "?fit=%q: want history, or leave it out", v)
	}
	if before.Lock != "" {
		return from, nil
	}
	first, err := firstRecord(store, key, from, to)
	if err != nil || first.Time.IsZero() {
		return from, err
	}
	if first.Synthetic {
		return first.Time, nil
	}
	// A margin of a twentieth of what is left; a second at least.
	start := first.Time.Add(-max(to.Sub(first.Time)/20, time.Second))
	if start.Before(from) {
		return from, nil
	}
	return start, nil
}

func (s *Server) handleLockHistory(w http.ResponseWriter, r *http.Request) {
	s.answer(w, r, func() (any, error) {
		h, err := s.historyRef(r)
		if err != nil {
			return nil, err
		}
		evs, before, lives, err := windowEvents(h.store, h.key, h.from, h.to)
		if err != nil {
			return nil, err
		}
		resp := HistoryResponse{Service: h.id.WireService(), Path: h.id.Name, Cluster: history.ClusterOf(h.key), From: h.from, To: h.to,
			Events: nonNil(evs), Gaps: history.Gaps(before, evs, h.to), Nodes: lives}
		if len(resp.Events) > maxEvents {
			resp.Events, resp.Truncated = resp.Events[:maxEvents], true
		}
		return resp, nil
	})
}

// DensityResponse answers GET /api/v1/lock/history/density: how many
// moments (distinct times of the recorded changes) fall in each of
// ?buckets= equal stretches of the window, for a time bar over more changes
// than one answer of the history lists. Bucket i holds the moments t with
// (t-from)*buckets/(to-from) rounded down = i, in milliseconds (a moment at
// to is in the last); the bar asks for the events of a few buckets at a time.
type DensityResponse struct {
	Service string    `json:"service,omitempty"`
	Path    string    `json:"path"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Counts  []int     `json:"counts"`
	// Moments is the window's distinct times, the counts' sum.
	Moments int `json:"moments"`
	// First and Last are the window's first and last moments.
	First *time.Time `json:"first,omitempty"`
	Last  *time.Time `json:"last,omitempty"`
	// Seen is the lock's first sight, when it is in the window (the
	// history knew nothing of the lock at from): the read that began its
	// history, whose nodes were there before, so it is no moment and
	// counts in no bucket. The time bar's Home and ← reach it.
	Seen *time.Time     `json:"seen,omitempty"`
	Gaps []history.Span `json:"gaps"`
}

// Bounds of ?buckets=.
const (
	defaultBuckets = 600
	maxBuckets     = 10_000
)

// bucketed is what the density and the strip draw: a lock's window of
// the history (fitted by ?fit=) and the state before it, in n buckets. The
// window's records are walked, not collected: an hour of a big queue is
// hundreds of thousands of them.
type bucketed struct {
	historyRef
	n      int
	before history.State
}

// walk calls fn with each record of the window.
func (b bucketed) walk(fn func(history.Event)) error {
	return b.store.Walk(b.key, b.from, b.to, func(e history.Event) error {
		fn(e)
		return nil
	})
}

// errFound stops a walk at what it looked for.
var errFound = errors.New("found")

// firstRecord is the first record of key in [from, to], a restatement
// or a change; the zero Event when there is none.
func firstRecord(store history.Source, key string, from, to time.Time) (history.Event, error) {
	var first history.Event
	err := store.Walk(key, from, to, func(e history.Event) error {
		first = e
		return errFound
	})
	if errors.Is(err, errFound) {
		return first, nil
	}
	return first, err
}

// readBucketed reads r's lock and window, ?param= as the number of
// buckets (def when left out, at most most), and the lock as it was at
// from, fitting the window (?fit=).
func (s *Server) readBucketed(r *http.Request, param string, def, most int) (b bucketed, err error) {
	if b, err = s.readBuckets(r, param, def, most); err != nil {
		return b, err
	}
	err = b.fit(r)
	return b, err
}

// readBuckets is readBucketed without the lock at from: the window as
// asked for.
func (s *Server) readBuckets(r *http.Request, param string, def, most int) (b bucketed, err error) {
	if b.historyRef, err = s.historyRef(r); err != nil {
		return b, err
	}
	b.n, err = countParam(r, param, def, most)
	return b, err
}

// fit reads the lock as it was at from (before) and fits the window to its
// history as ?fit= asks (fitWindow).
func (b *bucketed) fit(r *http.Request) (err error) {
	if b.before, err = b.store.At(b.key, b.from); err != nil && !errors.Is(err, history.ErrNoHistory) {
		return err
	}
	b.from, err = fitWindow(r, b.store, b.key, b.before, b.from, b.to)
	return err
}

// service is the id's service as the JSON names it: empty for ZooKeeper.
func (b bucketed) service() string { return b.id.WireService() }

func (s *Server) handleLockDensity(w http.ResponseWriter, r *http.Request) {
	s.answer(w, r, func() (any, error) {
		b, err := s.readBucketed(r, "buckets", defaultBuckets, maxBuckets)
		if err != nil {
			return nil, err
		}
		resp := DensityResponse{From: b.from, To: b.to, Counts: make([]int, b.n)}
		bk := history.NewBuckets(b.from, b.to, b.n)
		var changes []history.Event // the gaps' only: connections and gaps
		last := int64(-1 << 63)
		walked := false
		if err := b.walk(func(e history.Event) {
			if !walked && b.before.Lock == "" && e.Synthetic {
				t := time.UnixMilli(e.Time.UnixMilli()).UTC()
				resp.Seen = &t
			}
			walked = true
			if e.Synthetic {
				return
			}
			last = resp.count(bk, e, last)
			if e.Kind == history.Connection || e.Kind == history.Gap {
				changes = append(changes, e)
			}
		}); err != nil {
			return nil, err
		}
		resp.Service, resp.Path, resp.Gaps = b.service(), b.id.Name, history.Gaps(b.before, changes, b.to)
		return resp, nil
	})
}

// MomentsResponse answers GET /api/v1/lock/history/moments: the window's
// moments (the distinct times of its recorded changes, as the density
// counts them), each with how many changes of each kind it holds and the
// first few nodes they name. It is what the time bar marks, and a moment
// is told in a few names however many changes it holds: a 100,000-node
// queue's watch table read once is 100,000 changes at one moment, which
// GET /api/v1/lock/history lists one by one.
type MomentsResponse struct {
	Service string    `json:"service,omitempty"`
	Path    string    `json:"path"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Moments []Moment  `json:"moments"`
	// Truncated: the window (the page, with ?around=) has more than
	// maxListedMoments moments; the first are listed.
	Truncated bool `json:"truncated,omitempty"`
	// Page is, asked with ?around=, the page of the window the moments
	// are; From and To are then the window's, fitted as the density's.
	Page *MomentsPage `json:"page,omitempty"`
}

// MomentsPage is a page of a window's moments, as the time bar lists them
// (pageAround): whole buckets of the window's density, [From, To) (To is
// past the window's end when the page has its last bucket), and Before,
// how many of the window's moments come before it, so the bar counts a
// moment as k of the window's without the buckets before it.
type MomentsPage struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Before int       `json:"before"`
}

// Moment is one moment of a lock's history.
type Moment struct {
	Time time.Time `json:"time"`
	// Changes is how many changes the moment holds, Kinds how many of
	// each kind, in the order the moment tells them.
	Changes int         `json:"changes"`
	Kinds   []KindCount `json:"kinds"`
	// Nodes are the first nodes the changes name (?names=, 5 unless
	// asked), in order, each once.
	Nodes []string `json:"nodes"`
}

// KindCount is how many changes of a kind a moment holds.
type KindCount struct {
	Kind  history.Kind `json:"kind"`
	Count int          `json:"count"`
}

// Bounds of the moments' answer, of ?names= and of a page's ?most=.
const (
	maxListedMoments = 10_000
	defaultNames     = 5
	maxNames         = 100
	// A page of about 2,000 moments lists a day of changes (past what one
	// answer of the history lists) as quickly as an hour.
	defaultPageMoments = 2000
)

// add counts e in the last moment, or starts one at e's time (in
// milliseconds, as the API writes them).
func (resp *MomentsResponse) add(e history.Event, names int) {
	t := time.UnixMilli(e.Time.UnixMilli()).UTC()
	n := len(resp.Moments)
	if n == 0 || !resp.Moments[n-1].Time.Equal(t) {
		if n == maxListedMoments {
			resp.Truncated = true
			return
		}
		resp.Moments = append(resp.Moments, Moment{Time: t, Kinds: []KindCount{}, Nodes: []string{}})
		n++
	}
	m := &resp.Moments[n-1]
	m.Changes++
	if i := slices.IndexFunc(m.Kinds, func(k KindCount) bool { return k.Kind == e.Kind }); i >= 0 {
		m.Kinds[i].Count++
	} else {
		m.Kinds = append(m.Kinds, KindCount{Kind: e.Kind, Count: 1})
	}
	if e.Node != "" && len(m.Nodes) < names && !slices.Contains(m.Nodes, e.Node) {
		m.Nodes = append(m.Nodes, e.Node)
	}
}

// list adds the moments of key's history in [from, to].
func (resp *MomentsResponse) list(store history.Source, key string, from, to time.Time, names int) error {
	err := store.Walk(key, from, to, func(e history.Event) error {
		if e.Synthetic {
			return nil
		}
		if resp.add(e, names); resp.Truncated {
			return errFound
		}
		return nil
	})
	if errors.Is(err, errFound) {
		return nil
	}
	return err
}

func (s *Server) handleLockMoments(w http.ResponseWriter, r *http.Request) {
	s.answer(w, r, func() (any, error) {
		names, err := countParam(r, "names", defaultNames, maxNames)
		if err != nil {
			return nil, err
		}
		if r.URL.Query().Has("around") {
			return s.momentsPage(r, names)
		}
		h, err := s.historyRef(r)
		if err != nil {
			return nil, err
		}
		resp := MomentsResponse{Service: h.id.WireService(), Path: h.id.Name, From: h.from, To: h.to, Moments: []Moment{}}
		if err := resp.list(h.store, h.key, h.from, h.to, names); err != nil {
			return nil, err
		}
		return resp, nil
	})
}

// momentsPage answers ?around=: the page of the window's moments around
// that time (pageAround), the window read as the density reads it
// (?from=, ?to=, ?buckets=, ?fit=), with at most ?most= moments unless
// the bucket of ?around= alone holds more.
func (s *Server) momentsPage(r *http.Request, names int) (*MomentsResponse, error) {
	most, err := countParam(r, "most", defaultPageMoments, maxListedMoments)
	if err != nil {
		return nil, err
	}
	around, err := parseTime("around", r.URL.Query().Get("around"))
	if err != nil {
		return nil, err
	}
	b, err := s.readBuckets(r, "buckets", defaultBuckets, maxBuckets)
	if err != nil {
		return nil, err
	}
	// The bar asks for its pages in the window the density fitted, so only
	// a page asked for with ?fit= needs the lock at from, which costs a
	// replay of a big queue at each page.
	if r.URL.Query().Has("fit") {
		if err := b.fit(r); err != nil {
			return nil, err
		}
	}
	bk := history.NewBuckets(b.from, b.to, b.n)
	at := around.UnixMilli()
	counts, err := b.countMoments(bk, at, most)
	if err != nil {
		return nil, err
	}
	from, to, before := pageAround(bk, counts, at, most)
	resp := &MomentsResponse{Service: b.service(), Path: b.id.Name, From: b.from, To: b.to, Moments: []Moment{},
		Page: &MomentsPage{From: time.UnixMilli(from).UTC(), To: time.UnixMilli(to).UTC(), Before: before}}
	// The page's walk keeps to the window's bounds, which the density's
	// walk counted within.
	lo, hi := time.UnixMilli(from), time.UnixMilli(to).Add(-time.Nanosecond)
	if lo.Before(b.from) {
		lo = b.from
	}
	if hi.After(b.to) {
		hi = b.to
	}
	if err := resp.list(b.store, b.key, lo, hi, names); err != nil {
		return nil, err
	}
	return resp, nil
}

// countMoments counts the window's moments in its buckets (bk) as the
// density does, up to where the page around at can reach: once the
// buckets from at's on hold more than most moments, the last of them is
// not on the page (pageAround), nor any after it, and the walk stops.
func (b bucketed) countMoments(bk history.Buckets, at int64, most int) ([]int, error) {
	d := DensityResponse{Counts: make([]int, b.n)}
	first, last, after := bk.Of(at), int64(-1<<63), 0
	err := b.store.Walk(b.key, b.from, b.to, func(e history.Event) error {
		if e.Synthetic {
			return nil
		}
		counted := d.Moments
		if last = d.count(bk, e, last); d.Moments > counted && bk.Of(last) >= first {
			if after++; after > most {
				return errFound
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return nil, err
	}
	return d.Counts, nil
}

// countParam reads ?name= as a count from 1 to most, def when left out.
func countParam(r *http.Request, name string, def, most int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, errorf(ErrInvalid, "?%s=%q: want a number from 1 to %d", name, v, most)
	}
	return n, nil
}

// count counts e's time (in milliseconds, as the API writes them) in its
// bucket of the window (bk, the counts' layout), unless it is last, the
// moment counted before: the density counts distinct times. It returns the
// moment counted last.
func (resp *DensityResponse) count(bk history.Buckets, e history.Event, last int64) int64 {
	ms := e.Time.UnixMilli()
	if ms == last || !bk.In(ms) {
		return last
	}
	resp.Counts[bk.Of(ms)]++
	resp.Moments++
	t := time.UnixMilli(ms).UTC()
	if resp.First == nil {
		resp.First = &t
	}
	resp.Last = &t
	return ms
}

// pageAround is the page of a window's moments around the time at (ms)
// that the time bar lists (GET /api/v1/lock/history/moments?around=): the
// run of whole buckets (bk, the density's counts) around at's holding at
// most most moments, at's bucket at least however many it holds. It grows
// a bucket a side at a time, so at is about its middle, and over buckets
// without moments while it can: a step past the page, asked around the
// page's end, reaches the next moment. It answers the page's [from, to) in
// ms and how many moments come before it.
func pageAround(bk history.Buckets, counts []int, at int64, most int) (from, to int64, before int) {
	i := bk.Of(at)
	j, n := i+1, counts[i]
	for grew := true; grew; {
		grew = false
		if i > 0 && n+counts[i-1] <= most {
			i--
			n += counts[i]
			grew = true
		}
		if j < len(counts) && n+counts[j] <= most {
			n += counts[j]
			j++
			grew = true
		}
	}
	for _, c := range counts[:i] {
		before += c
	}
	return bk.Start(i), bk.Start(j), before
}

// StripResponse answers GET /api/v1/lock/strip: the window in ?n= equal
// buckets for the strip chart over the time bar (history.Strip).
type StripResponse struct {
	Service string `json:"service,omitempty"`
	Path    string `json:"path"`
	Cluster string `json:"cluster"`
	history.Strip
}

// Bounds of the strip's ?n=.
const (
	defaultStripBuckets = 120
	maxStripBuckets     = 2000
)

func (s *Server) handleLockStrip(w http.ResponseWriter, r *http.Request) {
	s.answer(w, r, func() (any, error) {
		b, err := s.readBucketed(r, "n", defaultStripBuckets, maxStripBuckets)
		if err != nil {
			return nil, err
		}
		f := history.NewStripFold(b.before, b.from, b.to, b.n)
		if err := b.walk(f.Add); err != nil {
			return nil, err
		}
		return StripResponse{Service: b.service(), Path: b.id.Name, Cluster: history.ClusterOf(b.key), Strip: f.Done()}, nil
	})
}

func (s *Server) handleLockStats(w http.ResponseWriter, r *http.Request) {
	s.answer(w, r, func() (any, error) {
		h, err := s.historyRef(r)
		if err != nil {
			return nil, err
		}
		return h.store.Stats(h.key, h.from, h.to)
	})
}

// handleLockAt answers GET /api/v1/lock?at=: the lock's snapshot as the
// history rebuilds it for that moment.
func (s *Server) handleLockAt(w http.ResponseWriter, r *http.Request) {
	s.answer(w, r, func() (any, error) {
		store, err := s.historyStore()
		if err != nil {
			return nil, err
		}
		_, id, err := s.lockRef(r)
		if err != nil {
			return nil, err
		}
		at, err := parseTime("at", r.URL.Query().Get("at"))
		if err != nil {
			return nil, err
		}
		key, err := historyKey(store, s.cfg.Hub.Latest, id, r.URL.Query())
		if err != nil {
			return nil, err
		}
		st, err := store.At(key, at)
		if errors.Is(err, history.ErrNoHistory) {
			return nil, errorf(ErrNotFound, "%v%s", err, otherClusters(store, id, key))
		} else if err != nil {
			return nil, err
		}
		snap := st.Snapshot()
		if gap, in := gapAt(store, key, st, at); in {
			markUnknown(&snap, gap)
		}
		return wireSnapshot(snap), nil
	})
}

// otherClusters says which other clusters id was recorded on, for an
// answer that found nothing of the one asked for; "" when none.
func otherClusters(store history.Source, id lockqueue.LockID, key string) string {
	locks, err := store.Locks()
	if err != nil {
		return ""
	}
	var others []string
	for _, l := range locks {
		if l.LockID == id && l.Key() != key {
			others = append(others, l.Cluster)
		}
	}
	if len(others) == 0 {
		return ""
	}
	return fmt.Sprintf(" on cluster %s; it was also recorded on %s (ask with ?cluster=)", history.ClusterOf(key), strings.Join(others, ", "))
}

// HistoryLocksResponse answers GET /api/v1/history/locks: each lock once
// per cluster it was recorded on.
type HistoryLocksResponse struct {
	Locks []history.Lock `json:"locks"`
}

// handleHistoryLocks lists the locks with a history, watched now or not:
// the way back to a lock no longer watched.
func (s *Server) handleHistoryLocks(w http.ResponseWriter, r *http.Request) {
	s.answer(w, r, func() (any, error) {
		store, err := s.historyStore()
		if err != nil {
			return nil, err
		}
		ids, err := store.Locks()
		if err != nil {
			return nil, err
		}
		return HistoryLocksResponse{Locks: nonNil(ids)}, nil
	})
}

// handleHistoryStatus answers whether the recorder records and, when not,
// since when and why (history.Status): the lock page asks while its
// history is off, as no change of a quiet lock would tell it.
func (s *Server) handleHistoryStatus(w http.ResponseWriter, r *http.Request) {
	if s.history == nil {
		writeError(w, r, s.log, errorf(ErrNotFound, "this server records no history (serve --history=off)"))
		return
	}
	writeJSON(w, http.StatusOK, s.history.get())
}
