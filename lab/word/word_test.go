package word

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lab"
)

var t0 = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// The clients' side.
func asked(ms int, c string) lab.Event { return lab.Event{At: at(ms), Client: c, Kind: lab.Requested} }
func got(ms int, c, holder string) lab.Event {
	return lab.Event{At: at(ms), Client: c, Kind: lab.Acquired, Holder: holder}
}
func did(ms int, c string, k lab.Kind) lab.Event { return lab.Event{At: at(ms), Client: c, Kind: k} }
func upSince(ms, since int) lab.Event {
	return lab.Event{At: at(ms), Client: lab.Server, Kind: lab.ServerUp, Since: at(since)}
}
func failedRel(ms int, c string) lab.Event {
	return lab.Event{At: at(ms), Client: c, Kind: lab.Released, Message: "release failed: the session expired"}
}

// The history's side.
func queued(ms int, node string, since int) history.Event {
	return history.Event{Time: at(ms), Kind: history.Queued, Node: node, Since: at(since)}
}
func acquired(ms int, node string, since int) history.Event {
	return history.Event{Time: at(ms), Kind: history.Acquired, Node: node, Since: at(since)}
}
func left(ms int, node string, how history.How) history.Event {
	return history.Event{Time: at(ms), Kind: history.Left, Node: node, How: how}
}
func unheld(ms int, node string) history.Event {
	return history.Event{Time: at(ms), Kind: history.Unheld, Node: node}
}
func conn(ms int, c string) history.Event {
	return history.Event{Time: at(ms), Kind: history.Connection, Connection: c}
}

// handoff is the ordinary run, as a watching reader records it: c1 holds
// by n1, lets go, c2 (waiting by n2 since it asked) takes over.
var handoff = struct {
	clients []lab.Event
	hist    []history.Event
}{
	clients: []lab.Event{
		asked(0, "c1"), got(10, "c1", "n1"), asked(20, "c2"),
		did(1600, "c1", lab.Released), asked(1601, "c1"), got(1610, "c2", "n2"),
		did(3200, "c2", lab.Released), asked(3201, "c2"),
	},
	hist: []history.Event{
		conn(-100, "connected"),
		queued(5, "n1", 5), acquired(12, "n1", 5), queued(25, "n2", 22),
		left(1605, "n1", history.Released), acquired(1605, "n2", 22),
		left(3210, "n2", history.Released),
	},
}

// edit is handoff's history with the event at i replaced by evs (none:
// deleted), or evs added when i is -1, in time order as the store keeps
// them.
func edit(i int, evs ...history.Event) []history.Event {
	h := slices.Clone(handoff.hist)
	if i < 0 {
		h = append(h, evs...)
	} else {
		h = slices.Concat(h[:i], evs, h[i+1:])
	}
	slices.SortStableFunc(h, func(a, b history.Event) int { return a.Time.Compare(b.Time) })
	return h
}

