package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// historyEnv serves the fixture service with a real history store that
// recorded two hand-offs of the fixture's lock "orders", one a second.
func historyEnv(t *testing.T) *testEnv {
	t.Helper()
	e, _ := historyEnvStore(t)
	return e
}

// historyEnvStore is historyEnv and its store, for a test that records more.
func historyEnvStore(t *testing.T) (*testEnv, *history.Store) {
	t.Helper()
	store, err := history.Open(history.Options{Dir: t.TempDir(), Now: func() time.Time { return fixtureEpoch }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	reg := zkRegistry(nil, nil)
	e := newEnv(t, Config{Services: reg, History: store})
	recordFixture(t, store, reg, e.hub)
	return e, store
}

// The time bar reaches the lock's first sight: a live window (?fit=history)
// that began before the history starts at the first sight, which the
// density names (seen) apart from the moments it counts; a lock that has
// not changed since fills the window from it, on the strip too. A window
// that knew the lock at its start keeps its from and has no first sight.
func TestHistoryFromTheFirstSight(t *testing.T) {
	e, store := historyEnvStore(t)
	// quiet: read once at the epoch (a holding, b and c waiting), never changed.
	if _, err := store.Record((&fixtureReader{}).queue("quiet", 0)); err != nil {
		t.Fatal(err)
	}
	ms := func(d time.Duration) string { return fmt.Sprint(fixtureEpoch.Add(d).UnixMilli()) }
	ask := func(endpoint, lock string, kv ...string) []byte {
		t.Helper()
		q := url.Values{"service": {fixtureName}, "path": {lock}}
		for i := 0; i < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		code, b := historyGet(t, e, endpoint, q)
		if code != http.StatusOK {
			t.Fatalf("%s?%s: status %d: %s", endpoint, q.Encode(), code, b)
		}
		return b
	}
	density := func(lock string, kv ...string) DensityResponse {
		t.Helper()
		var d DensityResponse
		if err := json.Unmarshal(ask("/api/v1/lock/history/density", lock, kv...), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	at := func(p *time.Time) string {
		if p == nil {
			return "none"
		}
		return p.Sub(fixtureEpoch).String()
	}

	for _, tc := range []struct {
		lock, from, fit       string
		wantFrom, seen, first string
		moments               int
	}{
		{"orders", ms(-time.Hour), "history", "0s", "0s", "1s", 2},
		{"orders", ms(-time.Hour), "", "-1h0m0s", "0s", "1s", 2},
		{"orders", ms(0), "history", "0s", "none", "1s", 2},
		{"orders", ms(500 * time.Millisecond), "history", "500ms", "none", "1s", 2},
		{"quiet", ms(-time.Hour), "history", "0s", "0s", "none", 0},
	} {
		kv := []string{"from", tc.from, "to", ms(10 * time.Minute), "buckets", "10"}
		if tc.fit != "" {
			kv = append(kv, "fit", tc.fit)
		}
		d := density(tc.lock, kv...)
		if got := d.From.Sub(fixtureEpoch).String(); got != tc.wantFrom || at(d.Seen) != tc.seen || at(d.First) != tc.first || d.Moments != tc.moments {
			t.Errorf("%s from %s fit %q: from %s, seen %s, first %s, %d moments; want from %s, seen %s, first %s, %d moments",
				tc.lock, tc.from, tc.fit, got, at(d.Seen), at(d.First), d.Moments, tc.wantFrom, tc.seen, tc.first, tc.moments)
		}
	}

	// The quiet lock fills the strip of its fitted window from its first sight.
	var strip StripResponse
	if err := json.Unmarshal(ask("/api/v1/lock/strip", "quiet", "from", ms(-time.Hour), "to", ms(10*time.Minute), "n", "4", "fit", "history"), &strip); err != nil {
		t.Fatal(err)
	}
	for i, b := range strip.Buckets {
		if b.Holders != 1 || b.Waiters != 2 {
			t.Errorf("quiet's strip from %s: bucket %d of %d is %+v, want a holding and b, c waiting", strip.From.Sub(fixtureEpoch), i, len(strip.Buckets), b)
		}
	}
}

func historyGet(t *testing.T, e *testEnv, endpoint string, q url.Values) (int, []byte) {
	t.Helper()
	resp, err := http.Get(e.ts.URL + endpoint + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestHistoryAPI(t *testing.T) {
	e := historyEnv(t)
	ms := func(d time.Duration) string { return fmt.Sprint(fixtureEpoch.Add(d).UnixMilli()) }
	orders := url.Values{"service": {fixtureName}, "path": {"orders"}}
	with := func(kv ...string) url.Values {
		q := url.Values{}
		for k, v := range orders {
			q[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return q
	}

	t.Run("events", func(t *testing.T) {
		code, b := historyGet(t, e, "/api/v1/lock/history", with("from", ms(0), "to", fixtureEpoch.Add(time.Minute).Format(time.RFC3339)))
		var resp HistoryResponse
		if code != http.StatusOK || json.Unmarshal(b, &resp) != nil {
			t.Fatalf("status %d: %s", code, b)
		}
		var got []string
		for _, ev := range resp.Events {
			if ev.Kind == history.Left || ev.Kind == history.Acquired {
				got = append(got, string(ev.Kind)+" "+ev.Node+" "+string(ev.How))
			}
		}
		want := []string{"left a released", "acquired b ", "left b released", "acquired c "}
		if resp.Service != fixtureName || resp.Path != "orders" || !slices.Equal(got, want) {
			t.Errorf("service %q path %q events %q, want fixture, orders, %q", resp.Service, resp.Path, got, want)
		}
		// a held from first sight (the epoch) to 1s; b waited 1s and held
		// 1s; c waited 2s and holds until the window's end, 1 minute.
		var lives []string
		for _, l := range resp.Nodes {
			lives = append(lives, fmt.Sprintf("%s wait %gs hold %gs %s", l.Node, l.Wait, l.Hold, l.How))
		}
		if want := []string{"a wait 0s hold 1s released", "b wait 1s hold 1s released", "c wait 2s hold 58s "}; !slices.Equal(lives, want) {
			t.Errorf("nodes %q, want %q", lives, want)
		}
	})

	t.Run("nodes of the first sight", func(t *testing.T) {
		// The default window (the hour up to to) and one from before the
		// history began know nothing of the lock at their start: the
		// nodes there at its first sight are in nodes all the same, a
		// holding from it (when it acquired is not known), b and c
		// waiting since they queued.
		for _, q := range []url.Values{
			with("to", ms(time.Minute)),
			with("from", ms(-10*time.Minute), "to", ms(time.Minute)),
		} {
			code, b := historyGet(t, e, "/api/v1/lock/history", q)
			var resp HistoryResponse
			if code != http.StatusOK || json.Unmarshal(b, &resp) != nil {
				t.Fatalf("%s: status %d: %s", q.Encode(), code, b)
			}
			var lives []string
			for _, l := range resp.Nodes {
				lives = append(lives, fmt.Sprintf("%s wait %gs hold %gs %s unknown %t", l.Node, l.Wait, l.Hold, l.How, l.WaitUnknown))
			}
			want := []string{"a wait 0s hold 1s released unknown true", "b wait 1s hold 1s released unknown false", "c wait 2s hold 58s  unknown false"}
			if !slices.Equal(lives, want) {
				t.Errorf("%s: nodes %q, want %q", q.Encode(), lives, want)
			}
			// The events are still the changes: the first sight's nodes
			// were not queued then, they were there.
			if len(resp.Events) == 0 || slices.ContainsFunc(resp.Events, func(ev history.Event) bool { return ev.Kind == history.Queued }) {
				t.Errorf("%s: events %+v, want the hand-offs, no restatement", q.Encode(), resp.Events)
			}
		}
	})

	t.Run("density", func(t *testing.T) {
		// The hand-offs are the changes, at 1s and 2s (the first sight is a
		// keyframe); a change at the window's end is in the last bucket.
		for _, tc := range []struct {
			to      time.Duration
			buckets string
			want    []int
			last    time.Duration
		}{
			{4 * time.Second, "4", []int{0, 1, 1, 0}, 2 * time.Second},
			{2 * time.Second, "2", []int{0, 2}, 2 * time.Second},
			{1500 * time.Millisecond, "3", []int{0, 0, 1}, time.Second},
		} {
			code, b := historyGet(t, e, "/api/v1/lock/history/density", with("from", ms(0), "to", ms(tc.to), "buckets", tc.buckets))
			var resp DensityResponse
			if code != http.StatusOK || json.Unmarshal(b, &resp) != nil {
				t.Fatalf("status %d: %s", code, b)
			}
			wantLast := fixtureEpoch.Add(tc.last)
			if !slices.Equal(resp.Counts, tc.want) || resp.Moments != sum(tc.want) || resp.First == nil || !resp.First.Equal(fixtureEpoch.Add(time.Second)) ||
				resp.Last == nil || !resp.Last.Equal(wantLast) {
				t.Errorf("to %s in %s buckets: counts %v, %d moments, first %v, last %v; want %v, first 1s, last %s",
					tc.to, tc.buckets, resp.Counts, resp.Moments, resp.First, resp.Last, tc.want, wantLast.Sub(fixtureEpoch))
			}
		}
		for _, bad := range []string{"0", "x", "10001"} {
			if code, b := historyGet(t, e, "/api/v1/lock/history/density", with("buckets", bad)); code != http.StatusBadRequest {
				t.Errorf("?buckets=%s: status %d (%s), want 400", bad, code, b)
			}
		}
		// ?fit=history starts the window a second before the lock's first
		// change (1s) when the history did not know the lock at from; a
		// window it knew from its start keeps its from.
		for _, tc := range []struct {
			from, want time.Duration
		}{
			{-time.Hour, 0},
			{500 * time.Millisecond, 500 * time.Millisecond},
		} {
			for _, ep := range []string{"/api/v1/lock/history/density", "/api/v1/lock/strip"} {
				code, b := historyGet(t, e, ep, with("from", ms(tc.from), "to", ms(4*time.Second), "fit", "history"))
				var resp struct{ From time.Time }
				if code != http.StatusOK || json.Unmarshal(b, &resp) != nil {
					t.Fatalf("%s: status %d: %s", ep, code, b)
				}
				if want := fixtureEpoch.Add(tc.want); !resp.From.Equal(want) {
					t.Errorf("%s from %s, fit: from %s, want %s", ep, tc.from, resp.From.Sub(fixtureEpoch), tc.want)
				}
			}
		}
		if code, b := historyGet(t, e, "/api/v1/lock/history/density", with("fit", "all")); code != http.StatusBadRequest || !strings.Contains(string(b), "fit") {
			t.Errorf("?fit=all: status %d (%s), want 400 naming fit", code, b)
		}
	})

	t.Run("moments", func(t *testing.T) {
		// The hand-offs are the moments, at 1s and 2s, each the events
		// GET /api/v1/lock/history lists at that time, counted by kind.
		_, b := historyGet(t, e, "/api/v1/lock/history", with("from", ms(0), "to", ms(time.Minute)))
		var events HistoryResponse
		if err := json.Unmarshal(b, &events); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			names     string
			wantNodes int
		}{{"", defaultNames}, {"1", 1}, {"100", 100}} {
			q := with("from", ms(0), "to", ms(time.Minute))
			if tc.names != "" {
				q.Set("names", tc.names)
			}
			code, b := historyGet(t, e, "/api/v1/lock/history/moments", q)
			var resp MomentsResponse
			if code != http.StatusOK || json.Unmarshal(b, &resp) != nil {
				t.Fatalf("status %d: %s", code, b)
			}
			if resp.Service != fixtureName || resp.Path != "orders" || len(resp.Moments) != 2 || resp.Truncated {
				t.Fatalf("?names=%s: %s: want the fixture's orders, two moments", tc.names, b)
			}
			for i, m := range resp.Moments {
				at := fixtureEpoch.Add(time.Duration(i+1) * time.Second)
				var kinds []KindCount
				var nodes []string
				changes := 0
				for _, ev := range events.Events {
					if !ev.Time.Equal(at) {
						continue
					}
					changes++
					if k := slices.IndexFunc(kinds, func(k KindCount) bool { return k.Kind == ev.Kind }); k >= 0 {
						kinds[k].Count++
					} else {
						kinds = append(kinds, KindCount{Kind: ev.Kind, Count: 1})
					}
					if ev.Node != "" && !slices.Contains(nodes, ev.Node) {
						nodes = append(nodes, ev.Node)
					}
				}
				nodes = nodes[:min(len(nodes), tc.wantNodes)]
				if !m.Time.Equal(at) || m.Changes != changes || !slices.Equal(m.Kinds, kinds) || !slices.Equal(m.Nodes, nodes) || changes < 2 {
					t.Errorf("?names=%s: moment %d: %+v; want at %s, %d changes %+v naming %q", tc.names, i, m, at, changes, kinds, nodes)
				}
			}
		}
		for _, bad := range []string{"0", "101", "x"} {
			if code, b := historyGet(t, e, "/api/v1/lock/history/moments", with("names", bad)); code != http.StatusBadRequest || !strings.Contains(string(b), "names") {
				t.Errorf("?names=%s: status %d (%s), want 400 naming names", bad, code, b)
			}
		}
	})

	t.Run("strip", func(t *testing.T) {
		// a holds from the start, b and c wait; a hands off to b at 1s,
		// b to c at 2s.
		code, b := historyGet(t, e, "/api/v1/lock/strip", with("from", ms(0), "to", ms(4*time.Second), "n", "4"))
		var resp StripResponse
		if code != http.StatusOK || json.Unmarshal(b, &resp) != nil {
			t.Fatalf("status %d: %s", code, b)
		}
		want := []history.Bucket{{Holders: 1, Waiters: 2, MaxWait: 1}, {Holders: 1, Waiters: 2, MaxWait: 2}, {Holders: 1, Waiters: 1, MaxWait: 2}, {Holders: 1}}
		if resp.Service != fixtureName || resp.Path != "orders" || !slices.Equal(resp.Buckets, want) || resp.MaxQueue != 3 || resp.MaxWait != 2 {
			t.Errorf("service %q path %q buckets %v max queue %d wait %v; want fixture, orders, %v, 3, 2", resp.Service, resp.Path, resp.Buckets, resp.MaxQueue, resp.MaxWait, want)
		}
		for _, bad := range []string{"0", "x", "2001"} {
			if code, b := historyGet(t, e, "/api/v1/lock/strip", with("n", bad)); code != http.StatusBadRequest {
				t.Errorf("?n=%s: status %d (%s), want 400", bad, code, b)
			}
		}
	})

	t.Run("at", func(t *testing.T) {
		for _, tc := range []struct {
			at      time.Duration
			holders []string
			waiters []string
		}{
			{500 * time.Millisecond, []string{"a"}, []string{"b", "c"}},
			{1500 * time.Millisecond, []string{"b"}, []string{"c"}},
			{time.Hour, []string{"c"}, nil},
		} {
			code, b := historyGet(t, e, "/api/v1/lock", with("at", ms(tc.at)))
			var snap lockqueue.Snapshot
			if code != http.StatusOK || json.Unmarshal(b, &snap) != nil {
				t.Fatalf("at %v: status %d: %s", tc.at, code, b)
			}
			if !slices.Equal(snap.Holders(), tc.holders) || !slices.Equal(snap.Waiters(), tc.waiters) || snap.Service != fixtureName {
				t.Errorf("at %v: holders %q waiters %q service %q, want %q %q fixture", tc.at, snap.Holders(), snap.Waiters(), snap.Service, tc.holders, tc.waiters)
			}
		}
	})

	t.Run("stats", func(t *testing.T) {
		code, b := historyGet(t, e, "/api/v1/lock/stats", with("from", ms(0), "to", ms(time.Minute)))
		var st history.Stats
		if code != http.StatusOK || json.Unmarshal(b, &st) != nil {
			t.Fatalf("status %d: %s", code, b)
		}
		// b and c queued at the epoch (their ctime) and acquired at 1s and 2s.
		if st.Acquisitions != 2 || st.Wait.Max != 2 || st.Wait.P50 != 1 || st.Hold.Count != 2 {
			t.Errorf("stats %+v: want 2 acquisitions, waits 1s and 2s, 2 holds", st)
		}
	})

	for _, tc := range []struct {
		name     string
		endpoint string
		q        url.Values
		status   int
	}{
		{"bad time", "/api/v1/lock", with("at", "yesterday"), http.StatusBadRequest},
		{"from after to", "/api/v1/lock/history", with("from", ms(time.Minute), "to", ms(0)), http.StatusBadRequest},
		{"bad name", "/api/v1/lock/stats", url.Values{"service": {fixtureName}, "path": {"two words"}}, http.StatusBadRequest},
		{"missing path", "/api/v1/lock/history", url.Values{"service": {fixtureName}}, http.StatusBadRequest},
		{"unknown service", "/api/v1/lock/history", url.Values{"service": {"nosuch"}, "path": {"x"}}, http.StatusNotFound},
		{"before the history", "/api/v1/lock", with("at", ms(-time.Hour)), http.StatusNotFound},
		{"a lock never recorded", "/api/v1/lock", url.Values{"service": {fixtureName}, "path": {"other"}, "at": {ms(0)}}, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := historyGet(t, e, tc.endpoint, tc.q)
			var body errorBody
			if code != tc.status || json.Unmarshal(b, &body) != nil || body.Error == "" {
				t.Errorf("status %d body %s, want %d with an error message", code, b, tc.status)
			}
		})
	}

	t.Run("locks", func(t *testing.T) {
		code, b := historyGet(t, e, "/api/v1/history/locks", nil)
		var resp HistoryLocksResponse
		if code != http.StatusOK || json.Unmarshal(b, &resp) != nil {
			t.Fatalf("status %d: %s", code, b)
		}
		if want := []history.Lock{{LockID: lockqueue.LockID{Service: fixtureName, Name: "orders"}, Cluster: history.UnknownCluster}}; !slices.Equal(resp.Locks, want) {
			t.Errorf("locks %+v, want %+v", resp.Locks, want)
		}
	})

	t.Run("history off", func(t *testing.T) {
		off := newEnv(t, Config{})
		for _, ep := range []string{"/api/v1/lock/history", "/api/v1/lock/stats"} {
			if code, b := historyGet(t, off, ep, url.Values{"path": {"/locks/x"}}); code != http.StatusNotFound {
				t.Errorf("%s with the history off: %d %s, want 404", ep, code, b)
			}
		}
		if code, b := historyGet(t, off, "/api/v1/lock", url.Values{"path": {"/locks/x"}, "at": {"0"}}); code != http.StatusNotFound {
			t.Errorf("?at= with the history off: %d %s, want 404", code, b)
		}
	})
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// A lock not read now that was recorded on two clusters is answered for
// the cluster asked for, and a request that names none is told which
// there are rather than given either's.
func TestHistoryOfALockOnTwoClusters(t *testing.T) {
	e := historyEnv(t)
	store := e.srv.cfg.History.(*history.Store)
	for i, cluster := range []string{"west", "east"} {
		snap := lockqueue.Snapshot{Service: fixtureName, Cluster: cluster, Path: "elsewhere", Connection: lockqueue.Connected, Exists: true,
			UpdatedAt: fixtureEpoch.Add(time.Duration(i) * time.Second),
			Nodes:     []lockqueue.Node{{Name: "n-" + cluster, Seq: -1, Mode: lockqueue.Exclusive, Holding: true, Rare: &lockqueue.Rare{Client: "client-" + cluster}}}}
		if _, err := store.Record(snap); err != nil {
			t.Fatal(err)
		}
	}
	at := fmt.Sprint(fixtureEpoch.Add(2 * time.Second).UnixMilli())
	q := url.Values{"service": {fixtureName}, "path": {"elsewhere"}, "at": {at}}
	code, b := historyGet(t, e, "/api/v1/lock", q)
	var body errorBody
	if code != http.StatusBadRequest || json.Unmarshal(b, &body) != nil || !strings.Contains(body.Error, "east, west") {
		t.Errorf("no cluster named: %d %s, want 400 naming east and west", code, b)
	}
	for _, cluster := range []string{"east", "west"} {
		q.Set("cluster", cluster)
		code, b := historyGet(t, e, "/api/v1/lock", q)
		var snap lockqueue.Snapshot
		if code != http.StatusOK || json.Unmarshal(b, &snap) != nil || snap.Cluster != cluster ||
			len(snap.Nodes) != 1 || snap.Nodes[0].Name != "n-"+cluster || snap.Nodes[0].Client() != "client-"+cluster {
			t.Errorf("?cluster=%s: %d %s, want its own node", cluster, code, b)
		}
	}
	q.Set("cluster", history.UnknownCluster)
	if code, b := historyGet(t, e, "/api/v1/lock", q); code != http.StatusNotFound || !strings.Contains(string(b), "also recorded on east, west") {
		t.Errorf("?cluster=unknown: %d %s, want 404 naming the clusters it was recorded on", code, b)
	}
}
