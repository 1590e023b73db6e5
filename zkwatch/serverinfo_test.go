package zkwatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zkwatch/fourlw"
)

// fourLetter sends cmd to the client port at addr and returns the reply.
func fourLetter(ctx context.Context, addr, cmd string) (string, error) {
	return fourlw.Ask(ctx, addr, cmd, nil)
}

// checkReply turns the server's refusals into errors.
var checkReply = fourlw.CheckReply

// Samples captured from ZooKeeper 3.8.0 (Debian's package) via zklocal.
const (
	sampleWchp = "/nothere\n\t0x10000914f2e0000\n/l/W_0000000000\n\t0x10000914f2e0000\n/l/W_0000000001\n\t0x10000914f2e0001\n\n"
	sampleWchc = "0x10000914f2e0000\n\t/nothere\n\t/l/W_0000000000\n0x10000914f2e0001\n\t/l/W_0000000001\n\n"
	sampleCons = " /127.0.0.1:55470[1](queued=0,recved=4,sent=4,sid=0x10000914f2e0000,lop=EXIS,est=1795339969834,to=5000,lcxid=0x3,lzxid=0x5,lresp=9524158,llat=1,minlat=0,avglat=2,maxlat=5)\n" +
		" /127.0.0.1:55468[1](queued=0,recved=5,sent=5,sid=0x10000914f2e0001,lop=GETD,est=1795339969834,to=5000,lcxid=0x4,lzxid=0x5,lresp=9524162,llat=2,minlat=0,avglat=3,maxlat=8)\n" +
		" /127.0.0.1:55500[0](queued=0,recved=1,sent=0)\n\n"
	sampleDumpLeader = "SessionTracker dump:\nSession Sets (2)/(2):\n0 expire at Sun Nov 22 09:32:54 UTC 2026:\n2 expire at Sun Nov 22 09:32:55 UTC 2026:\n\t0x10000914f2e0000\n\t0x10000914f2e0001\n" +
		"ephemeral nodes dump:\nSessions with Ephemerals (2):\n0x10000914f2e0001:\n\t/l/W_0000000000\n0x10000914f2e0000:\n\t/l/W_0000000001\n" +
		"Connections dump:\nConnections Sets (2)/(3):\n2 expire at Sun Nov 22 09:32:56 UTC 2026:\n\tip: /127.0.0.1:55470 sessionId: 0x10000914f2e0000\n\tip: /127.0.0.1:55468 sessionId: 0x10000914f2e0001\n1 expire at Sun Nov 22 09:33:06 UTC 2026:\n\tip: /127.0.0.1:55504 sessionId: 0x0\n"
	sampleDumpFollower = "SessionTracker dump:\nGlobal Sessions(1):\n0x100009c52e60000\t5000ms\nephemeral nodes dump:\nSessions with Ephemerals (0):\n" +
		"Connections dump:\nConnections Sets (2)/(2):\n0 expire at Sun Nov 22 09:44:56 UTC 2026:\n2 expire at Sun Nov 22 09:45:06 UTC 2026:\n\tip: /127.0.0.1:36478 sessionId: 0x100009c52e60000\n\tip: /127.0.0.1:36484 sessionId: 0x0\n"
	sampleMntr        = "zk_version\t3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\nzk_server_state\tstandalone\nzk_watch_count\t4\nzk_ephemerals_count\t2\n"
	sampleNotListed   = "wchp is not executed because it is not in the whitelist.\n"
	sampleAdminWatchs = `{
  "session_id_to_watched_paths" : {
    "72058218136600576" : [ "/nothere", "/l/W_0000000000" ],
    "72058218136600577" : [ "/l/W_0000000001" ]
  },
  "command" : "watches",
  "error" : null
}`
	sampleAdminConns = `{
  "connections" : [ {
    "remote_socket_address" : "127.0.0.1:33074",
    "session_id" : 72058218136600577,
    "last_operation" : "GETD",
    "last_response_time" : 9685469
  }, {
    "remote_socket_address" : "127.0.0.1:33082",
    "session_id" : 72058218136600576,
    "last_response_time" : 9685463
  } ],
  "secure_connections" : [ ],
  "command" : "connections",
  "error" : null
}`
	sampleAdminDump = `{
  "expiry_time_to_session_ids" : {
    "9689600" : [ ],
    "9690600" : [ 72058218136600576, 72058218136600577 ]
  },
  "session_id_to_ephemeral_paths" : {
    "72058218136600576" : [ "/l/W_0000000001" ]
  },
  "command" : "dump",
  "error" : null
}`
	sampleAdminMonitor    = `{"version":"3.8.0","server_state":"standalone","watch_count":4,"command":"monitor","error":null}`
	sampleAdminNotServing = `{"command" : "watches", "error" : "This ZooKeeper instance is not currently serving requests"}`
)

