package views

import (
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

func TestDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0.0s"},
		{4200 * time.Millisecond, "4.2s"},
		{37 * time.Second, "37s"},
		{3*time.Minute + 4*time.Second, "3m 04s"},
		{2*time.Hour + 5*time.Minute, "2h 05m"},
		{76 * time.Hour, "3d 4h"},
	}
	for _, tc := range tests {
		if got := Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestNewLockAndDashboard(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	kids := []lockqueue.Child{
		{Name: "R_0000000001", Data: []byte("LOCK1"), Ctime: now.Add(-time.Minute), EphemeralOwner: 1},
		{Name: "W_0000000002", Data: []byte{0, 1, 2}, Ctime: now.Add(-50 * time.Second), EphemeralOwner: 2},
		{Name: "W_0000000003", Ctime: now.Add(-40 * time.Second), EphemeralOwner: 0},
	}
	live := lockqueue.Build("/a", kids, lockqueue.Options{})
	live.Connection = lockqueue.Connected
	down := lockqueue.Build("/b", kids[:1], lockqueue.Options{})
	down.Connection = lockqueue.Reconnecting

	l := NewLockWith(Page{}, zooKeeper, LockState{Path: "/a", Snap: live, Known: true}, TableQuery{}, now)
	if !l.Live || l.Banner != "" {
		t.Errorf("live lock: Live %v, banner %q", l.Live, l.Banner)
	}
	if len(l.Rows) != 3 || l.Rows[0].State != "holding" || l.Rows[1].WaitsFor != "R_0000000001" || l.Rows[1].Data != "base64:AAEC" {
		t.Errorf("rows %+v", l.Rows)
	}
	if l.Rows[2].Alerts != "persistent-node" {
		t.Errorf("persistent node's alerts %q", l.Rows[2].Alerts)
	}
	if l.Rows[1].Time != "waits 50s" {
		t.Errorf("time %q", l.Rows[1].Time)
	}
	if b := NewLockWith(Page{}, zooKeeper, LockState{Path: "/b", Snap: down, Known: true}, TableQuery{}, now).Banner; b == "" {
		t.Error("no banner on a lock whose watcher is reconnecting")
	}
	if b := NewLockWith(Page{}, zooKeeper, LockState{Path: "/c"}, TableQuery{}, now).Banner; b == "" {
		t.Error("no banner on an unwatched lock")
	}

	liveSum := live.Summarize()
	d := NewDashboard(Page{}, []LockRow{NewLockRow(&liveSum, false, now)}, DashboardList{}, zooKeeper, []string{string(live.Connection), string(down.Connection)})
	if d.Connection != "mixed" || len(d.Locks) != 1 {
		t.Fatalf("dashboard %+v", d)
	}
	// The holder as the lane knows it (its data), its node in the title.
	if r := d.Locks[0]; r.Holders != "LOCK1" || r.HoldersTitle != "R_0000000001 (LOCK1)" || r.Waiting != 2 || r.OldestWait != "50s" || r.Alerts != "persistent-node" {
		t.Errorf("row %+v", r)
	}
}

// NameParts splits between a name's parts, never inside one.
func TestNameParts(t *testing.T) {
	for name, want := range map[string]string{
		"_c_8f3a1b2c-1111-2222-3333-444455556666-__READ__0000000003": "_c_|8f3a1b2c-|1111-|2222-|3333-|444455556666-__|READ__|0000000003",
		"R_0000000001": "R_|0000000001",
		"0123456789abcdef0123456789abcdef__lock__0000000008": "0123456789abcdef0123456789abcdef__|lock__|0000000008",
		"x-72057594037927936-0000000010":                     "x-|72057594037927936-|0000000010",
		"config":                                             "config",
		"W_-2147483648":                                      "W_-|2147483648",
		"abc0000000012":                                      "abc|0000000012",
		"-x":                                                 "-x",
		"__":                                                 "__",
	} {
		if got := strings.Join(NameParts(name), "|"); got != want {
			t.Errorf("NameParts(%q) = %s, want %s", name, got, want)
		}
	}
}

// QueueText is the table as text: the table's words, columns lined up,
// data quoted, alerts listed.
func TestQueueText(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	kids := []lockqueue.Child{
		{Name: "R_0000000001", Data: []byte("LOCK1"), Ctime: now.Add(-time.Minute), EphemeralOwner: 1},
		{Name: "W_0000000002", Data: []byte("a \"b\"\n"), Ctime: now.Add(-50 * time.Second), EphemeralOwner: 2},
		{Name: "W_0000000003", Ctime: now.Add(-40 * time.Second), EphemeralOwner: 0},
	}
	s := lockqueue.Build("/a", kids, lockqueue.Options{})
	s.Connection, s.Revision, s.UpdatedAt = lockqueue.Connected, 7, now
	got := QueueText(zooKeeper, s, now)
	for _, want := range []string{
		"lock /a\nrecipe seed-rw · revision 7 · connection connected · watches from none · updated 2025-01-02T03:04:05Z\n",
		"#  node          mode    state    waits-for     watches  edge  session  data",
		"1  R_0000000001  reader  holding  -             unknown  -",
		`"a \"b\"\n"`, "waits 50s", "persistent-node",
		"\nalerts:\n- persistent-node: ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("text lacks %q:\n%s", want, got)
		}
	}
}