func TestCheck(t *testing.T) {
	watching := Watching(3 * time.Second)
	polling := Polling(time.Second, 0)
	polling.Reused = true // a PostgreSQL backend's pid
	for _, tc := range []struct {
		name    string
		clients []lab.Event
		hist    []history.Event
		b       Bounds
		want    []Rule // the rules the mismatches break, in time order
		checked int
	}{
		{"the hand-off as it happened", handoff.clients, handoff.hist, watching, nil, 2},
		{"a hold moved before its request", handoff.clients, edit(1, queued(-450, "n1", -450), acquired(-400, "n1", -450)), watching, []Rule{Start}, 2},
		{"a hold moved past its acquisition", handoff.clients, edit(5, acquired(2300, "n2", 22)), watching, []Rule{Start}, 2},
		{"a release moved past its poll", handoff.clients, edit(4, left(2300, "n1", history.Released)), watching, []Rule{End}, 2},
		{"a release moved before the client let go", handoff.clients, edit(4, left(900, "n1", history.Released)), watching, []Rule{End}, 2},
		{"a clean release recorded as expired", handoff.clients, edit(4, left(1605, "n1", history.Expired)), watching, []Rule{End}, 2},
		{"a release never recorded", handoff.clients, edit(4), watching, []Rule{End}, 2},
		{"a grant recorded twice", handoff.clients, edit(-1, left(800, "n1", history.Released), queued(810, "n1", 810), acquired(820, "n1", 810)),
			watching, []Rule{End, Once}, 2},
		{"a grant recorded under another holder", handoff.clients, edit(5, acquired(1605, "n9", 22), queued(25, "n9", 22)), watching, []Rule{Once}, 2},
		{"a grant not recorded", handoff.clients, edit(5), watching, []Rule{Once}, 2},
		{"a wait recorded longer than the client's", handoff.clients, edit(5, acquired(1605, "n2", -3000)), watching, []Rule{Waited}, 2},
		{"a release recorded unseen with no gap", handoff.clients, edit(4, left(1605, "n1", history.Unseen)), watching, []Rule{End}, 2},
		{"a hold nobody asked for", handoff.clients[:4], edit(-1, queued(2000, "n7", 2000), acquired(2000, "n7", 2000)), watching, []Rule{NoGrant}, 1},
		{"a grant too short to be read", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(40, "c1", lab.Released), asked(41, "c1")},
			[]history.Event{conn(-100, "connected")}, polling, nil, 0},
		{"a short grant read all the same", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(40, "c1", lab.Released), asked(41, "c1")},
			[]history.Event{conn(-100, "connected"), queued(30, "n1", 30), acquired(30, "n1", 30), left(1030, "n1", history.Released)}, polling, nil, 1},
		{"a killed holder's hold ends with its session", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(500, "c1", lab.Killed), asked(510, "c2"), got(3400, "c2", "n2")},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), queued(515, "n2", 510),
				left(3390, "n1", history.Expired), acquired(3390, "n2", 510)}, watching, nil, 2},
		{"a killed holder's hold outlives its session", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(500, "c1", lab.Killed)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(5000, "n1", history.Expired)}, watching, []Rule{End}, 1},
		{"a paused holder's lease runs out while it believes", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(100, "c1", lab.Paused),
			did(2600, "c1", lab.Resumed), did(2610, "c1", lab.Lost), failedRel(2611, "c1")},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(1200, "n1", history.Expired)}, watching, nil, 1},
		{"a paused holder's hold recorded past what it learnt", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(100, "c1", lab.Paused),
			did(2600, "c1", lab.Resumed), did(2610, "c1", lab.Lost), failedRel(2611, "c1")},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(3400, "n1", history.Expired)}, watching, []Rule{End}, 1},
		{"a paused client's release reaches the server when it resumes", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(600, "c1", lab.Released),
			did(601, "c1", lab.Paused), did(3000, "c1", lab.Resumed), asked(3001, "c1")},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(3100, "n1", history.Released)}, watching, nil, 1},
		{"a killed waiter's grant it never told", []lab.Event{asked(0, "c1"), did(500, "c1", lab.Killed)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(490, "n1", 5), left(900, "n1", history.Released)}, watching, nil, 0},
		{"a killed waiter's node granted before its session ends", []lab.Event{asked(0, "c1"), did(500, "c1", lab.Killed)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(2900, "n1", 5), left(3300, "n1", history.Expired)}, watching, nil, 0},
		{"a killed waiter's node granted after its session ended", []lab.Event{asked(0, "c1"), did(500, "c1", lab.Killed)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(4200, "n1", 5), left(4300, "n1", history.Expired)}, watching, []Rule{NoGrant}, 0},
		{"one backend's grants between two reads are one hold", []lab.Event{
			asked(0, "c1"), got(10, "c1", "pid-1"), did(40, "c1", lab.Released), asked(41, "c1"),
			got(90, "c1", "pid-1"), did(120, "c1", lab.Released), asked(121, "c1"),
			got(170, "c1", "pid-1"), did(1400, "c1", lab.Released), asked(1401, "c1")},
			[]history.Event{conn(-100, "connected"), queued(30, "pid-1", 30), acquired(30, "pid-1", 30), left(2030, "pid-1", history.Released)}, polling, nil, 3},
		{"one backend's hold recorded through a pause a read would have seen", []lab.Event{
			asked(0, "c1"), got(10, "c1", "pid-1"), did(40, "c1", lab.Released), asked(41, "c1"),
			got(3000, "c1", "pid-1"), did(3030, "c1", lab.Released), asked(3031, "c1")},
			[]history.Event{conn(-100, "connected"), queued(30, "pid-1", 30), acquired(30, "pid-1", 30), left(4030, "pid-1", history.Released)}, polling, []Rule{End}, 1},
		{"a backend's wait spans its own unseen grants", []lab.Event{
			asked(0, "c1"), got(10, "c1", "pid-1"), did(40, "c1", lab.Released), asked(41, "c1"),
			got(1900, "c1", "pid-1"), did(2400, "c1", lab.Released), asked(2401, "c1")},
			[]history.Event{conn(-100, "connected"), queued(1030, "pid-1", 1), acquired(2030, "pid-1", 1), left(3030, "pid-1", history.Released)}, polling, nil, 1},
		// A backend whose client was paused while it waited holds on the
		// server from the hand-over, long before its client can tell.
		{"a paused waiter's backend read holding before its client could tell", pausedWaiterLate,
			[]history.Event{conn(-100, "connected"), queued(1100, "pid-1", 45), acquired(1100, "pid-1", 45), unheld(3300, "pid-1")}, polling, nil, 1},
		{"a paused waiter's backend read holding past its client's release", pausedWaiterLate,
			[]history.Event{conn(-100, "connected"), queued(1100, "pid-1", 45), acquired(1100, "pid-1", 45), unheld(4700, "pid-1")}, polling, []Rule{End}, 1},
		{"a backend read holding through its client's pause while it waited", pausedWaiter,
			[]history.Event{conn(-100, "connected"), queued(30, "pid-1", 30), acquired(30, "pid-1", 30), unheld(3300, "pid-1")}, polling, nil, 2},
		{"a backend read holding through its client's pause while it waited, and past its release", pausedWaiter,
			[]history.Event{conn(-100, "connected"), queued(30, "pid-1", 30), acquired(30, "pid-1", 30), unheld(4700, "pid-1")}, polling, []Rule{End}, 2},
		{"a backend read holding on for its client's next request, paused and stopped untold", pausedWaiter[:5],
			[]history.Event{conn(-100, "connected"), queued(30, "pid-1", 30), acquired(30, "pid-1", 30), unheld(3300, "pid-1")}, polling, nil, 1},
		{"a backend read holding on for its client's next request, killed untold, past the kill", append(slices.Clone(pausedWaiter[:5]), did(1500, "c1", lab.Killed)),
			[]history.Event{conn(-100, "connected"), queued(30, "pid-1", 30), acquired(30, "pid-1", 30), unheld(3300, "pid-1")}, polling, []Rule{End}, 1},
		{"a clean release read as expired when the TTL may have run out first", []lab.Event{asked(0, "c1"), got(10, "c1", "c1:1"), did(600, "c1", lab.Released), asked(601, "c1")},
			[]history.Event{conn(-100, "connected"), queued(30, "c1:1", 30), acquired(30, "c1:1", 30), left(1030, "c1:1", history.Expired)},
			Polling(time.Second, time.Second), nil, 1},
		{"a clean release read as expired before the TTL could run out", []lab.Event{asked(0, "c1"), got(10, "c1", "c1:1"), did(600, "c1", lab.Released), asked(601, "c1")},
			[]history.Event{conn(-100, "connected"), queued(30, "c1:1", 30), acquired(30, "c1:1", 30), left(1030, "c1:1", history.Expired)},
			Polling(time.Second, 5*time.Second), []Rule{End}, 1},
		{"a clean release read as expired within a read's round trip of the TTL's end", []lab.Event{asked(0, "c1"), got(3, "c1", "c1:1"), did(20, "c1", lab.Released), asked(21, "c1")},
			[]history.Event{conn(-100, "connected"), queued(5, "c1:1", 5), acquired(5, "c1:1", 5), left(950, "c1:1", history.Expired)},
			withLeaseSlack(Polling(time.Second, time.Second)), nil, 1},
		{"a clean release read as expired longer than a round trip before the TTL's end", []lab.Event{asked(0, "c1"), got(3, "c1", "c1:1"), did(20, "c1", lab.Released), asked(21, "c1")},
			[]history.Event{conn(-100, "connected"), queued(5, "c1:1", 5), acquired(5, "c1:1", 5), left(850, "c1:1", history.Expired)},
			withLeaseSlack(Polling(time.Second, time.Second)), []Rule{End}, 1},
		{"a release just before the server went down, the history ending in the outage's gap", []lab.Event{asked(0, "c1"), got(10, "c1", "c1:1"),
			did(600, "c1", lab.Released), asked(601, "c1"), did(900, lab.Server, lab.ServerDown)},
			[]history.Event{conn(-100, "connected"), queued(30, "c1:1", 30), acquired(30, "c1:1", 30), conn(1500, "reconnecting")},
			Polling(time.Second, time.Second), nil, 1},
		{"a release a read should have seen, the history ending in a later gap", []lab.Event{asked(0, "c1"), got(10, "c1", "c1:1"),
			did(600, "c1", lab.Released), asked(601, "c1"), did(3500, lab.Server, lab.ServerDown)},
			[]history.Event{conn(-100, "connected"), queued(30, "c1:1", 30), acquired(30, "c1:1", 30), conn(4000, "reconnecting")},
			Polling(time.Second, time.Second), []Rule{End}, 1},
		{"a release failed as the server died, stamped just before the kill: kept through the outage", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"),
			failedRel(795, "c1"), did(800, lab.Server, lab.ServerDown), did(3000, lab.Server, lab.ServerUp)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), conn(900, "reconnecting"), conn(3200, "connected"),
				left(3900, "n1", history.Expired)}, Watching(time.Second), nil, 1},
		{"a hold kept through two outages, the second before its session ran out", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"),
			did(800, lab.Server, lab.ServerDown), failedRel(900, "c1"), did(3000, lab.Server, lab.ServerUp),
			did(3500, lab.Server, lab.ServerDown), did(5000, lab.Server, lab.ServerUp)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), conn(900, "reconnecting"), conn(3200, "connected"),
				conn(3600, "reconnecting"), conn(5200, "connected"), left(5800, "n1", history.Expired)}, Watching(time.Second), nil, 1},
		{"a hold kept through two outages, recorded past its session after the second", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"),
			did(800, lab.Server, lab.ServerDown), failedRel(900, "c1"), did(3000, lab.Server, lab.ServerUp),
			did(3500, lab.Server, lab.ServerDown), did(5000, lab.Server, lab.ServerUp)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), conn(900, "reconnecting"), conn(3200, "connected"),
				conn(3600, "reconnecting"), conn(5200, "connected"), left(6800, "n1", history.Expired)}, Watching(time.Second), []Rule{End}, 1},
		{"a waiter's node granted after the restart though its acquire failed in the outage", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), asked(20, "c2"),
			did(800, lab.Server, lab.ServerDown), failedRel(810, "c1"),
			{At: at(1500), Client: "c2", Kind: lab.Failed, Message: "acquire: zk: could not connect to a server"}, did(3000, lab.Server, lab.ServerUp)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), queued(25, "n2", 22), conn(900, "reconnecting"), conn(3100, "connected"),
				left(3100, "n1", history.Unseen), acquired(3100, "n2", 22), left(3180, "n2", history.Released)}, Watching(time.Second), nil, 1},
		{"a waiter's node granted long after the restart, its acquire failed in the outage", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), asked(20, "c2"),
			did(800, lab.Server, lab.ServerDown), failedRel(810, "c1"),
			{At: at(1500), Client: "c2", Kind: lab.Failed, Message: "acquire: zk: could not connect to a server"}, did(3000, lab.Server, lab.ServerUp)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), queued(25, "n2", 22), conn(900, "reconnecting"), conn(3100, "connected"),
				left(3100, "n1", history.Unseen), acquired(5000, "n2", 22), left(5080, "n2", history.Released)}, Watching(time.Second), []Rule{NoGrant}, 1},
		{"a lease the restart renewed outlives the client that learnt it lost", []lab.Event{asked(0, "c1"), did(100, lab.Server, lab.ServerDown),
			did(2000, lab.Server, lab.ServerUp), got(2100, "c1", "n1"), did(2101, "c1", lab.Lost), failedRel(2110, "c1")},
			[]history.Event{conn(-100, "connected"), conn(200, "reconnecting"), conn(2050, "connected"), queued(2090, "n1", 2090), acquired(2090, "n1", 2090),
				left(3200, "n1", history.Expired)}, Watching(time.Second), nil, 1},
		{"a killed holder's hold kept through the outage that followed the kill", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(500, "c1", lab.Killed),
			did(510, lab.Server, lab.ServerDown), did(3000, lab.Server, lab.ServerUp)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), conn(600, "reconnecting"), conn(3100, "connected"),
				left(3900, "n1", history.Expired)}, Watching(time.Second), nil, 1},
		{"a killed holder's hold recorded past its session after the outage", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(500, "c1", lab.Killed),
			did(510, lab.Server, lab.ServerDown), did(3000, lab.Server, lab.ServerUp)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), conn(600, "reconnecting"), conn(3100, "connected"),
				left(4700, "n1", history.Expired)}, Watching(time.Second), []Rule{End}, 1},
		{"a killed holder's outage after its session ran out keeps nothing", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(500, "c1", lab.Killed),
			did(2000, lab.Server, lab.ServerDown), did(3000, lab.Server, lab.ServerUp)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), conn(2100, "reconnecting"), conn(3100, "connected"),
				left(3100, "n1", history.Unseen)}, Watching(time.Second), []Rule{End}, 1},
		{"a paused holder's lease ran out, and its clean release came after", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(100, "c1", lab.Paused),
			did(2600, "c1", lab.Resumed), did(2610, "c1", lab.Released), asked(2611, "c1")},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(1200, "n1", history.Expired)}, Watching(time.Second), nil, 1},
		{"a holder never silenced, its hold recorded ending before its clean release", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"),
			did(2610, "c1", lab.Released), asked(2611, "c1")},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(1200, "n1", history.Expired)}, Watching(time.Second), []Rule{End}, 1},
		{"a release that failed with no fault (a connection lost under load): the session ends the hold", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"),
			failedRel(400, "c1"), asked(410, "c1")},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(1300, "n1", history.Expired)},
			Watching(time.Second), nil, 1},
		{"a reader served by the restarted server before the lab saw it answer", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(400, "c1", lab.Released), asked(410, "c1"),
			did(1000, lab.Server, lab.ServerDown), upSince(5000, 4000)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(405, "n1", history.Released),
				conn(1100, "reconnecting"), conn(4600, "connected")}, Watching(time.Second), nil, 1},
		{"a gap that ends before the server was started again", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(400, "c1", lab.Released), asked(410, "c1"),
			did(1000, lab.Server, lab.ServerDown), upSince(5000, 4000)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(405, "n1", history.Released),
				conn(1100, "reconnecting"), conn(3600, "connected")}, Watching(time.Second), []Rule{Outage}, 1},
		{"an etcd client that judged its lease lost by its own clock, the server revoking it after", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"),
			did(2000, "c1", lab.Lost), failedRel(2001, "c1")},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(3200, "n1", history.Expired)},
			Bounds{Resolution: Slack, Delay: Slack, Early: Early, Session: 2 * time.Second, LostLag: 833 * time.Millisecond}, nil, 1},
		{"a ZooKeeper client told of its session's expiry, the node recorded gone long after", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"),
			did(2000, "c1", lab.Lost), failedRel(2001, "c1")},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(3200, "n1", history.Expired)},
			Watching(2 * time.Second), []Rule{End}, 1},
		{"an etcd session's key held on as its next request, cut off and never told granted", []lab.Event{asked(0, "c1"), got(10, "c1", "k1"),
			did(400, "c1", lab.Released), asked(410, "c1"), did(500, "c1", lab.Cut),
			{At: at(1900), Client: "c1", Kind: lab.Failed, Message: "acquire: mutex: session is expired"}},
			[]history.Event{conn(-100, "connected"), queued(5, "k1", 5), acquired(12, "k1", 5), left(1600, "k1", history.Expired)},
			Bounds{Resolution: Slack, Delay: Slack, Early: Early, Session: time.Second, Reused: true}, nil, 1},
		{"a ZooKeeper node's name is not reused: its hold does not go on as the next request", []lab.Event{asked(0, "c1"), got(10, "c1", "k1"),
			did(400, "c1", lab.Released), asked(410, "c1"), did(500, "c1", lab.Cut),
			{At: at(1900), Client: "c1", Kind: lab.Failed, Message: "acquire: zk: session expired"}},
			[]history.Event{conn(-100, "connected"), queued(5, "k1", 5), acquired(12, "k1", 5), left(1600, "k1", history.Expired)},
			Watching(time.Second), []Rule{End}, 1},
		{"a release that failed while cut off: the TTL ends the hold", []lab.Event{asked(0, "c1"), got(10, "c1", "c1:1"), did(300, "c1", lab.Cut),
			failedRel(400, "c1"), did(1300, "c1", lab.Healed), asked(1310, "c1")},
			[]history.Event{conn(-100, "connected"), queued(30, "c1:1", 30), acquired(30, "c1:1", 30), left(2000, "c1:1", history.Expired)},
			Polling(time.Second, time.Second), nil, 1},
		{"a release cut off on its way: the lease ends the hold", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"),
			failedRel(500, "c1"), did(505, "c1", lab.Cut), asked(506, "c1"), did(3000, "c1", lab.Healed)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(1400, "n1", history.Expired)},
			Watching(2 * time.Second), nil, 1},
		{"a release cut off on its way, recorded past its lease", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"),
			failedRel(500, "c1"), did(505, "c1", lab.Cut), asked(506, "c1"), did(3000, "c1", lab.Healed)},
			[]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), left(3200, "n1", history.Expired)},
			Watching(2 * time.Second), []Rule{End}, 1},
		{"a grant told just after a cut, its release failing: the TTL ends the hold", []lab.Event{asked(0, "c1"), did(5, "c1", lab.Cut),
			got(10, "c1", "c1:1"), failedRel(40, "c1"), asked(41, "c1"), did(1000, "c1", lab.Healed)},
			[]history.Event{conn(-100, "connected"), queued(30, "c1:1", 30), acquired(30, "c1:1", 30), left(2000, "c1:1", history.Expired)},
			Polling(time.Second, time.Second), nil, 1},
		{"a grant told after the heal, its release failing: recorded past its TTL", []lab.Event{asked(0, "c1"), did(5, "c1", lab.Cut),
			did(8, "c1", lab.Healed), got(10, "c1", "c1:1"), failedRel(40, "c1"), asked(41, "c1")},
			[]history.Event{conn(-100, "connected"), queued(30, "c1:1", 30), acquired(30, "c1:1", 30), left(3000, "c1:1", history.Expired)},
			Polling(time.Second, time.Second), []Rule{End}, 1},
		{"a release that failed while cut off, recorded past its TTL", []lab.Event{asked(0, "c1"), got(10, "c1", "c1:1"), did(300, "c1", lab.Cut),
			failedRel(400, "c1"), did(1300, "c1", lab.Healed), asked(1310, "c1")},
			[]history.Event{conn(-100, "connected"), queued(30, "c1:1", 30), acquired(30, "c1:1", 30), left(3200, "c1:1", history.Expired)},
			Polling(time.Second, time.Second), []Rule{End}, 1},
		// Redis restarted empty once a second: the token counter goes back
		// with the keys, and c1:5 is met again, an open request's.
		{"a Redis token met again after empty restarts", emptyRestarts(asked(41, "c1")),
			[]history.Event{conn(-100, "connected"), queued(3000, "c1:5", 3000), acquired(3000, "c1:5", 3000), left(3900, "c1:5", history.Expired)},
			emptyRedis, nil, 0},
		{"a Redis token met again after empty restarts, nobody asking", emptyRestarts(lab.Event{At: at(41), Client: "c1", Kind: lab.Failed, Message: "acquire: EOF"}),
			[]history.Event{conn(-100, "connected"), queued(3000, "c1:5", 3000), acquired(3000, "c1:5", 3000), left(3900, "c1:5", history.Expired)},
			emptyRedis, []Rule{NoGrant}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.clients, tc.hist, tc.b, at(10_000))
			var rules []Rule
			for _, m := range r.Mismatches {
				rules = append(rules, m.Rule)
			}
			if !slices.Equal(rules, tc.want) || r.Checked != tc.checked {
				t.Errorf("mismatches %v, %d checked; want %v, %d checked\n%s", rules, r.Checked, tc.want, tc.checked, r)
			}
		})
	}
}

