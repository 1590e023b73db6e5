package redislock

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/queuecost"
	"github.com/zklockviz/zklockviz/simulator"
)

// mastersAt describes each master of a state as name:client (name:- when
// empty, name:down when stopped), as the server reported them.
func mastersAt(s simulator.State) []string {
	if s.Servers == nil {
		return nil
	}
	var out []string
	for _, m := range s.Servers.Masters {
		switch {
		case !m.Up:
			out = append(out, m.Name+":down")
		case m.Client == "":
			out = append(out, m.Name+":-")
		default:
			out = append(out, m.Name+":"+m.Client)
		}
	}
	return out
}

// fiveMasters: the state carries all five masters, read from them: two
// down when C1 locks, then C1's copies on M1–M2 beside C2's on M3–M5, each
// with time left.
func fiveMasters(t *testing.T, st []simulator.State) {
	t.Helper()
	if got, want := mastersAt(st[0]), []string{"M1:-", "M2:-", "M3:-", "M4:-", "M5:-"}; !slices.Equal(got, want) {
		t.Errorf("masters before the first step: %v, want %v", got, want)
	}
	if got, want := mastersAt(st[3]), []string{"M1:C1", "M2:C1", "M3:C1", "M4:down", "M5:down"}; !slices.Equal(got, want) {
		t.Errorf("masters after C1 locks: %v, want %v", got, want)
	}
	if got, want := mastersAt(st[7]), []string{"M1:C1", "M2:C1", "M3:C2", "M4:C2", "M5:C2"}; !slices.Equal(got, want) {
		t.Errorf("masters after C2 locks: %v, want %v", got, want)
	}
	for _, m := range st[7].Servers.Masters {
		if m.LeftMs <= 0 || m.LeftMs > 10_000 {
			t.Errorf("%s: %d ms left, want within the 10000 ms expiry", m.Name, m.LeftMs)
		}
	}
}

// sawTooth: while C1 holds through two wait steps, the key's time to live
// falls and climbs back at each renewal, read by PTTL on the run's clock;
// C1's pause lets it run out and C2's key starts a fresh lease.
func sawTooth(t *testing.T, st []simulator.State) {
	t.Helper()
	sv := st[5].Servers
	if sv == nil || sv.TTLMs != 1500 {
		t.Fatalf("step 5: servers %+v, want the 1500 ms lease and its samples", sv)
	}
	rises, falls := 0, 0
	for i := 1; i < len(sv.TTL); i++ {
		a, b := sv.TTL[i-1], sv.TTL[i]
		if b.AtMs < a.AtMs {
			t.Fatalf("samples out of the run's order: %+v then %+v", a, b)
		}
		if b.LeftMs > sv.TTLMs {
			t.Errorf("sample %+v: more time left than the lease", b)
		}
		if a.Holder != "C1" || b.Holder != "C1" {
			continue
		}
		switch {
		case b.LeftMs > a.LeftMs+100:
			rises++
		case b.LeftMs < a.LeftMs:
			falls++
		}
	}
	if rises < 2 || falls < rises {
		t.Errorf("C1's ttl over %d samples: %d rises, %d falls; want a saw-tooth, renewed at least twice", len(sv.TTL), rises, falls)
	}
	var after []string
	for _, x := range st[6].Servers.TTL[len(sv.TTL):] {
		if len(after) == 0 || after[len(after)-1] != x.Holder {
			after = append(after, x.Holder)
		}
	}
	if !slices.Equal(after, []string{"C1", "", "C2"}) && !slices.Equal(after, []string{"C1", "C2"}) {
		t.Errorf("holders through C1's pause: %q, want C1's key to run out and C2's to follow", after)
	}
}

// giveUps: redsync's default waiters each give up after its 32 tries
// while H still holds, and the log, the narration and the clients say so.
func giveUps(t *testing.T, st []simulator.State) {
	t.Helper()
	var wait simulator.State
	for _, s := range st {
		if s.Action != nil && s.Action.Client == "R1" && s.Action.Action == ActWait {
			wait = s
		}
	}
	if wait.Action == nil {
		t.Fatal("no wait step of R1")
	}
	gave := map[string]string{}
	for _, e := range wait.Events {
		if e.Event == EvGiveUp {
			gave[e.Client] = e.Text
		}
	}
	for _, r := range []string{"R1", "R2", "R3"} {
		text := gave[r]
		if !strings.Contains(text, fmt.Sprintf("gave up after %d tries", redsyncTries)) || !strings.Contains(text, "ErrTaken") && !strings.Contains(text, "ErrFailed") ||
			!strings.Contains(text, "H still holds") {
			t.Errorf("%s's give-up: %q, want after %d tries, redsync's ErrTaken or ErrFailed, while H holds", r, text, redsyncTries)
		}
		c := clientOf(t, wait, r)
		if c.State != StateGaveUp || c.Retries != redsyncTries {
			t.Errorf("%s: %s after %d refused tries, want %s after %d", r, c.State, c.Retries, StateGaveUp, redsyncTries)
		}
	}
	if h := clientOf(t, wait, "H"); h.State != simulator.StateHolding || keyHolder(wait) != h.Node {
		t.Errorf("H %s, key holds %q: want H holding through the give-ups", h.State, keyHolder(wait))
	}
	if !strings.Contains(wait.Narration, "gave up after") {
		t.Errorf("narration %q does not tell the give-ups", wait.Narration)
	}
}

// measureQueue is what cmd wires in for scenario 7: real servers started
// by queuecost, counted by themselves.
func measureQueue(ctx context.Context, service string, n int, window time.Duration) (QueueResult, error) {
	r, err := queuecost.Measure(ctx, service, n, window)
	return QueueResult{Waiters: r.Waiters, Requests: r.Requests, Window: r.Window, Counter: r.Counter}, err
}

var (
	queueRate = regexp.MustCompile(`queued on (ZooKeeper|etcd) .*: (\d+\.\d) requests/s while nobody could acquire, against (\d+) commands/s`)
)

// queueCosts: the same waiters queued on ZooKeeper and on etcd cost their
// servers (by the servers' own counters) a small fraction of what polling
// costs Redis (by INFO commandstats).
func queueCosts(t *testing.T, st []simulator.State) {
	t.Helper()
	var seen []string
	for _, e := range st[len(st)-1].Events {
		if e.Event != EvQueueCost {
			continue
		}
		m := queueRate.FindStringSubmatch(e.Text)
		if m == nil {
			t.Errorf("queue cost: %q", e.Text)
			continue
		}
		seen = append(seen, m[1])
		queued, _ := strconv.ParseFloat(m[2], 64)
		spin, _ := strconv.ParseFloat(m[3], 64)
		t.Logf("%s: %.1f requests/s queued, Redis %.0f commands/s polling", m[1], queued, spin)
		if spin < 20*max(queued, 1) {
			t.Errorf("%s: %.1f requests/s with the waiters queued, Redis %.0f/s with them polling: want polling to cost at least 20 times more", m[1], queued, spin)
		}
	}
	if !slices.Equal(seen, []string{"ZooKeeper", "etcd"}) {
		t.Errorf("queue costs measured on %v, want ZooKeeper then etcd", seen)
	}
}
