package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// busyMoments are the moments recorded of the lock "busy", in ms after
// the epoch: over a window of 10 s in 10 buckets of a second, the density
// counts 0, 3, 1, 0, 2, 5, 0, 1, 0, 3 (10,000 is the window's end, in the
// last bucket).
var busyMoments = []int64{1000, 1100, 1200, 2000, 4000, 4500, 5000, 5100, 5200, 5300, 5400, 7000, 9000, 9999, 10_000}

// recordBusy records "busy": read at the epoch with h holding (its first
// sight, no moment), then a new waiter at each of busyMoments in place of
// the one before (a moment of its own: one queued, one left).
func recordBusy(t *testing.T, store *history.Store) {
	t.Helper()
	for k, ms := range append([]int64{0}, busyMoments...) {
		snap := lockqueue.Snapshot{Service: fixtureName, Path: "busy", Connection: lockqueue.Connected, Exists: true,
			UpdatedAt: fixtureEpoch.Add(time.Duration(ms) * time.Millisecond),
			Nodes:     []lockqueue.Node{{Name: "h", Seq: -1, Mode: lockqueue.Exclusive, Holding: true, Ctime: fixtureEpoch}}}
		if k > 0 {
			snap.Nodes = append(snap.Nodes, lockqueue.Node{Name: fmt.Sprintf("w%d", k), Seq: -1, Mode: lockqueue.Exclusive, WaitsFor: "h", Ctime: snap.UpdatedAt})
		}
		if _, err := store.Record(snap); err != nil {
			t.Fatal(err)
		}
	}
}