// pausedWaiter: c1's backend let go, asked again at once, and c1 was
// paused while it waited; pausedWaiterLate the same, paused later.
var (
	pausedWaiter = []lab.Event{asked(0, "c1"), got(10, "c1", "pid-1"), did(40, "c1", lab.Released), asked(41, "c1"), did(100, "c1", lab.Paused),
		did(3000, "c1", lab.Resumed), got(3001, "c1", "pid-1"), did(3025, "c1", lab.Released), asked(3026, "c1")}
	pausedWaiterLate = []lab.Event{asked(0, "c1"), got(10, "c1", "pid-1"), did(30, "c1", lab.Released), asked(40, "c1"), did(500, "c1", lab.Paused),
		did(3000, "c1", lab.Resumed), got(3002, "c1", "pid-1"), did(3025, "c1", lab.Released), asked(3026, "c1")}
)

// withLeaseSlack is b with Redis's slack on a key's TTL's end (history's
// pttlSlack).
func withLeaseSlack(b Bounds) Bounds {
	b.LeaseSlack = 100 * time.Millisecond
	return b
}

// emptyRedis are the bounds of a Redis reader whose server comes back
// empty from an outage (the lab's, without persistence).
var emptyRedis = Bounds{Resolution: 1500 * time.Millisecond, Delay: 1500 * time.Millisecond, Early: Early, Session: time.Second, Empty: true}

