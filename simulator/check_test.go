package simulator

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// hist builds a recorded history for checkSafety: each step lists its
// clients' states and the events it caused.
type histStep struct {
	clients []ClientInfo
	events  []Event
}

func hist(steps ...histStep) []record {
	recs := []record{{Step: 0}}
	for i, s := range steps {
		for j := range s.events {
			s.events[j].Step = i + 1
		}
		recs = append(recs, record{Step: i + 1, Clients: s.clients, Events: s.events})
	}
	return recs
}

func cl(name string, mode lockqueue.Mode, state string, since int) ClientInfo {
	return ClientInfo{Name: name, Mode: mode, State: state, Since: since}
}

func onLock(c ClientInfo, lock string) ClientInfo {
	c.Lock = lock
	return c
}

const (
	wr = lockqueue.Write
	rd = lockqueue.Read
	ex = lockqueue.Exclusive
	ls = lockqueue.Lease
)

// TestCheckSafety feeds the checker histories that break each property (and
// some that do not), as the world would record them.
func TestCheckSafety(t *testing.T) {
	write := func(c string, token int64) Event { return Event{Client: c, Event: EvWrite, Token: token} }
	type want struct {
		kind    string
		steps   []int
		clients []string
		msg     []string // substrings of the message
	}
	tests := []struct {
		name    string
		lock    LockKind
		leases  int
		fencing bool
		recs    []record
		want    []want
	}{
		{
			name: "one writer, then readers: fine",
			lock: RW,
			recs: hist(
				histStep{clients: []ClientInfo{cl("A", wr, StateHolding, 1)}},
				histStep{clients: []ClientInfo{cl("A", wr, StateReleased, 2), cl("B", rd, StateHolding, 2), cl("C", rd, StateHolding, 2)}},
			),
		},
		{
			name: "two writers over two steps: one violation naming both steps",
			lock: RW,
			recs: hist(
				histStep{clients: []ClientInfo{cl("A", wr, StateHolding, 1)}},
				histStep{clients: []ClientInfo{cl("A", wr, StateHolding, 1), cl("B", wr, StateHolding, 2)}},
				histStep{clients: []ClientInfo{cl("A", wr, StateHolding, 1), cl("B", wr, StateHolding, 2)}},
				histStep{clients: []ClientInfo{cl("A", wr, StateReleased, 4), cl("B", wr, StateHolding, 2)}},
			),
			want: []want{{"overlap", []int{2, 3}, []string{"A", "B"}, []string{"steps 2–3: A and B hold the lock at once"}}},
		},
		{
			name: "two exclusive holders",
			lock: ExclusiveLock,
			recs: hist(histStep{clients: []ClientInfo{cl("A", ex, StateHolding, 1), cl("B", ex, StateHolding, 1), cl("C", ex, StateWaiting, 1)}}),
			want: []want{{"overlap", []int{1}, []string{"A", "B"}, []string{"step 1: A and B hold the lock at once"}}},
		},
		{
			name: "a reader with a writer",
			lock: RW,
			recs: hist(histStep{clients: []ClientInfo{cl("R", rd, StateHolding, 1), cl("W", wr, StateHolding, 1)}}),
			want: []want{{"overlap", []int{1}, []string{"W", "R"}, []string{"step 1: writer W and reader R hold the lock at once"}}},
		},
		{
			// Both are Kind "overlap" with the same clients in consecutive
			// steps, but they are different breaches: two messages.
			name: "writer/writer then reader/writer: not merged",
			lock: RW,
			recs: hist(
				histStep{clients: []ClientInfo{cl("A", wr, StateHolding, 1), cl("B", wr, StateHolding, 1)}},
				histStep{clients: []ClientInfo{cl("A", wr, StateHolding, 1), cl("B", rd, StateHolding, 2)}},
			),
			want: []want{
				{"overlap", []int{1}, []string{"A", "B"}, []string{"step 1: A and B hold the lock at once"}},
				{"overlap", []int{2}, []string{"A", "B"}, []string{"step 2: writer A and reader B hold the lock at once"}},
			},
		},
		{
			name:   "leases at the limit: fine",
			lock:   LeaseLock,
			leases: 2,
			recs:   hist(histStep{clients: []ClientInfo{cl("A", ls, StateHolding, 1), cl("B", ls, StateHolding, 1), cl("C", ls, StateWaiting, 1)}}),
		},
		{
			name:   "more lease holders than leases",
			lock:   LeaseLock,
			leases: 2,
			recs: hist(
				histStep{clients: []ClientInfo{cl("A", ls, StateHolding, 1), cl("B", ls, StateHolding, 1)}},
				histStep{clients: []ClientInfo{cl("A", ls, StateHolding, 1), cl("B", ls, StateHolding, 1), cl("C", ls, StateHolding, 2)}},
			),
			want: []want{{"leases", []int{2}, []string{"A", "B", "C"}, []string{"step 2: 3 clients hold leases (A, B and C), but there are only 2"}}},
		},
		{
			name:    "stale write, fencing off",
			lock:    ExclusiveLock,
			fencing: false,
			recs: hist(
				histStep{clients: []ClientInfo{cl("A", ex, StateHolding, 1)}},
				histStep{clients: []ClientInfo{cl("A", ex, StateStale, 2), cl("B", ex, StateHolding, 2)}},
				histStep{clients: []ClientInfo{cl("A", ex, StateStale, 2), cl("B", ex, StateHolding, 2)}, events: []Event{write("A", 0x3e)}},
			),
			want: []want{{"unfenced-write", []int{2, 3}, []string{"A", "B"}, []string{
				"step 3: the protected resource accepted a write from A with token 0x3e, but A's session had expired at step 2 and B held it",
				"(fencing is off: the resource checks nothing)"}}},
		},
		{
			// Fencing on, but the new holder has not written: the resource
			// has seen no newer token and lets the stale one through.
			name:    "stale write, fencing on, before the new holder wrote",
			lock:    ExclusiveLock,
			fencing: true,
			recs: hist(
				histStep{clients: []ClientInfo{cl("A", ex, StateHolding, 1)}},
				histStep{clients: []ClientInfo{cl("A", ex, StateStale, 2), cl("B", ex, StateHolding, 2)}},
				histStep{clients: []ClientInfo{cl("A", ex, StateStale, 2), cl("B", ex, StateHolding, 2)}, events: []Event{write("A", 0x3e)}},
			),
			want: []want{{"unfenced-write", []int{2, 3}, []string{"A", "B"}, []string{
				"accepted a write from A with token 0x3e",
				"fencing is on, but the resource had not yet seen a token newer than 0x3e (B had not written yet), so it could not tell this one was stale"}}},
		},
		{
			name: "a holder's own write: fine",
			lock: ExclusiveLock,
			recs: hist(histStep{clients: []ClientInfo{cl("A", ex, StateHolding, 1)}, events: []Event{write("A", 0x10)}}),
		},
		{
			// A scene of two locks (ZooKeeper's deadlock): each lock's
			// holders are counted apart.
			name: "one holder on each of two locks: fine; two on one: overlap",
			lock: ExclusiveLock,
			recs: hist(
				histStep{clients: []ClientInfo{onLock(cl("A", ex, StateHolding, 1), "/a"), onLock(cl("B", ex, StateHolding, 1), "/b")}},
				histStep{clients: []ClientInfo{onLock(cl("A", ex, StateHolding, 1), "/a"), onLock(cl("B", ex, StateHolding, 1), "/b"), onLock(cl("C", ex, StateHolding, 2), "/b")}},
			),
			want: []want{{"overlap", []int{2}, []string{"B", "C"}, []string{"step 2: B and C hold the lock at once"}}},
		},
		{
			// An unfenced write in the middle does not split the overlap.
			name: "overlap across a stale write",
			lock: ExclusiveLock,
			recs: hist(
				histStep{clients: []ClientInfo{cl("A", ex, StateHolding, 1), cl("B", ex, StateHolding, 1), cl("C", ex, StateStale, 1)}},
				histStep{clients: []ClientInfo{cl("A", ex, StateHolding, 1), cl("B", ex, StateHolding, 1), cl("C", ex, StateStale, 1)}, events: []Event{write("C", 0x5)}},
				histStep{clients: []ClientInfo{cl("A", ex, StateHolding, 1), cl("B", ex, StateHolding, 1), cl("C", ex, StateStale, 1)}},
			),
			want: []want{
				{"overlap", []int{1, 2, 3}, []string{"A", "B"}, []string{"steps 1–3: A and B hold the lock at once"}},
				{"unfenced-write", []int{1, 2}, []string{"C", "A", "B"}, []string{"A and B held it"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkSafety(tt.recs, tt.lock, tt.leases, tt.fencing, "session had expired", zxid)
			if len(got) != len(tt.want) {
				t.Fatalf("%d violations, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				v := got[i]
				if v.Kind != w.kind || !slices.Equal(v.Steps, w.steps) || !slices.Equal(v.Clients, w.clients) {
					t.Errorf("violation %d: kind %s, steps %v, clients %v; want %s, %v, %v", i, v.Kind, v.Steps, v.Clients, w.kind, w.steps, w.clients)
				}
				for _, m := range w.msg {
					if !strings.Contains(v.Message, m) {
						t.Errorf("violation %d: message %q lacks %q", i, v.Message, m)
					}
				}
			}
		})
	}
}

// zxid words a token as ZooKeeper's narration does, in hex.
func zxid(t int64) string { return fmt.Sprintf("0x%x", t) }
