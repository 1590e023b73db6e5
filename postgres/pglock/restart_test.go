package pglock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A restart of the watched server (psql holding an advisory lock and
// another waiting for it) is told as one: every session ended and its
// locks were released with it, which the empty queue read afterwards
// would otherwise show as an ordinary release. The start time is read in
// the poll's own query, so nothing else is asked of the server.
func TestRestartReleasesEveryLock(t *testing.T) {
	srv := server(t, nil)
	su := superuser(t, srv)
	const name = "advisory/42"
	_, col := startReader(t, Config{DSN: srv.DSN(), Watch: []string{name}, LongWait: time.Hour, IdleGrace: time.Hour})
	a, b := startPsql(t, srv, "holder-a"), startPsql(t, srv, "waiter-b")
	pa, pb := pidOf(t, su, "holder-a"), pidOf(t, su, "waiter-b")
	a.send(t, "SELECT pg_advisory_lock(42);")
	holdsAdvisory(t, su, pa, 1)
	b.send(t, "SELECT pg_advisory_lock(42);")
	waitingOn(t, su, pb)
	want := shape{order: pids(pa, pb), holders: pids(pa), blocked: map[string][]string{nodeName(pb): pids(pa)}}
	s := col.await(t, name, "a holding, b waiting", func(s lockqueue.Snapshot) bool { return shapeOf(s).equal(want) })
	if hasAlert(s, AlertReleasedInRestart) {
		t.Fatalf("a restart told before any: %v", s.Alerts)
	}

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s = col.await(t, name, "the queue, read after the restart, to say it went in it",
		func(s lockqueue.Snapshot) bool {
			return s.Live() && len(s.Nodes) == 0 && hasAlert(s, AlertReleasedInRestart)
		})
	for _, al := range s.Alerts {
		if al.Kind != AlertReleasedInRestart {
			continue
		}
		if !strings.Contains(al.Message, "held by "+nodeName(pa)+" (holder-a") || !strings.Contains(al.Message, "waited for by "+nodeName(pb)+" (waiter-b") ||
			!strings.Contains(al.Message, "restarted") || !strings.Contains(al.Message, "released") {
			t.Errorf("the restart's alert %q does not say the restart released a's hold and b's wait", al.Message)
		}
		if strings.Join(al.Nodes, ",") != nodeName(pa)+","+nodeName(pb) {
			t.Errorf("the restart's alert names %v, want a and b", al.Nodes)
		}
	}
}

func hasAlert(s lockqueue.Snapshot, kind string) bool {
	for _, a := range s.Alerts {
		if a.Kind == kind {
			return true
		}
	}
	return false
}
