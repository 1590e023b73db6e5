package views

import (
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// A lock that is not live is unknown, never free or missing, in every
// service's words: the stat line, the banner and the copied text say since
// when; a live one that is empty or missing says so as before.
func TestNotLiveIsUnknown(t *testing.T) {
	since := time.Date(2026, 11, 23, 3, 12, 5, 0, time.UTC)
	missing := map[string]string{
		"redis": "free: no key", "etcd": "free: no keys under the prefix", "postgres": "free: nobody holds or waits",
		"": "the lock parent does not exist (yet)",
	}
	for svc, want := range missing {
		sv := serviceNamed(svc)
		down := lockqueue.Snapshot{Service: svc, Path: "orders", Connection: lockqueue.Reconnecting, Error: "refused", UnknownSince: since}
		l := NewLockWith(Page{}, sv, LockState{Path: "orders", Snap: down, Known: true}, TableQuery{}, since.Add(time.Minute))
		text := QueueText(sv, down, since.Add(time.Minute))
		for _, got := range []string{l.Missing, l.Banner, text} {
			if strings.Contains(got, "free") || strings.Contains(got, "no key") || strings.Contains(got, "does not exist") ||
				!strings.Contains(got, "unknown since 2026-11-23 03:12:05 UTC") {
				t.Errorf("%q not live: %q, want unknown since 03:12:05, never free or missing", svc, got)
			}
		}
		up := down
		up.Connection, up.Error, up.UnknownSince = lockqueue.Connected, "", time.Time{}
		if l := NewLockWith(Page{}, sv, LockState{Path: "orders", Snap: up, Known: true}, TableQuery{}, since); l.Missing != want {
			t.Errorf("%q live and missing: %q, want %q", svc, l.Missing, want)
		}
		if text := QueueText(sv, up, since); !strings.Contains(text, "\n"+want+"\n") {
			t.Errorf("%q live and missing, as text:\n%s\nwant %q", svc, text, want)
		}
	}
}

// A node that left unseen (the reader could not see) has no hold worded:
// how long it held is not known.
func TestUnseenLeaveHasNoHold(t *testing.T) {
	at := time.Date(2026, 11, 23, 3, 12, 5, 0, time.UTC)
	left := history.Event{Time: at, Kind: history.Left, Node: "tok", Acquired: at.Add(-6 * time.Minute), How: history.Released}
	if got := EventText(left); !strings.Contains(got, "held 6m") {
		t.Errorf("a release: %q, want its hold", got)
	}
	left.How = history.Unseen
	if got := EventText(left); strings.Contains(got, "held") || !strings.Contains(got, "(unknown)") {
		t.Errorf("a leave unseen: %q, want unknown and no hold", got)
	}
}
