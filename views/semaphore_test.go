package views

import (
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A Curator semaphore with 2 leases and 4 contenders: two hold, one is
// pending (its lease node, and its node in locks/ by which it holds the
// internal lock), one queues on the internal lock. The lock view and the
// dashboard count the contenders: 2 holding, 2 waiting, not 3.
func TestSemaphoreCountsContenders(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	const uuid = "-2fa1-11d2-883f-0016d3cca427"
	lease := func(who string, seq int64) string { return lockqueue.SeqName("_c_"+who+uuid+"-lease-", seq) }
	lock := func(who string, seq int64) string { return lockqueue.SeqName("_c_"+who+uuid+"-lock-", seq) }
	kid := func(folder, name string, owner, czxid int64) lockqueue.Child {
		return lockqueue.Child{Folder: folder, Name: name, EphemeralOwner: owner, Czxid: czxid, Ctime: now.Add(-time.Minute)}
	}
	s := lockqueue.Build("/pool", []lockqueue.Child{
		kid("/pool/leases", lease("aaaaaaaa", 0), 1, 101),
		kid("/pool/leases", lease("bbbbbbbb", 1), 2, 103),
		kid("/pool/locks", lock("cccccccc", 2), 3, 106),
		kid("/pool/leases", lease("cccccccc", 2), 3, 107),
		kid("/pool/locks", lock("dddddddd", 3), 4, 108),
	}, lockqueue.Options{Semaphore: lockqueue.Curator})
	s.Connection = lockqueue.Connected

	l := NewLockWith(Page{}, zooKeeper, LockState{Path: "/pool", Snap: s, Known: true}, TableQuery{}, now)
	stats := map[string]string{}
	for _, st := range l.Stats {
		stats[st.Name] = st.Value
	}
	if stats["holding"] != "2" || stats["waiting"] != "2" {
		t.Errorf("stats %v, want 2 holding and 2 waiting", l.Stats)
	}
	states := map[string]string{}
	for _, r := range l.Rows {
		states[r.Name] = r.State
	}
	want := map[string]string{
		lease("aaaaaaaa", 0): "holding", lease("bbbbbbbb", 1): "holding",
		lease("cccccccc", 2): "waiting",
		lock("cccccccc", 2):  "holds the internal lock for " + lease("cccccccc", 2),
		lock("dddddddd", 3):  "waiting",
	}
	for name, w := range want {
		if states[name] != w {
			t.Errorf("%s state %q, want %q", name, states[name], w)
		}
	}

	sum := s.Summarize()
	if r := NewLockRow(&sum, false, now); r.Waiting != 2 {
		t.Errorf("dashboard row waiting %d, want 2 contenders", r.Waiting)
	}
}
