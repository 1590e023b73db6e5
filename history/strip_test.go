package history_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
)

// StripOf's buckets say the longest queue and wait in each stretch of the
// window, from the events alone.
func TestStripOf(t *testing.T) {
	from := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return from.Add(time.Duration(ms) * time.Millisecond) }
	queued := func(ms int, node string) history.Event {
		return history.Event{Time: at(ms), Kind: history.Queued, Node: node, Since: at(ms)}
	}
	acquired := func(ms, since int, node string) history.Event {
		return history.Event{Time: at(ms), Kind: history.Acquired, Node: node, Since: at(since)}
	}
	left := func(ms int, node string, how history.How) history.Event {
		return history.Event{Time: at(ms), Kind: history.Left, Node: node, How: how}
	}
	b := func(h, w int, wait float64) history.Bucket {
		return history.Bucket{Holders: h, Waiters: w, MaxWait: wait}
	}
	tests := []struct {
		name     string
		evs      []history.Event
		buckets  []history.Bucket
		alerts   []history.Mark
		maxQueue int
		maxWait  float64
		gaps     int
	}{
		{
			name:    "nothing recorded",
			buckets: make([]history.Bucket, 10),
			alerts:  []history.Mark{},
		},
		{
			name: "a hand-off, a give-up and an alert",
			evs: []history.Event{
				queued(500, "a"), acquired(500, 500, "a"),
				queued(1500, "b"),
				queued(2200, "c"),
				left(4500, "a", history.Released), acquired(4500, 1500, "b"),
				{Time: at(6000), Kind: history.AlertRaised, Alert: "stalled-holder", Message: "b holds long"},
				{Time: at(7000), Kind: history.AlertCleared, Alert: "stalled-holder"},
				left(8500, "c", history.GaveUp),
			},
			buckets: []history.Bucket{
				b(1, 0, 0), b(1, 1, 0.5), b(1, 2, 1.5), b(1, 2, 2.5),
				// b waited 3s when it took over; c 2.8s at the bucket's end.
				b(1, 2, 3), b(1, 1, 3.8), b(1, 1, 4.8), b(1, 1, 5.8),
				// c gave up after 6.3s; the queue it left is the bucket's start.
				b(1, 1, 6.3), b(1, 0, 0),
			},
			alerts: []history.Mark{
				{Time: at(6000), Alert: "stalled-holder", Raised: true, Message: "b holds long"},
				{Time: at(7000), Alert: "stalled-holder"},
			},
			maxQueue: 3, maxWait: 6.3,
		},
		{
			name: "a moment is counted once all its changes are in",
			evs: []history.Event{
				queued(500, "a"), acquired(500, 500, "a"),
				queued(1500, "b"),
				queued(2500, "c"), left(2500, "b", history.GaveUp),
			},
			buckets: []history.Bucket{
				b(1, 0, 0), b(1, 1, 0.5), b(1, 1, 1), b(1, 1, 1.5),
				b(1, 1, 2.5), b(1, 1, 3.5), b(1, 1, 4.5), b(1, 1, 5.5), b(1, 1, 6.5), b(1, 1, 7.5),
			},
			alerts:   []history.Mark{},
			maxQueue: 2, maxWait: 7.5,
		},
		{
			name: "foreign children are not in the queue; a gap is kept",
			evs: []history.Event{
				{Time: at(100), Kind: history.Queued, Node: "x", Foreign: true, Since: at(100)},
				{Time: at(9000), Kind: history.Gap, Since: at(3000), Message: "not running"},
			},
			buckets: make([]history.Bucket, 10),
			alerts:  []history.Mark{},
			gaps:    1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := history.StripOf(history.State{}, tt.evs, from, at(10_000), 10)
			if !reflect.DeepEqual(got.Buckets, tt.buckets) {
				t.Errorf("buckets\n got %v\nwant %v", got.Buckets, tt.buckets)
			}
			if !reflect.DeepEqual(got.Alerts, tt.alerts) {
				t.Errorf("alerts %+v, want %+v", got.Alerts, tt.alerts)
			}
			if got.MaxQueue != tt.maxQueue || got.MaxWait != tt.maxWait || len(got.Gaps) != tt.gaps {
				t.Errorf("max queue %d, wait %v, %d gaps; want %d, %v, %d", got.MaxQueue, got.MaxWait, len(got.Gaps), tt.maxQueue, tt.maxWait, tt.gaps)
			}
		})
	}
}
