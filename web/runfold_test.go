package web

import (
	"fmt"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// queueOfN is a queue of n waiters, lock-0000000000 on, the first holding.
func queueOfN(n int) lockqueue.Snapshot {
	s := lockqueue.Snapshot{Path: "/lock"}
	for i := range n {
		s.Nodes = append(s.Nodes, lockqueue.Node{Name: fmt.Sprintf("lock-%010d", i), Holding: i == 0})
	}
	return s
}

// A classroom lane longer than its pane's room is folded with the lock
// page's fold: what the step is about stays, the rest is counted in marks,
// and the lane takes no more columns than fit, unless what must stay
// does not.
// testMarkCols is a fold mark's width in node columns, as the page tells
// it (?mark=: queue.js draws a mark 156 px wide beside 128 px nodes).
const testMarkCols = 156.0 / 128

func TestFoldRun(t *testing.T) {
	name := func(i int) string { return fmt.Sprintf("lock-%010d", i) }
	tests := []struct {
		name     string
		n        int
		fit      float64
		selected string
		acted    string
		notified []string
		folded   bool
		want     []int // positions that must be drawn
		woken    []int // notified positions folded, counted in the marks
	}{
		{name: "a short queue is whole", n: 8, fit: 3},
		{name: "a queue that fits is whole", n: 20, fit: 20},
		{name: "no room asked", n: 20, fit: 0},
		{name: "holder, ends and the acted node", n: 20, fit: 6, acted: name(12), folded: true, want: []int{0, 12, 19}},
		{name: "the herd: notified kept while they fit, the rest counted", n: 20, fit: 7, acted: name(0),
			notified: []string{name(3), name(9), name(15), name(17), name(1)}, folded: true, want: []int{0, 19, 1, 3}, woken: []int{9, 15, 17}},
		{name: "a fraction of a column counts", n: 20, fit: 3.3, acted: name(0), notified: []string{name(1), name(2)}, folded: true, want: []int{0, 1}, woken: []int{2}},
		{name: "the selected node and holders stay past the room", n: 30, fit: 1, selected: name(20), acted: name(10), folded: true, want: []int{0, 10, 20}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			whole := queueOfN(tc.n)
			got, lane, ok := foldRun(whole, tc.fit, testMarkCols, tc.selected, tc.acted, tc.notified)
			if ok != tc.folded {
				t.Fatalf("folded %v, want %v", ok, tc.folded)
			}
			if !ok {
				if len(got.Nodes) != tc.n {
					t.Errorf("%d nodes drawn of %d", len(got.Nodes), tc.n)
				}
				return
			}
			checkWindow(t, got, lane.Window, whole)
			drawn := map[int]bool{}
			keep := make([]bool, tc.n)
			for _, r := range lane.Window.Runs {
				for i := r[0]; i < r[0]+r[1]; i++ {
					drawn[i], keep[i] = true, true
				}
			}
			for _, i := range tc.want {
				if !drawn[i] {
					t.Errorf("node %d folded; want it drawn (drawn: %v)", i, lane.Window.Runs)
				}
			}
			if cols := laneCols(keep, len(got.Nodes), testMarkCols); cols > tc.fit && len(got.Nodes) > len(tc.want) {
				t.Errorf("the lane takes %.2f columns, %.2f fit, with more than what must stay drawn", cols, tc.fit)
			}
			if len(lane.NotifiedAt) != len(tc.woken) {
				t.Errorf("notified and folded: %v, want positions %v", lane.NotifiedAt, tc.woken)
			}
			for _, i := range tc.woken {
				if at, ok := lane.NotifiedAt[name(i)]; !ok || at != i || drawn[i] {
					t.Errorf("notified node %d: folded at %d (%v), drawn %v; want folded and counted", i, at, ok, drawn[i])
				}
			}
			// Each fold counts the woken nodes in it.
			if len(lane.Window.Notified) != len(lane.Window.Folds) {
				t.Fatalf("%d folds, %d counts of notified", len(lane.Window.Folds), len(lane.Window.Notified))
			}
			for k, f := range lane.Window.Folds {
				want := 0
				for _, i := range tc.woken {
					if f[0] <= i && i <= f[1] {
						want++
					}
				}
				if lane.Window.Notified[k] != want {
					t.Errorf("fold %v counts %d notified, want %d", f, lane.Window.Notified[k], want)
				}
			}
		})
	}
}
