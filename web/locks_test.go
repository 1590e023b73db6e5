package web

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/zookeeper"
)

// fleetLock is one lock of a test fleet, and what it should list as.
type fleetLock struct {
	path             string
	holders, waiters int
	alerts           int
	oldest           time.Time // the first waiter's ctime; zero with none
}

// fleet publishes n go-zookeeper locks, built by lockqueue.Build from
// their children as the watcher reads them: every tenth empty, the others
// held with i%4 waiters, the longer waits the higher i; every seventh held
// one's holder is a persistent node (a persistent-node alert).
func fleet(t *testing.T, e *testEnv, n int, now time.Time) []fleetLock {
	t.Helper()
	var out []fleetLock
	for i := range n {
		f := fleetLock{path: fmt.Sprintf("/fleet/Order-%03d", i)}
		var kids []lockqueue.Child
		if i%10 != 0 {
			f.holders, f.waiters = 1, i%4
			owner := int64(0x100 + i*10)
			if i%7 == 0 {
				owner, f.alerts = 0, 1
			}
			kids = append(kids, lockqueue.Child{Name: gozk(i*10, 0), Czxid: int64(i * 10), Ctime: now.Add(-time.Hour), EphemeralOwner: owner})
			for w := range f.waiters {
				c := now.Add(-time.Duration(i)*time.Minute + time.Duration(w)*time.Second)
				if w == 0 {
					f.oldest = c
				}
				kids = append(kids, lockqueue.Child{Name: gozk(i*10+w+1, int64(w+1)), Czxid: int64(i*10 + w + 1), Ctime: c, EphemeralOwner: int64(0x100 + i*10 + w + 1)})
			}
		}
		s := lockqueue.Build(f.path, kids, lockqueue.Options{})
		s.Connection, s.Exists, s.Revision, s.UpdatedAt = lockqueue.Connected, true, int64(i+1), now
		if got := len(s.Alerts); got != f.alerts {
			t.Fatalf("%s: the fixture has %d alerts (%v), want %d", f.path, got, s.Alerts, f.alerts)
		}
		e.hub.Publish(s)
		out = append(out, f)
	}
	return out
}

// getLocks is GET /api/v1/locks?query, which must answer 200.
func getLocks(t *testing.T, e *testEnv, query string) LocksResponse {
	t.Helper()
	code, _, body := do(t, "GET", e.ts.URL+"/api/v1/locks?"+query, "", nil)
	if code != 200 {
		t.Fatalf("GET /api/v1/locks?%s = %d %s", query, code, body)
	}
	var r LocksResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("GET /api/v1/locks?%s: %v\n%s", query, err, body)
	}
	return r
}

func paths(ls []LockSummary) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Path
	}
	return out
}

// expectOrder is the fleet in the order sort should list it, worked out
// from what each lock is.
func expectOrder(f []fleetLock, sort string) []string {
	f = slices.Clone(f)
	waits := func(a, b fleetLock) int {
		switch {
		case a.oldest.IsZero() && b.oldest.IsZero():
			return 0
		case a.oldest.IsZero():
			return 1
		case b.oldest.IsZero():
			return -1
		}
		return a.oldest.Compare(b.oldest)
	}
	slices.SortStableFunc(f, func(a, b fleetLock) int {
		var c int
		switch sort {
		case SortOldestWait:
			c = waits(a, b)
		case SortQueueLength:
			c = cmp.Compare(b.holders+b.waiters, a.holders+a.waiters)
		case SortAlerts:
			c = cmp.Or(cmp.Compare(b.alerts, a.alerts), waits(a, b))
		}
		return cmp.Or(c, strings.Compare(a.path, b.path))
	})
	out := make([]string, len(f))
	for i, l := range f {
		out[i] = l.path
	}
	return out
}

