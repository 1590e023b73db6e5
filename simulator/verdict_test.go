package simulator

import (
	"strings"
	"testing"
)

func TestVerdictOf(t *testing.T) {
	overlap := Violation{Kind: "overlap", ForMs: 1200}
	stale := Violation{Kind: "unfenced-write", ForMs: 3600}
	tests := []struct {
		name       string
		vs         []Violation
		stats      Stats
		exclusion  string
		brokenMs   int64
		staleWrite string
		says       string
	}{
		{"a clean run", nil, Stats{}, ExclusionHeld, 0, StaleNone, "no stale write happened"},
		{"fencing refused the stale write", nil, Stats{Fenced: 1}, ExclusionHeld, 0, StaleFenced, "fencing caught the stale write"},
		{"no token: every write refused, the holder's too", nil, Stats{Fenced: 3, Tokenless: 3}, ExclusionHeld, 0, StaleNoToken,
			"fencing could not work: the recipe gives no token"},
		{"the server refused it, no token checked", nil, Stats{Fenced: 1, ServerRefused: 1}, ExclusionHeld, 0, StaleRefusedByServer, "the server refused the stale write"},
		{"a stale token refused beside tokenless ones", nil, Stats{Fenced: 3, Tokenless: 2}, ExclusionHeld, 0, StaleFenced, "fencing caught"},
		{"the resource took it", []Violation{stale}, Stats{}, ExclusionBroken, 3600, StaleAccepted, "broken for 3.6s; the resource accepted"},
		{"one refused, one taken", []Violation{stale}, Stats{Fenced: 1}, ExclusionBroken, 3600, StaleAccepted, "accepted"},
		{"two holders, no write", []Violation{overlap}, Stats{}, ExclusionBroken, 1200, StaleNone, "broken for 1.2s"},
		{"the longest violation counts", []Violation{overlap, stale}, Stats{}, ExclusionBroken, 3600, StaleAccepted, "3.6s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := VerdictOf(tt.vs, tt.stats)
			if v.Exclusion != tt.exclusion || v.BrokenMs != tt.brokenMs || v.StaleWrite != tt.staleWrite || !strings.Contains(v.Summary, tt.says) {
				t.Errorf("VerdictOf = %+v, want %s for %d ms, stale write %s, saying %q", v, tt.exclusion, tt.brokenMs, tt.staleWrite, tt.says)
			}
		})
	}
}

func TestMetersOf(t *testing.T) {
	events := []Event{
		{Event: EvLock, Client: "C1", AtMs: 100},
		{Event: EvExpire, Client: "C1", AtMs: 2100},
		{Event: EvLock, Client: "C2", AtMs: 2130},
		{Event: EvUnlock, Client: "C2", AtMs: 3000},
		{Event: EvLock, Client: "C3", AtMs: 3004},
		{Event: EvWrite, Client: "C3", AtMs: 4000},
	}
	// ZooKeeper's and Redis's own counts are tested with their words
	// (zksim, redislock).
	tests := []struct {
		name     string
		requests func(Stats) (int, string)
		stats    Stats
		want     int
		from     string
	}{
		{"the neutral words: the clients' commands", nil, Stats{Commands: 12}, 12, "classroom"},
		{"a service's own count", func(s Stats) (int, string) { return s.ServerCalls, "the server" }, Stats{Commands: 50, ServerCalls: 40}, 40, "the server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := MetersOf(tt.requests, events, tt.stats)
			if m.Requests != tt.want || !strings.Contains(m.RequestsFrom, tt.from) || m.PerSec != float64(tt.want)/4 {
				t.Errorf("requests %d (%.2f/s) from %q, want %d (%.2f/s) from %s", m.Requests, m.PerSec, m.RequestsFrom, tt.want, float64(tt.want)/4, tt.from)
			}
			if m.HandoffMs != 4 || m.Notifications != tt.stats.Notifications {
				t.Errorf("hand-off %d ms, notifications %d: want the latest hand-off (4 ms) and %d", m.HandoffMs, m.Notifications, tt.stats.Notifications)
			}
		})
	}
	if m := MetersOf(nil, events[:1], Stats{}); m.HandoffMs != -1 {
		t.Errorf("before any hand-off: %d ms, want -1", m.HandoffMs)
	}
}
