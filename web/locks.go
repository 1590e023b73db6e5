package web

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// The list of locks, for GET /api/v1/locks and the dashboard. A server may
// watch 100,000 locks, so a request is one pass over the hub's small
// per-lock summaries (kept up to date as snapshots are published), keeping
// the page it asks for in a bounded heap: no snapshot is copied and nothing
// is allocated per lock.

// Lock list sorts (?sort=). Each orders by its own keys, then by the lock's
// key (service:path, the path alone for ZooKeeper).
const (
	// SortPath is by lock key, the order the list always had.
	SortPath = "path"
	// SortOldestWait puts the longest wait first; locks nobody waits for
	// come last.
	SortOldestWait = "oldest-wait"
	// SortQueueLength puts the longest queue (holders and waiters) first.
	SortQueueLength = "queue-length"
	// SortAlerts puts the locks with the most alerts first, then the
	// longest waits: the locks that need a look, the dashboard's order.
	SortAlerts = "alerts"
)

var lockSorts = []string{SortPath, SortOldestWait, SortQueueLength, SortAlerts}

// Lock list states (?state=).
const (
	StateAll       = "all"
	StateHeld      = "held"
	StateContended = "contended"
	StateAlerting  = "alerting"
)

var lockStates = []string{StateAll, StateHeld, StateContended, StateAlerting}

const (
	// defaultLocksLimit is GET /api/v1/locks's page without ?limit=: every
	// lock of a small server, as the list always was.
	defaultLocksLimit = 500
	// maxLocksLimit bounds ?limit=.
	maxLocksLimit = 5000
	// maxLocksFilter bounds ?q=.
	maxLocksFilter = 256
)

// locksQuery is one request for a page of locks.
type locksQuery struct {
	sort  string
	limit int
	// after and before are the cursor's position: the page starts after
	// it, or ends before it (a previous page). At most one is set.
	after, before *listPos
	// q is ?q= as given; state one of lockStates; service "" for every
	// service, or the registry's name of one.
	q, state, service string
}

// listPos is a lock's place in a sort: its sort keys, then its key.
type listPos struct {
	a, b int64
	key  string
}

func (p listPos) cmp(o listPos) int {
	if c := cmp.Compare(p.a, o.a); c != 0 {
		return c
	}
	if c := cmp.Compare(p.b, o.b); c != 0 {
		return c
	}
	return strings.Compare(p.key, o.key)
}

// cursorWire is a cursor before it is made opaque.
type cursorWire struct {
	Sort string `json:"s"`
	// Before: the page ends before the position (previous); else it
	// starts after it.
	Before bool   `json:"p,omitempty"`
	A      int64  `json:"a,omitempty"`
	B      int64  `json:"b,omitempty"`
	Key    string `json:"k"`
}

func encodeCursor(sort string, before bool, p listPos) string {
	b, _ := json.Marshal(cursorWire{Sort: sort, Before: before, A: p.a, B: p.b, Key: p.key})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursorWire, error) {
	var c cursorWire
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Sort == "" {
		return c, errorf(ErrInvalid, "bad cursor: pass the \"next\" or \"prev\" of an earlier answer as it is, or leave cursor out for the first page")
	}
	return c, nil
}

// parseLocksQuery reads ?sort=, ?limit=, ?cursor=, ?q=, ?state= and
// ?service=; defSort and defLimit apply when they are left out.
func parseLocksQuery(v url.Values, reg *lockservice.Registry, defSort string, defLimit int) (locksQuery, error) {
	q := locksQuery{sort: cmp.Or(v.Get("sort"), defSort), limit: defLimit, state: cmp.Or(v.Get("state"), StateAll), q: v.Get("q")}
	if !slices.Contains(lockSorts, q.sort) {
		return q, errorf(ErrInvalid, "bad sort %q: want one of %s", q.sort, strings.Join(lockSorts, ", "))
	}
	if !slices.Contains(lockStates, q.state) {
		return q, errorf(ErrInvalid, "bad state %q: want one of %s", q.state, strings.Join(lockStates, ", "))
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLocksLimit {
			return q, errorf(ErrInvalid, "bad limit %q: want a whole number from 1 to %d", s, maxLocksLimit)
		}
		q.limit = n
	}
	if len(q.q) > maxLocksFilter || !utf8.ValidString(q.q) {
		return q, errorf(ErrInvalid, "bad q: want a piece of a lock's path, in UTF-8, at most %d bytes", maxLocksFilter)
	}
	if name := v.Get("service"); name != "" {
		svc, err := serviceNamed(reg, name)
		if err != nil {
			return q, err
		}
		q.service = svc.Name
	}
	if s := v.Get("cursor"); s != "" {
		c, err := decodeCursor(s)
		if err != nil {
			return q, err
		}
		if c.Sort != q.sort {
			return q, errorf(ErrInvalid, "bad cursor: it pages sort=%s, not sort=%s; leave cursor out to start over", c.Sort, q.sort)
		}
		p := &listPos{a: c.A, b: c.B, key: c.Key}
		if c.Before {
			q.before = p
		} else {
			q.after = p
		}
	}
	return q, nil
}