// emptyRestarts: c1 holds c1:5 when Redis restarts, its release fails,
// then what it does next (then), and Redis restarts every second after.
func emptyRestarts(then lab.Event) []lab.Event {
	return []lab.Event{asked(0, "c1"), got(10, "c1", "c1:5"), did(20, lab.Server, lab.ServerDown), failedRel(30, "c1"), did(40, lab.Server, lab.ServerUp),
		then, did(1020, lab.Server, lab.ServerDown), did(1040, lab.Server, lab.ServerUp), did(2020, lab.Server, lab.ServerDown), did(2040, lab.Server, lab.ServerUp)}
}

// The server's outages: nothing is recorded as released, expired or
// acquired while it was down, and each outage is a gap in the history.
func TestOutages(t *testing.T) {
	clients := []lab.Event{
		asked(0, "c1"), got(10, "c1", "n1"), did(800, lab.Server, lab.ServerDown), did(3000, lab.Server, lab.ServerUp),
		did(3100, "c1", lab.Lost), failedRel(3101, "c1"), asked(3102, "c1"),
	}
	gap := []history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), conn(900, "reconnecting"), conn(3200, "connected")}
	for _, tc := range []struct {
		name string
		hist []history.Event
		want []Rule
	}{
		{"the outage is a gap, the node gone unseen after it", append(slices.Clone(gap), left(3200, "n1", history.Unseen)), nil},
		{"the node gone unseen after a reader back later than the client learnt", append(slices.Clone(gap[:4]), conn(5000, "connected"), left(5000, "n1", history.Unseen)), nil},
		{"the node gone unseen after a gap that began after the server surely let go", append(slices.Clone(gap[:3]), conn(5000, "reconnecting"), conn(6000, "connected"), left(6000, "n1", history.Unseen)),
			[]Rule{Outage, End}},
		{"a release recorded during the outage", append(slices.Clone(gap[:3]), left(1500, "n1", history.Released)), []Rule{Outage, Outage}},
		{"an expiry recorded during the outage, in a gap", append(slices.Clone(gap[:4]), left(1500, "n1", history.Expired), gap[4]), []Rule{Outage}},
		{"an acquisition recorded during the outage", append(slices.Clone(gap), queued(1600, "n2", 1600), acquired(1600, "n2", 1600), left(3200, "n1", history.Unseen)),
			[]Rule{NoGrant, Outage}},
		{"the node gone after the restart, when its session ran out", append(slices.Clone(gap), left(3900, "n1", history.Expired)), nil},
		{"the node gone after the restart, later than its session", append(slices.Clone(gap), left(4700, "n1", history.Expired)), []Rule{End}},
		{"the gap begins as the killed server's connections close, a moment after the stamp", append(slices.Clone(gap[:3]), conn(1450, "reconnecting"), conn(3200, "connected"), left(3200, "n1", history.Unseen)), nil},
		{"the gap begins too long after the server went down", append(slices.Clone(gap[:3]), conn(1700, "reconnecting"), conn(3200, "connected"), left(3200, "n1", history.Unseen)), []Rule{Outage}},
		{"no gap over the outage", append(slices.Clone(gap[:3]), left(3200, "n1", history.Expired)), []Rule{Outage}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(clients, tc.hist, Watching(time.Second), at(10_000))
			var rules []Rule
			for _, m := range r.Mismatches {
				rules = append(rules, m.Rule)
			}
			if !slices.Equal(rules, tc.want) || r.Outages != 1 {
				t.Errorf("mismatches %v over %d outages; want %v over 1\n%s", rules, r.Outages, tc.want, r)
			}
		})
	}
}