// The list of 60 locks, paged 7 at a time forwards to the end and back to
// the start, in each order, gives every lock once in that order, with the
// totals of all 60 on every page.
func TestLocksPagesAndSorts(t *testing.T) {
	e := newEnv(t, Config{})
	now := time.Now()
	f := fleet(t, e, 60, now)
	// No discovery: the lock parents found are the locks watched.
	want := LockTotals{Locks: 60, Found: 60}
	for _, l := range f {
		want.WithNodes += min(l.holders+l.waiters, 1)
		want.Held += min(l.holders, 1)
		want.Contended += min(l.waiters, 1)
		want.Alerting += min(l.alerts, 1)
	}
	if want.Held != 54 || want.Contended != 42 || want.Alerting != 8 {
		t.Fatalf("fixture totals %+v, want 54 held, 42 contended, 8 alerting", want)
	}

	all := getLocks(t, e, "")
	if all.Sort != SortPath || all.Limit != defaultLocksLimit || all.Next != "" || all.Prev != "" || all.Matched != 60 {
		t.Errorf("without parameters: sort %q limit %d next %q prev %q matched %d; want path, %d, no pages, 60",
			all.Sort, all.Limit, all.Next, all.Prev, all.Matched, defaultLocksLimit)
	}
	if !slices.Equal(paths(all.Locks), expectOrder(f, SortPath)) {
		t.Errorf("without parameters: %v, want every lock by path", paths(all.Locks))
	}

	for _, sort := range lockSorts {
		t.Run(sort, func(t *testing.T) {
			var got []string
			var pages []LocksResponse
			cursor := ""
			for range 20 {
				r := getLocks(t, e, "limit=7&sort="+sort+"&cursor="+cursor)
				if r.Totals != want {
					t.Fatalf("page %d totals %+v, want %+v", len(pages), r.Totals, want)
				}
				if r.Offset != len(got) || r.Matched != 60 {
					t.Errorf("page %d offset %d matched %d, want %d and 60", len(pages), r.Offset, r.Matched, len(got))
				}
				if (r.Prev == "") != (len(pages) == 0) {
					t.Errorf("page %d prev %q", len(pages), r.Prev)
				}
				got = append(got, paths(r.Locks)...)
				pages = append(pages, r)
				if cursor = r.Next; cursor == "" {
					break
				}
			}
			if w := expectOrder(f, sort); !slices.Equal(got, w) {
				t.Fatalf("paged by 7:\n got %v\nwant %v", got, w)
			}
			if len(pages) != 9 || len(pages[8].Locks) != 4 {
				t.Errorf("%d pages, the last of %d locks; want 9, the last of 4", len(pages), len(pages[len(pages)-1].Locks))
			}
			// Back from the last page, each page as it was going forwards.
			cursor = pages[len(pages)-1].Prev
			for i := len(pages) - 2; i >= 0; i-- {
				r := getLocks(t, e, "limit=7&sort="+sort+"&cursor="+cursor)
				if !slices.Equal(paths(r.Locks), paths(pages[i].Locks)) || r.Offset != pages[i].Offset {
					t.Errorf("back to page %d: %v at %d, want %v at %d", i, paths(r.Locks), r.Offset, paths(pages[i].Locks), pages[i].Offset)
				}
				if (r.Prev == "") != (i == 0) || r.Next == "" {
					t.Errorf("back to page %d: prev %q next %q", i, r.Prev, r.Next)
				}
				cursor = r.Prev
			}
		})
	}
}

