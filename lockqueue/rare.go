package lockqueue

import "time"

// Node's methods for the fields of its Rare: each reads as the zero value
// when the node has none, and each Set writes a copy of the node's Rare,
// never the one it shares with the nodes it was copied from (a published
// snapshot's). Setting the value a node has, or a zero value on a node
// without a Rare, allocates nothing.

// SetRare sets every field of n's Rare at once: none when r is zero.
func (n *Node) SetRare(r Rare) {
	if r.zero() {
		n.Rare = nil
		return
	}
	// A copy made here, not &r: taking r's address put every call's r on
	// the heap, the zero ones too (a replayed 100,000-node queue's).
	c := new(Rare)
	*c = r
	n.Rare = c
}

// zero reports whether every field of r is zero.
func (r *Rare) zero() bool {
	return r.ExpiresInMs == 0 && r.StalledOn == "" && r.StalledSince.IsZero() && r.HeldSince.IsZero() &&
		r.Folder == "" && r.PartOf == "" && r.Order == 0 && r.Client == "" && r.Label == "" &&
		r.WaitsForSource == "" && len(r.BlockedBy) == 0 && r.LeaseID == "" && r.LeaseTTLMs == 0 &&
		r.LeaseLeftMs == 0 && len(r.ShownEdges) == 0
}

// rare is n's Rare to write: a fresh copy.
func (n *Node) rare() *Rare {
	r := new(Rare)
	if n.Rare != nil {
		*r = *n.Rare
	}
	n.Rare = r
	return r
}

// ExpiresInMs is Rare's ExpiresInMs.
func (n Node) ExpiresInMs() int64 {
	if n.Rare == nil {
		return 0
	}
	return n.Rare.ExpiresInMs
}

// SetExpiresInMs sets ExpiresInMs on a copy of n's Rare.
func (n *Node) SetExpiresInMs(v int64) {
	if v == n.ExpiresInMs() {
		return
	}
	n.rare().ExpiresInMs = v
}

// StalledOn is Rare's StalledOn.
func (n Node) StalledOn() string {
	if n.Rare == nil {
		return ""
	}
	return n.Rare.StalledOn
}

// SetStalledOn sets StalledOn on a copy of n's Rare.
func (n *Node) SetStalledOn(v string) {
	if v == n.StalledOn() {
		return
	}
	n.rare().StalledOn = v
}

// StalledSince is Rare's StalledSince.
func (n Node) StalledSince() time.Time {
	if n.Rare == nil {
		return time.Time{}
	}
	return n.Rare.StalledSince
}

// SetStalledSince sets StalledSince on a copy of n's Rare.
func (n *Node) SetStalledSince(v time.Time) {
	if v == n.StalledSince() {
		return
	}
	n.rare().StalledSince = v
}

// HeldSince is Rare's HeldSince.
func (n Node) HeldSince() time.Time {
	if n.Rare == nil {
		return time.Time{}
	}
	return n.Rare.HeldSince
}

// SetHeldSince sets HeldSince on a copy of n's Rare.
func (n *Node) SetHeldSince(v time.Time) {
	if v == n.HeldSince() {
		return
	}
	n.rare().HeldSince = v
}

// Folder is Rare's Folder.
func (n Node) Folder() string {
	if n.Rare == nil {
		return ""
	}
	return n.Rare.Folder
}

// SetFolder sets Folder on a copy of n's Rare.
func (n *Node) SetFolder(v string) {
	if v == n.Folder() {
		return
	}
	n.rare().Folder = v
}

// PartOf is Rare's PartOf.
func (n Node) PartOf() string {
	if n.Rare == nil {
		return ""
	}
	return n.Rare.PartOf
}

// SetPartOf sets PartOf on a copy of n's Rare.
func (n *Node) SetPartOf(v string) {
	if v == n.PartOf() {
		return
	}
	n.rare().PartOf = v
}

// Order is Rare's Order.
func (n Node) Order() int64 {
	if n.Rare == nil {
		return 0
	}
	return n.Rare.Order
}

// SetOrder sets Order on a copy of n's Rare.
func (n *Node) SetOrder(v int64) {
	if v == n.Order() {
		return
	}
	n.rare().Order = v
}

// Client is Rare's Client.
func (n Node) Client() string {
	if n.Rare == nil {
		return ""
	}
	return n.Rare.Client
}

// SetClient sets Client on a copy of n's Rare.
func (n *Node) SetClient(v string) {
	if v == n.Client() {
		return
	}
	n.rare().Client = v
}

// Label is Rare's Label.
func (n Node) Label() string {
	if n.Rare == nil {
		return ""
	}
	return n.Rare.Label
}

// SetLabel sets Label on a copy of n's Rare.
func (n *Node) SetLabel(v string) {
	if v == n.Label() {
		return
	}
	n.rare().Label = v
}

// WaitsForSource is Rare's WaitsForSource.
func (n Node) WaitsForSource() Provenance {
	if n.Rare == nil {
		return ""
	}
	return n.Rare.WaitsForSource
}

// SetWaitsForSource sets WaitsForSource on a copy of n's Rare.
func (n *Node) SetWaitsForSource(v Provenance) {
	if v == n.WaitsForSource() {
		return
	}
	n.rare().WaitsForSource = v
}

// BlockedBy is Rare's BlockedBy.
func (n Node) BlockedBy() []string {
	if n.Rare == nil {
		return nil
	}
	return n.Rare.BlockedBy
}

// SetBlockedBy sets BlockedBy on a copy of n's Rare.
func (n *Node) SetBlockedBy(v []string) {
	if len(v) == 0 && len(n.BlockedBy()) == 0 {
		return
	}
	n.rare().BlockedBy = v
}

// LeaseID is Rare's LeaseID.
func (n Node) LeaseID() string {
	if n.Rare == nil {
		return ""
	}
	return n.Rare.LeaseID
}

// SetLeaseID sets LeaseID on a copy of n's Rare.
func (n *Node) SetLeaseID(v string) {
	if v == n.LeaseID() {
		return
	}
	n.rare().LeaseID = v
}

// LeaseTTLMs is Rare's LeaseTTLMs.
func (n Node) LeaseTTLMs() int64 {
	if n.Rare == nil {
		return 0
	}
	return n.Rare.LeaseTTLMs
}

// SetLeaseTTLMs sets LeaseTTLMs on a copy of n's Rare.
func (n *Node) SetLeaseTTLMs(v int64) {
	if v == n.LeaseTTLMs() {
		return
	}
	n.rare().LeaseTTLMs = v
}

// LeaseLeftMs is Rare's LeaseLeftMs.
func (n Node) LeaseLeftMs() int64 {
	if n.Rare == nil {
		return 0
	}
	return n.Rare.LeaseLeftMs
}

// SetLeaseLeftMs sets LeaseLeftMs on a copy of n's Rare.
func (n *Node) SetLeaseLeftMs(v int64) {
	if v == n.LeaseLeftMs() {
		return
	}
	n.rare().LeaseLeftMs = v
}

// ShownEdges is Rare's ShownEdges.
func (n Node) ShownEdges() []WaitEdge {
	if n.Rare == nil {
		return nil
	}
	return n.Rare.ShownEdges
}

// SetShownEdges sets ShownEdges on a copy of n's Rare.
func (n *Node) SetShownEdges(v []WaitEdge) {
	if len(v) == 0 && len(n.ShownEdges()) == 0 {
		return
	}
	n.rare().ShownEdges = v
}
