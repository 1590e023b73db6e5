package lockqueue

// Node's methods for the fields of its Rare are generated (fields_gen.go):
// each reads as the zero value when the node has none, and each Set
// writes a copy of the node's Rare, never the one it shares with the
// nodes it was copied from (a published snapshot's). Setting the value a
// node has, or a zero value on a node without a Rare, allocates nothing.

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

// rare is n's Rare to write: a fresh copy.
func (n *Node) rare() *Rare {
	r := new(Rare)
	if n.Rare != nil {
		*r = *n.Rare
	}
	n.Rare = r
	return r
}