// ?q= keeps the locks whose path contains it in any case; ?state= the held,
// contended or alerting ones; the totals stay those of every lock.
func TestLocksFilters(t *testing.T) {
	e := newEnv(t, Config{})
	f := fleet(t, e, 60, time.Now())
	keep := func(p func(fleetLock) bool) []string {
		var out []string
		for _, l := range f {
			if p(l) {
				out = append(out, l.path)
			}
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"q=order-00", keep(func(l fleetLock) bool { return strings.HasPrefix(l.path, "/fleet/Order-00") })},
		{"q=" + url.QueryEscape("ORDER-05"), keep(func(l fleetLock) bool { return strings.HasPrefix(l.path, "/fleet/Order-05") })},
		{"q=/fleet/order-017", []string{"/fleet/Order-017"}},
		{"q=nothing-like-it", nil},
		{"state=held", keep(func(l fleetLock) bool { return l.holders > 0 })},
		{"state=contended", keep(func(l fleetLock) bool { return l.waiters > 0 })},
		{"state=alerting", keep(func(l fleetLock) bool { return l.alerts > 0 })},
		{"state=all", keep(func(fleetLock) bool { return true })},
		{"state=contended&q=order-04", keep(func(l fleetLock) bool { return l.waiters > 0 && strings.HasPrefix(l.path, "/fleet/Order-04") })},
		{"service=zookeeper&state=alerting", keep(func(l fleetLock) bool { return l.alerts > 0 })},
	} {
		t.Run(tc.query, func(t *testing.T) {
			r := getLocks(t, e, tc.query)
			if got := paths(r.Locks); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if r.Matched != len(tc.want) || r.Totals.Locks != 60 || r.Totals.Held != 54 {
				t.Errorf("matched %d, totals %+v; want %d of 60 locks, 54 held", r.Matched, r.Totals, len(tc.want))
			}
		})
	}
}

// Bad parameters are a 400 saying what is wanted, in the API's one error
// body; an unknown service a 404 naming the known ones.
func TestLocksBadParameters(t *testing.T) {
	e := newEnv(t, Config{})
	fleet(t, e, 3, time.Now())
	byPath := getLocks(t, e, "limit=1").Next
	if byPath == "" {
		t.Fatal("no next page of 3 locks by 1")
	}
	for _, tc := range []struct {
		query string
		code  int
		want  string
	}{
		{"sort=name", 400, `{"error":"bad sort \"name\": want one of path, oldest-wait, queue-length, alerts"}`},
		{"state=busy", 400, `{"error":"bad state \"busy\": want one of all, held, contended, alerting"}`},
		{"limit=0", 400, `{"error":"bad limit \"0\": want a whole number from 1 to 5000"}`},
		{"limit=5001", 400, `{"error":"bad limit \"5001\": want a whole number from 1 to 5000"}`},
		{"limit=ten", 400, `{"error":"bad limit \"ten\": want a whole number from 1 to 5000"}`},
		{"cursor=not-a-cursor", 400, `"error":"bad cursor: pass the \"next\" or \"prev\" of an earlier answer as it is`},
		{"cursor=" + byPath + "&sort=alerts", 400, `{"error":"bad cursor: it pages sort=path, not sort=alerts; leave cursor out to start over"}`},
		{"q=" + strings.Repeat("a", maxLocksFilter+1), 400, `"error":"bad q: want a piece of a lock's path`},
		{"q=%ff", 400, `"error":"bad q: want a piece of a lock's path, in UTF-8`},
		{"service=nope", 404, `{"error":"unknown service \"nope\": this server knows zookeeper"}`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, _, body := do(t, "GET", e.ts.URL+"/api/v1/locks?"+tc.query, "", nil)
			if code != tc.code || !strings.Contains(string(body), tc.want) {
				t.Errorf("= %d %s, want %d %s", code, body, tc.code, tc.want)
			}
		})
	}
}