// pos is where l sorts.
func (q *locksQuery) pos(l listedLock) listPos {
	p := listPos{key: l.Key()}
	oldest := int64(math.MaxInt64) // nobody waits: last
	if !l.OldestWaiter.IsZero() {
		oldest = l.OldestWaiter.UnixNano()
	}
	switch q.sort {
	case SortOldestWait:
		p.a = oldest
	case SortQueueLength:
		p.a = -int64(l.HolderCount + l.WaiterCount)
	case SortAlerts:
		p.a, p.b = -int64(len(l.Alerts)), oldest
	}
	return p
}

// matches reports whether l is among what q asks for, its service aside.
func (q *locksQuery) matches(l listedLock) bool {
	switch q.state {
	case StateHeld:
		if !l.Held() {
			return false
		}
	case StateContended:
		if !l.Contended() {
			return false
		}
	case StateAlerting:
		if !l.Alerting() {
			return false
		}
	}
	return q.q == "" || containsFold(l.Path, q.q) || namedBy(l.Holders, q.q) || namedBy(l.Waiters, q.q)
}

// namedBy reports whether one of the nodes is known by a name containing
// sub: who it is (its label or data), or its client.
func namedBy(ns []lockqueue.NodeName, sub string) bool {
	return slices.ContainsFunc(ns, func(n lockqueue.NodeName) bool {
		return containsFold(n.Who, sub) || containsFold(n.Client, sub)
	})
}

