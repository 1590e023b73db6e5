package lockqueue_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// everyField is a node with every exported field set, its rare ones too.
func everyField() lockqueue.Node {
	return lockqueue.Node{
		Name: "R_0000000007", Seq: 7, Mode: lockqueue.Read, Recipe: lockqueue.Curator, Holding: true,
		WaitsFor: "W_0000000003", WaitsOn: lockqueue.OnChildren, Watching: []string{"/l/W_0000000003"},
		Edge: lockqueue.EdgeConfirmed, Session: "0x1f", Data: "aGk=", DataBinary: true,
		Ctime: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), Czxid: 99, Foreign: true, Zombie: true, CtimeAtMost: true,
		Rare: &lockqueue.Rare{
			ExpiresInMs: 1500, StalledOn: "W_0000000003", StalledSince: time.Date(2026, 11, 27, 10, 1, 0, 0, time.UTC),
			HeldSince: time.Date(2026, 11, 27, 10, 2, 0, 0, time.UTC), HeldBound: lockqueue.HeldAtLeast, Folder: "/l/leases", PartOf: "L_0000000001",
			Order: 42, Client: "pid-7", Label: "psql · idle", WaitsForSource: lockqueue.ByServer,
			BlockedBy: []string{"a", "b"}, LeaseID: "694d", LeaseTTLMs: 10000, LeaseLeftMs: 7500,
			ShownEdges: []lockqueue.WaitEdge{{To: "a", Provenance: lockqueue.ByServer}},
		},
	}
}

// The JSON of a node is the same as before its rare fields moved behind a
// pointer: this is what the previous layout, with every field Node's own,
// wrote for everyField.
const everyFieldJSON = `{"name":"R_0000000007","seq":7,"mode":"read","recipe":"curator","holding":true,"waitsFor":"W_0000000003","waitsOn":"children","watching":["/l/W_0000000003"],"edge":"confirmed","session":"0x1f","data":"aGk=","dataBinary":true,"ctime":"2026-11-27T10:00:00Z","czxid":99,"foreign":true,"zombie":true,"ctimeAtMost":true,"expiresInMs":1500,"stalledOn":"W_0000000003","stalledSince":"2026-11-27T10:01:00Z","heldSince":"2026-11-27T10:02:00Z","heldBound":"atLeast","folder":"/l/leases","partOf":"L_0000000001","order":42,"client":"pid-7","label":"psql · idle","waitsForSource":"server","blockedBy":["a","b"],"leaseId":"694d","leaseTtlMs":10000,"leaseLeftMs":7500,"waitEdges":[{"to":"a","provenance":"server"}]}`

func TestNodeJSONUnchangedByRare(t *testing.T) {
	n := everyField()
	got, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != everyFieldJSON {
		t.Fatalf("JSON changed:\n got %s\nwant %s", got, everyFieldJSON)
	}
	var back lockqueue.Node
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(n) {
		t.Errorf("decoded %+v %+v, want %+v %+v", back, back.Rare, n, n.Rare)
	}
	plain := lockqueue.Node{Name: "x", Seq: 1}
	b, _ := json.Marshal(plain)
	var decoded lockqueue.Node
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.Rare != nil {
		t.Errorf("%s decoded with a Rare: %+v", b, decoded.Rare)
	}
}

// A Set method never writes the Rare a copied node shares with the node
// it was copied from (a published snapshot's node), and reads through a
// node without one are zero.
func TestSetCopiesRare(t *testing.T) {
	published := everyField()
	copied := published
	copied.SetHeldSince(time.Time{})
	copied.SetClient("other")
	copied.SetBlockedBy(nil)
	if !reflect.DeepEqual(published, everyField()) {
		t.Errorf("a Set on a copy changed the original: %+v", published.Rare)
	}
	if !copied.HeldSince().IsZero() || copied.Client() != "other" || copied.BlockedBy() != nil {
		t.Errorf("the copy reads %v %q %v", copied.HeldSince(), copied.Client(), copied.BlockedBy())
	}
	var bare lockqueue.Node
	bare.SetLabel("")
	bare.SetHeldSince(time.Time{})
	if bare.Rare != nil || bare.Label() != "" || bare.Order() != 0 || bare.ShownEdges() != nil {
		t.Errorf("zero values on a node without Rare: %+v", bare.Rare)
	}
	bare.SetRare(lockqueue.Rare{})
	if bare.Rare != nil {
		t.Error("SetRare of a zero Rare keeps one")
	}
}
