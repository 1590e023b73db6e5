package zkwatch

import (
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// The offset to ZooKeeper's clock is the smallest bound the live creates
// give, and ctimes are corrected only once it is larger than the estimate's
// own error. (A real ZooKeeper on this machine shares its clock; a skewed
// one cannot be started here, so the estimator is tested alone.)
func TestServerClock(t *testing.T) {
	local := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		skew    time.Duration // how far the server's clock is behind
		seen    []time.Duration
		want    time.Duration
		correct bool
	}{
		{"no sample", 0, nil, 0, false},
		{"same clock", 0, []time.Duration{40 * time.Millisecond, 12 * time.Millisecond}, 0, false},
		{"server 30s behind", 30 * time.Second, []time.Duration{300 * time.Millisecond, 15 * time.Millisecond, 80 * time.Millisecond}, 30*time.Second + 15*time.Millisecond, true},
		{"server 5s ahead", -5 * time.Second, []time.Duration{20 * time.Millisecond}, -5*time.Second + 20*time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c serverClock
			for i, lat := range tt.seen {
				created := local.Add(time.Duration(i) * time.Minute) // on the watcher's clock
				c.observe(created.Add(-tt.skew), created.Add(lat))
			}
			by, ok := c.correction()
			if ok != tt.correct || (ok && by != tt.want) {
				t.Fatalf("correction %v, %v; want %v, %v", by, ok, tt.want, tt.correct)
			}
			if !ok {
				return
			}
			nodes := []lockqueue.Node{{Ctime: local.Add(-tt.skew)}, {}}
			correctCtimes(nodes, by)
			if d := nodes[0].Ctime.Sub(local); d < 0 || d > 20*time.Millisecond {
				t.Errorf("corrected ctime is %v off the watcher's clock", d)
			}
			if !nodes[1].Ctime.IsZero() {
				t.Errorf("a node without a ctime got one: %v", nodes[1].Ctime)
			}
		})
	}
}
