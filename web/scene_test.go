package web

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// deadlocked is a live snapshot of a lock whose nodes are "name:session",
// the first holding and the next waiting for it, with the deadlock alert
// naming the other locks.
func deadlocked(path string, others []string, nodes ...[2]string) lockqueue.Snapshot {
	s := lockqueue.Snapshot{Path: path, Connection: lockqueue.Connected, Exists: true}
	for i, n := range nodes {
		node := lockqueue.Node{Name: n[0], Session: n[1], Holding: i == 0}
		if i > 0 {
			node.WaitsFor = nodes[i-1][0]
		}
		s.Nodes = append(s.Nodes, node)
	}
	a := lockqueue.Alert{Kind: lockqueue.AlertDeadlock}
	for _, o := range others {
		a.Locks = append(a.Locks, lockqueue.LockID{Service: lockqueue.ZooKeeper, Name: o})
	}
	if len(others) > 0 {
		s.Alerts = []lockqueue.Alert{a}
	}
	return s
}

// A lock page's frame brings the deadlock through other locks that its
// lock is in: the cycle's locks, this one first, each cut to its nodes in
// the cycle and linked to its page, and the cycle in wait order; a lock
// in no such deadlock brings none.
func TestFrameBringsDeadlockScene(t *testing.T) {
	e := newEnv(t, Config{Pages: true})
	// A third waiter on /x/a is not part of the cycle.
	e.hub.Publish(deadlocked("/x/b", []string{"/x/a"}, [2]string{"lock-0000000000", "0xB"}, [2]string{"lock-0000000001", "0xA"}))
	e.hub.Publish(deadlocked("/x/a", []string{"/x/b"}, [2]string{"lock-0000000000", "0xA"}, [2]string{"lock-0000000001", "0xB"}, [2]string{"lock-0000000002", "0xC"}))
	e.hub.Publish(deadlocked("/x/calm", nil, [2]string{"lock-0000000000", "0xA"}, [2]string{"lock-0000000001", "0xB"}))

	v := e.mustDial(t, "/x/a&window=0:100&parts=1")
	v.next()
	var x pageExtra
	if err := json.Unmarshal(v.last, &x); err != nil || x.Scene == nil {
		t.Fatalf("the frame brings no scene (%v): %s", err, v.last)
	}
	var locks, hrefs []string
	for _, l := range x.Scene.Locks {
		var nodes []string
		for _, n := range l.Nodes {
			nodes = append(nodes, n.Name)
		}
		locks = append(locks, fmt.Sprint(l.Path, " ", nodes))
	}
	hrefs = x.Scene.Hrefs
	if want := []string{"/x/a [lock-0000000000 lock-0000000001]", "/x/b [lock-0000000000 lock-0000000001]"}; !slices.Equal(locks, want) {
		t.Errorf("the scene's locks %q, want %q", locks, want)
	}
	if want := []string{"/lock?path=%2Fx%2Fa", "/lock?path=%2Fx%2Fb"}; !slices.Equal(hrefs, want) {
		t.Errorf("the scene's links %q, want %q", hrefs, want)
	}
	var steps []string
	for _, s := range x.Scene.Cycle {
		steps = append(steps, s.Lock+": "+s.Waiter+" → "+s.Target)
	}
	if want := []string{"/x/b: lock-0000000001 → lock-0000000000", "/x/a: lock-0000000001 → lock-0000000000"}; !slices.Equal(steps, want) {
		t.Errorf("the scene's cycle %q, want %q", steps, want)
	}
	for _, l := range x.Scene.Locks {
		for _, n := range l.Nodes {
			if got := lines(n); len(got) != 3 || got[0] != "lock…#"+strconv.FormatInt(n.Seq, 10) {
				t.Errorf("the scene gives %s the lane's lines %q", n.Name, got)
			}
		}
	}

	calm := e.mustDial(t, "/x/calm&window=0:100&parts=1")
	calm.next()
	x = pageExtra{}
	if err := json.Unmarshal(calm.last, &x); err != nil || x.Scene != nil {
		t.Errorf("a lock in no deadlock brings a scene (%v): %+v", err, x.Scene)
	}
}