// 0x10000914f2e0000 and 0x10000914f2e0001 are 72058218136600576 and
// 72058218136600577: above 2^53, where float64 would merge them.
const sessA, sessB = int64(0x10000914f2e0000), int64(0x10000914f2e0001)

func TestParseSamples(t *testing.T) {
	watches := map[int64][]string{sessA: {"/nothere", "/l/W_0000000000"}, sessB: {"/l/W_0000000001"}}
	at := func(s string) time.Time {
		v, err := time.ParseInLocation(dumpTime, s, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name  string
		parse func() (any, error)
		want  any
	}{
		{"wchp", func() (any, error) { return parseWchp(sampleWchp) }, watches},
		{"wchc", func() (any, error) { return parseWchc(sampleWchc) }, watches},
		{"wchp empty", func() (any, error) { return parseWchp("\n\n") }, map[int64][]string{}},
		{"cons", func() (any, error) { return parseCons(sampleCons) }, map[int64]bool{sessA: true, sessB: true}},
		{"dump leader", func() (any, error) { return parseDump(sampleDumpLeader, at("Sun Nov 22 09:32:50 UTC 2026")) },
			map[int64]time.Time{sessA: at("Sun Nov 22 09:32:55 UTC 2026"), sessB: at("Sun Nov 22 09:32:55 UTC 2026")}},
		{"dump follower tells no expiry", func() (any, error) { return parseDump(sampleDumpFollower, at("Sun Nov 22 09:32:50 UTC 2026")) }, map[int64]time.Time{}},
		{"mntr watch count", func() (any, error) {
			kv, err := parseMntr(sampleMntr)
			return kv["zk_watch_count"], err
		}, "4"},
		{"admin watches", func() (any, error) { return parseAdminWatches(strings.NewReader(sampleAdminWatchs)) }, watches},
		{"admin connections", func() (any, error) {
			c, clock, err := parseAdminConnections(strings.NewReader(sampleAdminConns))
			return []any{c, clock}, err
		}, []any{map[int64]bool{sessA: true, sessB: true}, int64(9685469)}},
		{"admin dump on the server's elapsed clock", func() (any, error) {
			now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
			d, err := parseAdminDump(strings.NewReader(sampleAdminDump), 9685469, now)
			return d[sessB].Sub(now), err
		}, 5131 * time.Millisecond},
		{"admin monitor", func() (any, error) {
			n, _, _, err := parseAdminMonitor(strings.NewReader(sampleAdminMonitor))
			return n, err
		}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	tests := []struct {
		name  string
		parse func() error
	}{
		{"wchp session before path", func() error { _, err := parseWchp("\t0x1\n"); return err }},
		{"wchp bad session", func() error { _, err := parseWchp("/a\n\tzz\n"); return err }},
		{"wchp html", func() error { _, err := parseWchp("<html>\n"); return err }},
		{"wchc path before session", func() error { _, err := parseWchc("\t/a\n"); return err }},
		{"cons garbage", func() error { _, err := parseCons("hello\n"); return err }},
		{"dump bad date", func() error {
			_, err := parseDump("Session Sets (1)/(1):\n1 expire at yesterday:\n\t0x1\n", time.Now())
			return err
		}},
		{"mntr empty", func() error { _, err := parseMntr(""); return err }},
		{"mntr no tab", func() error { _, err := parseMntr("zk_watch_count 4\n"); return err }},
		{"admin watches not JSON", func() error { _, err := parseAdminWatches(strings.NewReader("nope")); return err }},
		{"admin watches float id", func() error {
			_, err := parseAdminWatches(strings.NewReader(`{"session_id_to_watched_paths":{"1.5e17":["/a"]}}`))
			return err
		}},
		{"admin not serving", func() error { _, err := parseAdminWatches(strings.NewReader(sampleAdminNotServing)); return err }},
		{"cons lists nobody", func() error { _, err := parseCons("\n"); return err }},
		{"4lw empty reply", func() error { _, err := checkReply("cons", "a:1", ""); return err }},
		{"4lw not in whitelist", func() error {
			_, err := checkReply("wchp", "a:1", sampleNotListed)
			if !errors.Is(err, errNotWhitelisted) {
				return nil
			}
			return err
		}},
		{"4lw not serving", func() error {
			_, err := checkReply("wchp", "a:1", "This ZooKeeper instance is not currently serving requests\n")
			if !memberDown(err) {
				return nil
			}
			return err
		}},
		{"admin monitor without watch_count", func() error { _, _, _, err := parseAdminMonitor(strings.NewReader(`{"error":null}`)); return err }},
	}
	for _, tc := range tests {
		if err := tc.parse(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestParseCaptured reads each command from the real server, with two
// sessions holding watches, and checks the four-letter words and the
// AdminServer tell the same, with exact session ids.
func TestParseCaptured(t *testing.T) {
	s := sharedServer(t)
	a := connect(t, []string{s.Addr()}, 10*time.Second)
	b := connect(t, []string{s.Addr()}, 10*time.Second)
	dir := fresh("/captured")
	mkdirs(t, a, dir)
	pa, err := a.Create(dir+"/W_", []byte("a"), zk.FlagEphemeral|zk.FlagSequence, acl)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := b.ExistsW(pa); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := a.ExistsW(dir + "/none"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := a.ChildrenW(dir); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	get4 := func(cmd string) string {
		t.Helper()
		reply, err := fourLetter(ctx, s.Addr(), cmd)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return reply
	}
	getAdmin := func(cmd string) io.Reader {
		t.Helper()
		resp, err := http.Get(s.AdminURL() + "/commands/" + cmd)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return strings.NewReader(string(body))
	}

	wchp, err := parseWchp(get4("wchp"))
	if err != nil {
		t.Fatal(err)
	}
	wchc, err := parseWchc(get4("wchc"))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := parseAdminWatches(getAdmin("watches"))
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]map[int64][]string{"wchp": wchp, "wchc": wchc, "admin": admin} {
		if !reflect.DeepEqual(sortedPaths(got[a.SessionID()]), []string{dir + "/none"}) {
			t.Errorf("%s: session 0x%x watches %v, want [%s/none] (children watches are not listed)", name, a.SessionID(), got[a.SessionID()], dir)
		}
		if !reflect.DeepEqual(got[b.SessionID()], []string{pa}) {
			t.Errorf("%s: session 0x%x watches %v, want [%s]", name, b.SessionID(), got[b.SessionID()], pa)
		}
	}

	cons, err := parseCons(get4("cons"))
	if err != nil {
		t.Fatal(err)
	}
	conns, clock, err := parseAdminConnections(getAdmin("connections"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{a.SessionID(), b.SessionID()} {
		if !cons[id] || !conns[id] {
			t.Errorf("session 0x%x: cons %t, admin connections %t; want both", id, cons[id], conns[id])
		}
	}
	if clock <= 0 {
		t.Errorf("admin connections: no last_response_time")
	}

	dump, err := parseDump(get4("dump"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	adump, err := parseAdminDump(getAdmin("dump"), clock, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{a.SessionID(), b.SessionID()} {
		for name, d := range map[string]map[int64]time.Time{"dump": dump, "admin dump": adump} {
			// Both sessions have a 10s timeout and are alive: they expire
			// within a session timeout (plus a tick and the dump's
			// one-second resolution) from now, never in the past.
			left := time.Until(d[id])
			if left < -2*time.Second || left > 12*time.Second {
				t.Errorf("%s: session 0x%x expires in %v, want within the 10s session timeout", name, id, left)
			}
		}
	}

	kv, err := parseMntr(get4("mntr"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := kv["zk_watch_count"]; !ok {
		t.Errorf("mntr has no zk_watch_count")
	}
	if _, _, _, err := parseAdminMonitor(getAdmin("monitor")); err != nil {
		t.Error(err)
	}

	// The merged table of both sources, as the poller builds it.
	for _, info := range []memberInfo{fetch4lw(ctx, s.Addr(), nil), fetchAdmin(ctx, http.DefaultClient, s.AdminURL())} {
		if len(info.Errs) > 0 || info.Down {
			t.Fatalf("fetch: down=%t errs=%v", info.Down, info.Errs)
		}
		table := mergeTable([]memberInfo{info}, "x", func(id int64) bool { return id == a.SessionID() }, "", 0)
		if _, ok := table.Watches[a.SessionID()]; ok {
			t.Errorf("own session 0x%x in the merged table", a.SessionID())
		}
		if !reflect.DeepEqual(table.Watches[b.SessionID()], []string{pa}) {
			t.Errorf("merged: session 0x%x watches %v", b.SessionID(), table.Watches[b.SessionID()])
		}
		if table.ChildWatches < 1 {
			t.Errorf("merged: %d invisible children watches, want at least session 0x%x's", table.ChildWatches, a.SessionID())
		}
	}
}

func sortedPaths(p []string) []string {
	out := append([]string(nil), p...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// with sets what mntr told of a member's role.
func with(m memberInfo, state string, learners int) memberInfo {
	m.State, m.Learners = state, learners
	return m
}

// mergeTable over members: unions, member-down handling, chroot, filters.
func TestMergeTable(t *testing.T) {
	own := func(id int64) bool { return id == 9 }
	up1 := memberInfo{Watches: map[int64][]string{1: {"/app/l/a"}, 9: {"/app/x"}, 2: {"/zookeeper/config", "/other"}},
		Connected: map[int64]bool{1: true, 9: true}, WatchCount: 10}
	up2 := memberInfo{Watches: map[int64][]string{3: {"/app/l/b", "/app/l/b"}}, Connected: map[int64]bool{3: true},
		Expiry: map[int64]time.Time{1: time.Unix(100, 0)}, WatchCount: 2}
	down := memberInfo{Down: true, WatchCount: -1}
	noCons := memberInfo{Watches: map[int64][]string{}, WatchCount: 0}

	tests := []struct {
		name  string
		infos []memberInfo
		check func(t *testing.T, tb tableT)
	}{
		{"union over members, chroot, filters", []memberInfo{up1, up2, down}, func(t *testing.T, tb tableT) {
			want := map[int64][]string{1: {"/l/a"}, 3: {"/l/b"}}
			if !reflect.DeepEqual(tb.Watches, want) {
				t.Errorf("watches %v, want %v", tb.Watches, want)
			}
			if !reflect.DeepEqual(tb.Connected, map[int64]bool{1: true, 9: true, 3: true}) {
				t.Errorf("connected %v", tb.Connected)
			}
			if !tb.Expiry[1].Equal(time.Unix(100, 0)) {
				t.Errorf("expiry %v", tb.Expiry)
			}
			// 12 watches in all, 6 listed data watches, 1 children watch of our own.
			if tb.ChildWatches != 5 {
				t.Errorf("child watches %d, want 5", tb.ChildWatches)
			}
			if tb.Source != "4lw" {
				t.Errorf("source %q", tb.Source)
			}
		}},
		{"all down: nothing known", []memberInfo{down, down}, func(t *testing.T, tb tableT) {
			if tb.Source != "none" || tb.Connected != nil || tb.ChildWatches != -1 {
				t.Errorf("got %+v, want source none, connected unknown", tb)
			}
		}},
		{"a member without cons: connections unknown", []memberInfo{up1, noCons}, func(t *testing.T, tb tableT) {
			if tb.Connected != nil {
				t.Errorf("connected %v, want unknown", tb.Connected)
			}
		}},
		{"states unknown (no mntr): no claim of a partial table", []memberInfo{up1, up2}, func(t *testing.T, tb tableT) {
			if tb.Partial {
				t.Errorf("partial with nothing to tell")
			}
		}},
		{"a standalone server is the whole ensemble", []memberInfo{with(up1, "standalone", -1)}, func(t *testing.T, tb tableT) {
			if tb.Partial {
				t.Errorf("partial for a standalone server")
			}
		}},
		{"leader and both its learners asked: whole", []memberInfo{with(up1, "leader", 2), with(up2, "follower", -1), with(noCons, "observer", -1)}, func(t *testing.T, tb tableT) {
			if tb.Partial {
				t.Errorf("partial with every member asked")
			}
		}},
		{"leader with two learners, one asked: partial", []memberInfo{with(up1, "leader", 2), with(up2, "follower", -1)}, func(t *testing.T, tb tableT) {
			if !tb.Partial || tb.Connected == nil {
				t.Errorf("partial %t connected %v, want a partial table that still lists who it saw", tb.Partial, tb.Connected)
			}
		}},
		{"followers only: their leader was not asked", []memberInfo{with(up2, "follower", -1)}, func(t *testing.T, tb tableT) {
			if !tb.Partial {
				t.Errorf("not partial with only a follower asked")
			}
		}},
		{"a stopped leader and its two followers: whole", []memberInfo{down, with(up1, "leader", 1), with(up2, "follower", -1)}, func(t *testing.T, tb tableT) {
			if tb.Partial {
				t.Errorf("partial: a member that is down holds no clients")
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, (mergeTable(tc.infos, "4lw", own, chroot("/app"), 1)))
		})
	}
}

type tableT = lockqueue.WatchTable

// dump prints expiry dates in the server JVM's zone, by an abbreviation Go
// may not know or may read as another zone: "expires in" must not be off by
// the zone's offset whatever the server's zone.
func TestParseDumpZones(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 32, 50, 0, time.UTC)
	expA := now.Add(4 * time.Second)  // a session about to expire
	expB := now.Add(35 * time.Second) // a longer timeout
	tests := []struct {
		zone   string
		offset time.Duration
	}{
		{"UTC", 0},
		{"CET", time.Hour},
		{"IST", 5*time.Hour + 30*time.Minute}, // India; also Ireland and Israel
		{"PDT", -7 * time.Hour},
		{"NPT", 5*time.Hour + 45*time.Minute},
		{"GMT+05:30", 5*time.Hour + 30*time.Minute},
		{"CST", -6 * time.Hour}, // US Central; also China (+8) and Cuba
		{"CST", 8 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s%+v", tt.zone, tt.offset), func(t *testing.T) {
			java := func(at time.Time) string {
				l := at.Add(tt.offset).UTC()
				return l.Format("Mon Jan 02 15:04:05") + " " + tt.zone + " " + l.Format("2006")
			}
			reply := "SessionTracker dump:\nSession Sets (2)/(2):\n" +
				"1 expire at " + java(expA) + ":\n\t0x10000914f2e0000\n" +
				"1 expire at " + java(expB) + ":\n\t0x10000914f2e0001\n" +
				"ephemeral nodes dump:\n"
			got, err := parseDump(reply, now)
			if err != nil {
				t.Fatal(err)
			}
			// Date.toString has whole seconds; the test's times are whole.
			want := map[int64]time.Time{sessA: expA, sessB: expB}
			for id, w := range want {
				if !got[id].Equal(w) {
					t.Errorf("session 0x%x expires %v (in %v), want %v (in %v)", id, got[id], got[id].Sub(now), w, w.Sub(now))
				}
			}
		})
	}
}