// A summary names the first ten holders and waiters and counts them all;
// an alert names its first ten nodes.
func TestLocksSummaryNamesTheFirstFew(t *testing.T) {
	e := newEnv(t, Config{})
	var kids []lockqueue.Child
	for i := range 25 {
		// Persistent nodes, so the persistent-node alert names all 25.
		kids = append(kids, lockqueue.Child{Name: gozk(i, int64(i)), Czxid: int64(i + 1), Ctime: epoch.Add(time.Duration(i) * time.Second)})
	}
	s := lockqueue.Build("/long", kids, lockqueue.Options{})
	s.Connection = lockqueue.Connected
	if len(s.Alerts) == 0 || len(s.Alerts[0].Nodes) <= lockqueue.SummaryNames {
		t.Fatalf("fixture: alerts %+v, want one naming more than %d nodes", s.Alerts, lockqueue.SummaryNames)
	}
	e.hub.Publish(s)
	r := getLocks(t, e, "")
	if len(r.Locks) != 1 {
		t.Fatalf("locks %+v", r.Locks)
	}
	l := r.Locks[0]
	var want []string
	for i := 1; i <= 10; i++ {
		want = append(want, gozk(i, int64(i)))
	}
	if l.HolderCount != 1 || !slices.Equal(l.Holders, []string{gozk(0, 0)}) || l.WaiterCount != 24 || !slices.Equal(l.Waiters, want) || l.QueueLength != 25 {
		t.Errorf("summary holders %v (%d) waiters %v (%d) queue %d; want 1 holder, the first 10 of 24 waiters, 25", l.Holders, l.HolderCount, l.Waiters, l.WaiterCount, l.QueueLength)
	}
	if n := len(l.Alerts[0].Nodes); n != lockqueue.SummaryNames {
		t.Errorf("the alert names %d nodes, want %d", n, lockqueue.SummaryNames)
	}
	if got, _ := e.hub.Latest("/long"); len(got.Alerts[0].Nodes) != len(s.Alerts[0].Nodes) {
		t.Error("summarising trimmed the snapshot's own alert")
	}
}

// A cursor is a place in the order, not an offset: a lock added before it,
// or the last lock of the page gone, shifts nothing on the next page.
func TestLocksCursorIsAPlace(t *testing.T) {
	e := newEnv(t, Config{})
	fleet(t, e, 20, time.Now())
	first := getLocks(t, e, "limit=5")
	e.hub.Publish(gozkFolder("/fleet/Order-000a", 1).snapshot()) // sorts into the first page
	e.hub.Remove(first.Locks[4].Path)
	next := getLocks(t, e, "limit=5&cursor="+first.Next)
	if want := []string{"/fleet/Order-005", "/fleet/Order-006", "/fleet/Order-007", "/fleet/Order-008", "/fleet/Order-009"}; !slices.Equal(paths(next.Locks), want) {
		t.Errorf("next page %v, want %v", paths(next.Locks), want)
	}
	if next.Offset != 5 || next.Totals.Locks != 20 {
		t.Errorf("offset %d, %d locks; want 5 of 20", next.Offset, next.Totals.Locks)
	}
	// Past the end: an empty page that leads back.
	last := getLocks(t, e, "limit=5&cursor="+encodeCursor(SortPath, false, listPos{key: "/zzz"}))
	if len(last.Locks) != 0 || last.Next != "" || last.Prev == "" {
		t.Errorf("past the end: %v next %q prev %q; want none, no next, a prev", paths(last.Locks), last.Next, last.Prev)
	}
	if back := getLocks(t, e, "limit=5&cursor="+last.Prev); len(back.Locks) != 5 || back.Locks[4].Path != "/fleet/Order-019" {
		t.Errorf("back from past the end: %v", paths(back.Locks))
	}
}

