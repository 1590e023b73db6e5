package lockqueue

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// Re-sorting a shuffled snapshot must give back Build's order exactly, for
// every recipe mix, foreign children included.
func TestSortNodesMatchesBuild(t *testing.T) {
	folders := map[string][]string{
		"seed":    {"W_0000000003", "R_0000000001", "R_0000000002", "W_0000000004", "R_0000000005"},
		"foreign": {"zeta", "_c_0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f-lock-0000000002", "alpha", "_c_0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f-lock-0000000001"},
		"kazoo":   {"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210", "00000000000000000000000000000000"},
		"mixed":   {"x-72057594037927936-0000000004", "W_0000000001", "junk", "R_-2147483648"},
	}
	for name, names := range folders {
		t.Run(name, func(t *testing.T) {
			var kids []Child
			for i, n := range names {
				// czxid against the name order, so a sort that ignored seq would show.
				kids = append(kids, Child{Name: n, Czxid: int64(100 - i), EphemeralOwner: int64(i + 1)})
			}
			want := Build("/p", kids, Options{}).Nodes
			got := slices.Clone(want)
			r := rand.New(rand.NewPCG(1, 2))
			for range 20 {
				r.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
				SortNodes(got)
				for i := range want {
					if got[i].Name != want[i].Name {
						t.Fatalf("order %v, want Build's %v", nodeNames(got), nodeNames(want))
					}
				}
			}
		})
	}
}

func nodeNames(ns []Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

// sortNodes moves nodes in place by cycles of its index sort: it must give
// what a stable sort gives, ties (equal keys) kept in their order.
func TestSortNodesInPlaceIsStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 10, 100, 1000} {
		for range 20 {
			nodes := make([]Node, n)
			for i := range nodes {
				nodes[i] = Node{Seq: int64(rng.IntN(n/2 + 1)), Czxid: int64(i), Name: fmt.Sprint(i)}
			}
			want := slices.Clone(nodes)
			slices.SortStableFunc(want, func(a, b Node) int { return cmp.Compare(a.Seq, b.Seq) })
			sortNodes(nodes, func(a, b *Node) bool { return a.Seq < b.Seq })
			for i := range nodes {
				if nodes[i].Name != want[i].Name {
					t.Fatalf("%d nodes: at %d got %s, want %s", n, i, nodes[i].Name, want[i].Name)
				}
			}
		}
	}
}

// A replay lists a queue's nodes in the order they appeared: each folder's
// in its queue's order, but the folders' (and the foreign children)
// interleaved. SortGroups gives back Build's order from any such listing.
func TestSortGroupsMatchesBuild(t *testing.T) {
	var kids []Child
	for i, n := range []string{"_c_aa-lock-0000000001", "_c_bb-lock-0000000002", "junk", "alpha"} {
		kids = append(kids, Child{Name: n, Folder: "/p/locks", Czxid: int64(10 + i), EphemeralOwner: int64(i + 1)})
	}
	for i, n := range []string{"_c_cc-lease-0000000003", "_c_dd-lease-0000000004", "_c_ee-lease-0000000005"} {
		kids = append(kids, Child{Name: n, Folder: "/p/leases", Czxid: int64(20 + i), EphemeralOwner: int64(10 + i)})
	}
	want := Build("/p", kids, Options{Semaphore: Curator}).Nodes
	groups := map[string][]Node{}
	var keys []string
	for _, n := range want {
		k := n.Folder()
		if n.Foreign {
			k = "foreign " + n.Name
		}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], n)
	}
	if len(keys) < 3 {
		t.Fatalf("groups %v: want two folders and foreign children", keys)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		// Interleave the groups, each in its own order.
		left := map[string][]Node{}
		for k, g := range groups {
			left[k] = g
		}
		var got []Node
		for len(got) < len(want) {
			k := keys[r.IntN(len(keys))]
			if len(left[k]) > 0 {
				got, left[k] = append(got, left[k][0]), left[k][1:]
			}
		}
		SortGroups(got)
		if !slices.Equal(nodeNames(got), nodeNames(want)) {
			t.Fatalf("order %v, want Build's %v", nodeNames(got), nodeNames(want))
		}
	}
}
