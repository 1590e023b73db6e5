package views

import (
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// How a lock was read is said in its service's terms: only ZooKeeper has a
// watch table to read watches from.
func TestSourceWords(t *testing.T) {
	for _, tc := range []struct {
		service, source, term, value string
	}{
		{"", "4lw", "watches from", "4lw"},
		{lockqueue.ZooKeeper, "", "watches from", "none"},
		{lockqueue.Etcd, "none", "", ""},
		{"postgres", "pg_locks", "read from", "pg_locks, polled"},
		{"redis", "keyspace", "read from", "keyspace events"},
		{"redis", "poll", "read from", "polling the key"},
		{"fixture", "poll", "read from", "poll"},
		{"fixture", "history", "read from", "history"},
		{lockqueue.ZooKeeper, "history", "read from", "history"},
	} {
		term, value := SourceWords(serviceNamed(tc.service), lockqueue.Snapshot{Service: tc.service, WatchSource: tc.source})
		if term != tc.term || value != tc.value {
			t.Errorf("%s/%s: %q %q, want %q %q", tc.service, tc.source, term, value, tc.term, tc.value)
		}
	}
}

// Each service's legend lists only what its locks can show: no watches,
// herd or stalled holder but on ZooKeeper.
func TestLegendPerService(t *testing.T) {
	zkOnly := map[string]bool{"children": true, "stalled-holder": true, "dangling": true, "unexpected": true}
	for _, svc := range append(allServices, serviceNamed("fixture")) {
		for _, it := range svc.Legend() {
			if zkOnly[it.Key] && svc.Name != lockqueue.ZooKeeper {
				t.Errorf("%s's legend has ZooKeeper's %s (%q)", svc.Name, it.Key, it.Label)
			}
			if it.Label == "" {
				t.Errorf("%s's legend has %s with no label", svc.Name, it.Key)
			}
		}
	}
	if n := len(zooKeeper.Legend()); n < 10 {
		t.Errorf("ZooKeeper's legend has %d entries, want its modes, holders and every watch edge", n)
	}
}

// queryShown is how much of a query PostgreSQL's pane shows (pglock).
const queryShown = 60

// A PostgreSQL node's record becomes pg_activity's columns; data that is no
// record is shown as it is.
func TestPostgresDetails(t *testing.T) {
	long := "SELECT pg_advisory_lock(42), 'a very long literal that goes on and on past the pane'"
	rec := `{"pid":4242,"application":"billing","clientAddr":"10.0.0.7","clientPort":5123,"state":"active","query":"` + long + `","xactStart":"2025-01-02T03:04:00Z","waitStart":"2025-01-02T03:04:03Z"}`
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name, data string
		want       map[string]string
	}{
		{"a session", rec, map[string]string{
			"pid": "4242", "application": "billing", "client address": "10.0.0.7:5123", "backend state": "active",
			"transaction": "5.0s, since 2025-01-02 03:04:00 UTC", "waiting": "2.0s, since 2025-01-02 03:04:03 UTC",
			"to end it": "SELECT pg_terminate_backend(4242);",
		}},
		{"no record", "not json", map[string]string{"data": "not json"}},
	} {
		s := lockqueue.Snapshot{Service: "postgres", Path: "advisory/42", UpdatedAt: at,
			Nodes: []lockqueue.Node{{Name: "pid-4242", Mode: lockqueue.Exclusive, Holding: true, Data: tc.data}}}
		got := map[string]Detail{}
		for _, e := range NewNodeDetails(serviceNamed("postgres"), s, "pid-4242", at).Entries {
			got[e.Term] = e
		}
		for term, want := range tc.want {
			if got[term].Value != want {
				t.Errorf("%s: %s = %q, want %q", tc.name, term, got[term].Value, want)
			}
		}
		if q, ok := got["query"]; ok && (len([]rune(q.Value)) != queryShown+1 || q.Title != long) {
			t.Errorf("%s: query %q (title %q): want the first %d characters and the whole on hover", tc.name, q.Value, q.Title, queryShown)
		}
		if _, ok := got["its session watches"]; ok {
			t.Errorf("%s: a PostgreSQL node's details say what its session watches", tc.name)
		}
	}
}

// A service's reader words what its discovery left unread; the pages put
// the service's title before it, and say it of folders when the reader
// says nothing.
func TestUnexploredText(t *testing.T) {
	for _, tc := range []struct {
		u    Unexplored
		want string
	}{
		{Unexplored{Service: Service{Title: "Redis"}, Folders: 3, Words: "3 keys not followed."}, "Redis: 3 keys not followed."},
		{Unexplored{Service: Service{Title: "Fixture"}, Folders: 1, Limit: 10, Flag: "--discover-limit"},
			"Fixture: 1 folder below the --watch-under prefixes not looked into: the limit of 10 folders is reached, so locks in them are not shown. Raise --discover-limit to look into them."},
	} {
		if got := tc.u.Text(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.u, got, tc.want)
		}
	}
}