// The server picks the time bar's page of moments (?around=): whole
// buckets of the density around the moment's, as many as fit in ?most=
// moments (the moment's bucket however many it holds), the moments before
// it counted, in the window the density reads.
func TestMomentsPageAround(t *testing.T) {
	e, store := historyEnvStore(t)
	recordBusy(t, store)
	ms := func(d int64) string { return fmt.Sprint(fixtureEpoch.UnixMilli() + d) }
	ask := func(kv ...string) (int, []byte) {
		t.Helper()
		q := url.Values{"service": {fixtureName}, "path": {"busy"}, "from": {ms(0)}, "to": {ms(10_000)}, "buckets": {"10"}}
		for i := 0; i < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return historyGet(t, e, "/api/v1/lock/history/moments", q)
	}

	// The window is as the density counts it: the page's buckets are its.
	var d DensityResponse
	if code, b := historyGet(t, e, "/api/v1/lock/history/density", url.Values{"service": {fixtureName}, "path": {"busy"},
		"from": {ms(0)}, "to": {ms(10_000)}, "buckets": {"10"}}); code != http.StatusOK || json.Unmarshal(b, &d) != nil {
		t.Fatalf("density: %d %s", code, b)
	}
	if want := []int{0, 3, 1, 0, 2, 5, 0, 1, 0, 3}; !slices.Equal(d.Counts, want) {
		t.Fatalf("density %v, want %v: the fixture is not what the cases below count on", d.Counts, want)
	}

	for _, tc := range []struct {
		name           string
		kv             []string
		from, to       int64 // the page, ms after the epoch
		before, listed int   // moments before the page, on it
	}{
		{"about a moment, grown to the left while it fits", []string{"around", ms(4200), "most", "3"}, 2000, 5000, 3, 3},
		{"growing both ways", []string{"around", ms(7000), "most", "4"}, 6000, 10_001, 11, 4},
		{"at the window's start", []string{"around", ms(0), "most", "4"}, 0, 4000, 0, 4},
		{"at the window's end: its last bucket holds to", []string{"around", ms(10_000), "most", "4"}, 6000, 10_001, 11, 4},
		{"before the window: its first page", []string{"around", ms(-60_000), "most", "4"}, 0, 4000, 0, 4},
		{"past the window: its last page", []string{"around", ms(60_000), "most", "4"}, 6000, 10_001, 11, 4},
		{"most smaller than the moment's bucket: that bucket alone", []string{"around", ms(5200), "most", "2"}, 5000, 6000, 6, 5},
		{"an empty bucket: grown over to a moment", []string{"around", ms(3500), "most", "1"}, 2000, 4000, 3, 1},
		{"the whole window", []string{"around", ms(5000), "most", "15"}, 0, 10_001, 0, 15},
		{"most left out: the default page holds the window", []string{"around", ms(5000)}, 0, 10_001, 0, 15},
		// Buckets of 3,333⅓ ms: bucket 1 begins at the first ms whose
		// (t-from)*n/span rounds down to 1.
		{"buckets that do not end on a ms", []string{"buckets", "3", "around", ms(5000), "most", "1"}, 3334, 6667, 4, 7},
		{"an RFC 3339 time", []string{"around", fixtureEpoch.Add(4200 * time.Millisecond).Format(time.RFC3339Nano), "most", "3"}, 2000, 5000, 3, 3},
		// A live bar's window fitted to the first sight (the epoch) is
		// the same window in the same buckets.
		{"fitted as the density", []string{"from", ms(-3_600_000), "fit", "history", "around", ms(4200), "most", "3"}, 2000, 5000, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := ask(tc.kv...)
			var resp MomentsResponse
			if code != http.StatusOK || json.Unmarshal(b, &resp) != nil || resp.Page == nil {
				t.Fatalf("%q: status %d: %s", tc.kv, code, b)
			}
			var got []int64
			for _, m := range resp.Moments {
				got = append(got, m.Time.UnixMilli()-fixtureEpoch.UnixMilli())
			}
			i := slices.IndexFunc(busyMoments, func(m int64) bool { return m >= tc.from })
			want := busyMoments[i : i+tc.listed]
			p := resp.Page
			if f, to := p.From.UnixMilli()-fixtureEpoch.UnixMilli(), p.To.UnixMilli()-fixtureEpoch.UnixMilli(); f != tc.from || to != tc.to || p.Before != tc.before || !slices.Equal(got, want) {
				t.Errorf("%q: page [%d, %d) with %d before, moments %v; want [%d, %d) with %d before, moments %v",
					tc.kv, f, to, p.Before, got, tc.from, tc.to, tc.before, want)
			}
			// The page's moments are the ones it counted (as the density
			// does) in the buckets it spans.
			if p.Before != i || len(resp.Moments) != tc.listed {
				t.Errorf("%q: %d before and %d listed, but the density has %d moments before %d", tc.kv, p.Before, len(resp.Moments), i, tc.from)
			}
			if !resp.From.Equal(fixtureEpoch) || !resp.To.Equal(fixtureEpoch.Add(10*time.Second)) {
				t.Errorf("%q: window %s to %s, want the epoch to 10s", tc.kv, resp.From, resp.To)
			}
		})
	}

	// Without ?around= the moments are the window's, and there is no page.
	if code, b := ask(); code != http.StatusOK || strings.Contains(string(b), `"page"`) {
		t.Errorf("no ?around=: %d %s, want the window's moments and no page", code, b)
	}

	for _, tc := range []struct{ kv []string }{
		{[]string{"around", ms(0), "most", "0"}},
		{[]string{"around", ms(0), "most", "x"}},
		{[]string{"around", ms(0), "most", "-3"}},
		{[]string{"around", ms(0), "most", fmt.Sprint(maxListedMoments + 1)}},
		{[]string{"around", "yesterday"}},
		{[]string{"around", ""}},
		{[]string{"around", ms(0), "buckets", "0"}},
		{[]string{"around", ms(0), "fit", "all"}},
		{[]string{"around", ms(0), "names", "101"}},
	} {
		code, b := ask(tc.kv...)
		var body errorBody
		if code != http.StatusBadRequest || json.Unmarshal(b, &body) != nil || !strings.Contains(body.Error, "?"+tc.kv[len(tc.kv)-2]+"=") {
			t.Errorf("%q: %d %s, want 400 naming ?%s=", tc.kv, code, b, tc.kv[len(tc.kv)-2])
		}
	}
}