// BenchmarkCheck checks 10,000 lock operations: three clients taking
// turns by unique names, as a watching reader records them.
func BenchmarkCheck(b *testing.B) {
	const ops = 10_000
	clients := []lab.Event{}
	hist := []history.Event{conn(-100, "connected")}
	for i := range ops {
		c, node := fmt.Sprintf("c%d", i%3+1), fmt.Sprintf("n%d", i)
		start := i * 30
		clients = append(clients, asked(start-20, c), got(start+2, c, node), did(start+25, c, lab.Wrote), did(start+26, c, lab.Released))
		hist = append(hist, queued(start-15, node, start-15), acquired(start+1, node, start-15), left(start+27, node, history.Released))
	}
	b.ResetTimer()
	for b.Loop() {
		if r := Check(clients, hist, Watching(time.Second), at(ops*30+1000)); len(r.Mismatches) != 0 || r.Checked != ops {
			b.Fatalf("%d checked, mismatches %v", r.Checked, r.Mismatches[:min(3, len(r.Mismatches))])
		}
	}
}

// The report's words: how many grants were checked, how many mismatches,
// and each mismatch on a line of its own.
func TestResultString(t *testing.T) {
	r := Check(handoff.clients, edit(4, left(1605, "n1", history.Expired)), Watching(3*time.Second), at(10_000))
	got := r.String()
	want := "zklockviz's word: 2 grants checked, 1 mismatches\n" +
		"mismatch: 03:00:01.605 end: c1 (n1): recorded as expired at 03:00:01.605, before its lease of 3s could have run out; the client released at 03:00:01.600\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
