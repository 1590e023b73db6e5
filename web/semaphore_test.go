package web

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A Curator semaphore's pending acquirer owns its lease node and its node
// in locks/: the lock's JSON marks the second partOf the first, and the
// list's waiters and queue length count the acquirer once.
func TestAPISemaphoreContenders(t *testing.T) {
	e := newEnv(t, Config{})
	const uuid = "-2fa1-11d2-883f-0016d3cca427"
	lease := func(who string, seq int64) string { return lockqueue.SeqName("_c_"+who+uuid+"-lease-", seq) }
	lock := func(who string, seq int64) string { return lockqueue.SeqName("_c_"+who+uuid+"-lock-", seq) }
	s := lockqueue.Build("/pool", []lockqueue.Child{
		{Folder: "/pool/leases", Name: lease("aaaaaaaa", 0), EphemeralOwner: 1, Czxid: 101, Ctime: epoch},
		{Folder: "/pool/leases", Name: lease("bbbbbbbb", 1), EphemeralOwner: 2, Czxid: 103, Ctime: epoch},
		{Folder: "/pool/locks", Name: lock("cccccccc", 2), EphemeralOwner: 3, Czxid: 106, Ctime: epoch},
		{Folder: "/pool/leases", Name: lease("cccccccc", 2), EphemeralOwner: 3, Czxid: 107, Ctime: epoch},
		{Folder: "/pool/locks", Name: lock("dddddddd", 3), EphemeralOwner: 4, Czxid: 108, Ctime: epoch},
	}, lockqueue.Options{Semaphore: lockqueue.Curator})
	s.Connection = lockqueue.Connected
	e.hub.Publish(s)

	code, _, body := do(t, "GET", e.ts.URL+"/api/v1/lock?path=/pool", "", nil)
	if code != 200 {
		t.Fatalf("GET lock = %d %s", code, body)
	}
	var snap lockqueue.Snapshot
	if err := json.Unmarshal(body, &snap); err != nil {
		t.Fatal(err)
	}
	partOf := map[string]string{}
	for _, n := range snap.Nodes {
		partOf[n.Name] = n.PartOf()
	}
	if got := partOf[lock("cccccccc", 2)]; got != lease("cccccccc", 2) {
		t.Errorf("pending acquirer's lock node partOf %q, want its lease node %s", got, lease("cccccccc", 2))
	}
	if got := partOf[lock("dddddddd", 3)]; got != "" {
		t.Errorf("queued contender partOf %q, want none", got)
	}

	code, _, body = do(t, "GET", e.ts.URL+"/api/v1/locks", "", nil)
	if code != 200 {
		t.Fatalf("GET locks = %d %s", code, body)
	}
	var list LocksResponse
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	want := []string{lease("cccccccc", 2), lock("dddddddd", 3)}
	if len(list.Locks) != 1 || !slices.Equal(list.Locks[0].Waiters, want) || list.Locks[0].QueueLength != 4 {
		t.Errorf("locks %s, want waiters %v and a queue of 4 contenders", body, want)
	}
}