// Watched locks not read yet are listed and counted as pending; a watch
// added through the API is listed at once.
func TestLocksPending(t *testing.T) {
	w := unstartedWatcher(t, "/watched/a", "/watched/b")
	e := newEnv(t, Config{Services: zkRegistry(zookeeper.NewReader(w), nil)})
	fleet(t, e, 3, time.Now())
	r := getLocks(t, e, "")
	if r.Totals.Locks != 5 || r.Totals.Pending != 2 || r.Totals.Held != 2 {
		t.Errorf("totals %+v, want 5 locks, 2 pending, 2 held", r.Totals)
	}
	if code, _, body := do(t, "POST", e.ts.URL+"/api/v1/watch", `{"path":"/watched/c"}`, nil); code != 200 {
		t.Fatalf("watch: %d %s", code, body)
	}
	r = getLocks(t, e, "q=watched")
	if got := paths(r.Locks); !slices.Equal(got, []string{"/watched/a", "/watched/b", "/watched/c"}) || !r.Locks[2].Pending {
		t.Errorf("pending locks %v (%+v), want a, b and c, pending", got, r.Locks)
	}
	// Once read, a lock is listed once, from its snapshot.
	e.hub.Publish(gozkFolder("/watched/a", 2).snapshot())
	r = getLocks(t, e, "q=watched")
	if got := paths(r.Locks); !slices.Equal(got, []string{"/watched/a", "/watched/b", "/watched/c"}) || r.Locks[0].Pending || r.Totals.Pending != 2 {
		t.Errorf("after a read: %v %+v, want a read, b and c pending", got, r.Totals)
	}
}

// Locks published, removed and watched while the list is read: every page
// is whole (run with -race).
func TestLocksWhilePublishing(t *testing.T) {
	w := unstartedWatcher(t)
	e := newEnv(t, Config{Services: zkRegistry(zookeeper.NewReader(w), nil)})
	now := time.Now()
	fleet(t, e, 50, now)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 300 {
			p := fmt.Sprintf("/churn/%03d", i%40)
			if i%3 == 2 {
				e.hub.Remove(p)
				continue
			}
			e.hub.Publish(gozkFolder(p, 1+i%5).snapshot())
			if i%50 == 0 {
				if err := w.AddPath(fmt.Sprintf("/churn/watched-%d", i)); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		r := getLocks(t, e, "sort=queue-length&limit=20")
		if len(r.Locks) != 20 || r.Totals.Locks < 50 || r.Matched != r.Totals.Locks {
			t.Fatalf("a page read while locks change: %d locks, totals %+v, matched %d", len(r.Locks), r.Totals, r.Matched)
		}
	}
}

// Who holds and waits is in each lock's summary as the lane shows it (its
// data when that is short text), and ?q= finds a lock by it.
func TestLocksWho(t *testing.T) {
	e := newEnv(t, Config{})
	now := time.Now()
	for _, l := range []struct{ path, holder, waiter string }{
		{"/who/orders", "orders-worker-A", "orders-worker-B"},
		{"/who/billing", "billing-worker-A", ""},
	} {
		kids := []lockqueue.Child{{Name: gozk(1, 0), Czxid: 1, Ctime: now, EphemeralOwner: 0x101, Data: []byte(l.holder)}}
		if l.waiter != "" {
			kids = append(kids, lockqueue.Child{Name: gozk(2, 1), Czxid: 2, Ctime: now, EphemeralOwner: 0x102, Data: []byte(l.waiter)})
		}
		s := lockqueue.Build(l.path, kids, lockqueue.Options{})
		s.Connection, s.Exists, s.UpdatedAt = lockqueue.Connected, true, now
		e.hub.Publish(s)
	}
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"ORDERS-WORKER-a", []string{"/who/orders"}},
		{"worker-B", []string{"/who/orders"}},
		{"worker-A", []string{"/who/billing", "/who/orders"}},
		{"nobody", nil},
	} {
		r := getLocks(t, e, "q="+url.QueryEscape(tc.q))
		if got := paths(r.Locks); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
			t.Errorf("q=%s: %v, want %v", tc.q, got, tc.want)
		}
	}
	r := getLocks(t, e, "q=orders-worker-A")
	if len(r.Locks) != 1 || !slices.Equal(r.Locks[0].HoldersWho, []string{"orders-worker-A"}) ||
		!slices.Equal(r.Locks[0].WaitersWho, []string{"orders-worker-B"}) {
		t.Errorf("who: %+v", r.Locks)
	}
}