// containsFold reports whether s contains sub, ignoring case (Unicode
// simple folding, as strings.EqualFold), without allocating for ASCII.
func containsFold(s, sub string) bool {
	if len(sub) > len(s) {
		return false
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	if !isASCII(s) || !isASCII(sub) {
		// A folded rune may differ in length (K and the Kelvin sign).
		return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// listedLock is a lock in the list: its summary, or a watched lock whose
// first read has not landed (Pending, an empty summary).
type listedLock struct {
	*lockqueue.Summary
	Pending bool
}

// LockTotals count every watched lock of the services asked for, whatever
// the page, the filter and the state.
type LockTotals struct {
	Locks int `json:"locks"`
	// Found are the lock parents found: the locks watched and the empty
	// folders --watch-under discovery found, where a lock may be taken
	// (lockservice.EmptyFinder). A watched lock that lost its last node
	// stays watched and counted; an empty folder is watched, and listed,
	// once a lock is taken in it.
	Found int `json:"found"`
	// WithNodes have lock nodes now: a holder or a waiter.
	WithNodes int `json:"withNodes"`
	// Held have a holder; Contended a waiter; Alerting an alert.
	Held      int `json:"held"`
	Contended int `json:"contended"`
	Alerting  int `json:"alerting"`
	// Pending are watched but not read yet.
	Pending int `json:"pending"`
}

// locksPage is one page of the list.
type locksPage struct {
	Rows   []listedLock
	Totals LockTotals
	// Matched counts the locks the filter and the state select; Offset is
	// how many of them come before the page.
	Matched, Offset int
	// Next and Prev are the cursors of the pages after and before, ""
	// when there is none.
	Next, Prev string
	// DefaultConns are the connection states of the default service's
	// locks (ZooKeeper's: the dashboard's ensemble line).
	DefaultConns map[lockqueue.Connection]bool
	// Across are the alerts that span several locks (a deadlock through
	// them), each once, whichever lock it was read from.
	Across []AcrossAlert
}

// AcrossAlert is an alert that spans several locks, as GET /api/v1/locks
// and the dashboard list it: once, with every lock it names.
type AcrossAlert struct {
	Kind    string             `json:"kind"`
	Message string             `json:"message"`
	Locks   []lockqueue.LockID `json:"locks"`
}

// noteAcross adds l's alerts that span several locks, unless listed: one
// cycle is one kind through one set of locks, however each lock words it
// (PostgreSQL's wait-cycle starts from the lock's own session).
func (page *locksPage) noteAcross(l listedLock) {
	for _, a := range l.Alerts {
		if len(a.Locks) == 0 {
			continue
		}
		locks := append([]lockqueue.LockID{l.Lock()}, a.Locks...)
		slices.SortFunc(locks, func(x, y lockqueue.LockID) int { return strings.Compare(x.Key(), y.Key()) })
		if slices.ContainsFunc(page.Across, func(x AcrossAlert) bool { return x.Kind == a.Kind && slices.Equal(x.Locks, locks) }) {
			continue
		}
		page.Across = append(page.Across, AcrossAlert{Kind: a.Kind, Message: a.Message, Locks: locks})
	}
}

// summaryBufs are the slices a page is chosen from, reused: 100,000
// pointers is 800 KB a request otherwise.
var summaryBufs = sync.Pool{New: func() any { return new([]*lockqueue.Summary) }}

// Summaries is what the list reads from the hub.
type Summaries interface {
	Summaries(buf []*lockqueue.Summary) []*lockqueue.Summary
	Has(key string) bool
}

// listLocks chooses the page q asks for among the hub's locks and the
// watched locks not read yet.
func listLocks(h Summaries, pend *pendingLocks, reg *lockservice.Registry, q locksQuery, now time.Time) locksPage {
	bp := summaryBufs.Get().(*[]*lockqueue.Summary)
	sums := h.Summaries((*bp)[:0])
	defer func() {
		clear(sums)
		*bp = sums[:0]
		summaryBufs.Put(bp)
	}()
	page := locksPage{DefaultConns: map[lockqueue.Connection]bool{}}
	top := q.candidates()
	beyond := 0 // matched locks on the cursor's far side
	visit := func(l listedLock) {
		if q.service != "" && l.ServiceName() != q.service {
			return
		}
		page.count(l)
		if !q.matches(l) {
			return
		}
		page.Matched++
		p := q.pos(l)
		if q.beyond(p) {
			beyond++
			return
		}
		top.push(heapItem{pos: p, lock: l})
	}
	for _, s := range sums {
		visit(listedLock{Summary: s})
	}
	for _, s := range pend.get(h, reg, now) {
		visit(listedLock{Summary: s, Pending: true})
	}
	page.Totals.Found = page.Totals.Locks + emptyFolders(reg, q.service)
	items := top.sorted()
	more := len(items) > q.limit
	if more {
		items = items[:q.limit]
	}
	if q.before != nil {
		// Nearest the cursor first: turn back to the sort's order.
		slices.Reverse(items)
	}
	page.Rows = make([]listedLock, len(items))
	for i, it := range items {
		page.Rows[i] = it.lock
	}
	page.setCursors(&q, items, beyond, more)
	return page
}

// candidates is the heap of the page's candidates: the limit+1 nearest the
// cursor on its side, the extra one telling that another page follows.
func (q *locksQuery) candidates() boundedHeap {
	backward := q.before != nil
	return boundedHeap{max: q.limit + 1, far: func(a, b heapItem) bool {
		if backward {
			return a.pos.cmp(b.pos) < 0
		}
		return a.pos.cmp(b.pos) > 0
	}}
}

// beyond says whether p is on the cursor's far side: not on this page
// nor on any after it, walking away from the cursor.
func (q *locksQuery) beyond(p listPos) bool {
	return q.after != nil && p.cmp(*q.after) <= 0 || q.before != nil && p.cmp(*q.before) >= 0
}

// count adds l to the page's totals, which count every lock of the
// services asked for, whatever the filter and the state.
func (page *locksPage) count(l listedLock) {
	t := &page.Totals
	t.Locks++
	if l.Pending {
		t.Pending++
		return
	}
	if l.Held() || l.Contended() {
		t.WithNodes++
	}
	if l.Held() {
		t.Held++
	}
	if l.Contended() {
		t.Contended++
	}
	if l.Alerting() {
		t.Alerting++
		page.noteAcross(l)
	}
	if lockservice.IsDefault(l.Service) {
		page.DefaultConns[l.Connection] = true
	}
}

// emptyFolders counts the empty folders the discovery of the services
// asked for (service, or every one) found.
func emptyFolders(reg *lockservice.Registry, service string) int {
	if reg == nil {
		return 0
	}
	n := 0
	for _, svc := range reg.All() {
		if f, ok := svc.Reader.(lockservice.EmptyFinder); ok && (service == "" || svc.Name == service) {
			n += f.EmptyFolders()
		}
	}
	return n
}

// setCursors sets the page's offset and its cursors to the pages before
// and after it, from its items (in the sort's order), the matched locks
// beyond the cursor and whether more came than the page holds.
func (page *locksPage) setCursors(q *locksQuery, items []heapItem, beyond int, more bool) {
	hasPrev, hasNext := beyond > 0, more
	page.Offset = beyond
	if q.before != nil {
		hasPrev, hasNext = more, beyond > 0
		page.Offset = page.Matched - beyond - len(items)
	}
	switch {
	case len(items) > 0:
		if hasNext {
			page.Next = encodeCursor(q.sort, false, items[len(items)-1].pos)
		}
		if hasPrev {
			page.Prev = encodeCursor(q.sort, true, items[0].pos)
		}
	case q.after != nil && hasPrev:
		// Past the end (the locks after the cursor went): back from here.
		page.Prev = encodeCursor(q.sort, true, *q.after)
	case q.before != nil && hasNext:
		page.Next = encodeCursor(q.sort, false, listPos{a: math.MinInt64, b: math.MinInt64})
	}
}

type heapItem struct {
	pos  listPos
	lock listedLock
}

// boundedHeap keeps the max items nearest the start: a heap with the
// farthest kept item on top, which a nearer one replaces.
type boundedHeap struct {
	max   int
	far   func(a, b heapItem) bool // a is farther than b
	items []heapItem
}

func (h *boundedHeap) push(it heapItem) {
	if len(h.items) < h.max {
		h.items = append(h.items, it)
		h.up(len(h.items) - 1)
		return
	}
	if !h.far(h.items[0], it) {
		return
	}
	h.items[0] = it
	h.down(0)
}

func (h *boundedHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.far(h.items[i], h.items[p]) {
			return
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *boundedHeap) down(i int) {
	n := len(h.items)
	for {
		l, far := 2*i+1, i
		if l < n && h.far(h.items[l], h.items[far]) {
			far = l
		}
		if r := l + 1; r < n && h.far(h.items[r], h.items[far]) {
			far = r
		}
		if far == i {
			return
		}
		h.items[i], h.items[far] = h.items[far], h.items[i]
		i = far
	}
}

// sorted empties the heap, nearest first.
func (h *boundedHeap) sorted() []heapItem {
	out := make([]heapItem, len(h.items))
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = h.items[0]
		last := len(h.items) - 1
		h.items[0] = h.items[last]
		h.items = h.items[:last]
		h.down(0)
	}
	return out
}

// pendingTTL is how long the list of watched locks not read yet is reused.
// Finding them walks every reader's watched list, 100,000 names on a
// fleet, which a dashboard refreshing every two seconds per viewer must
// not do each time; a lock read meanwhile is dropped from it at once, and
// a watch added or removed through this server starts it afresh.
const pendingTTL = time.Second

// pendingLocks are the locks a service's reader follows that have no
// snapshot yet, found at most once per pendingTTL.
type pendingLocks struct {
	mu   sync.Mutex
	at   time.Time
	list []*lockqueue.Summary
}

// forget makes the next get find them afresh.
func (p *pendingLocks) forget() {
	p.mu.Lock()
	p.at = time.Time{}
	p.mu.Unlock()
}

// get returns the pending locks, without those read since they were found.
func (p *pendingLocks) get(h Summaries, reg *lockservice.Registry, now time.Time) []*lockqueue.Summary {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A list handed out is never changed: requests read it unlocked.
	if p.at.IsZero() || now.Sub(p.at) >= pendingTTL || now.Before(p.at) {
		p.list, p.at = nil, now
		for _, svc := range reg.All() {
			if svc.Reader == nil {
				continue
			}
			for _, name := range svc.Reader.Watched() {
				id := lockqueue.LockID{Service: svc.Name, Name: name}
				if !h.Has(id.Key()) {
					snap := &lockqueue.Snapshot{Path: name, Service: id.WireService()}
					p.list = append(p.list, &lockqueue.Summary{Snapshot: snap})
				}
			}
		}
	}
	if slices.ContainsFunc(p.list, func(s *lockqueue.Summary) bool { return h.Has(s.Key()) }) {
		p.list = slices.DeleteFunc(slices.Clone(p.list), func(s *lockqueue.Summary) bool { return h.Has(s.Key()) })
	}
	return p.list
}
