package redislock

import (
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator"
)

// A run whose server counted its lock commands (INFO commandstats) meters
// those; one that did not, the commands the clients sent.
func TestMetersCountWhatTheServerCounted(t *testing.T) {
	events := []simulator.Event{{Event: simulator.EvLock, Client: "C1", AtMs: 100}, {Event: simulator.EvWrite, Client: "C1", AtMs: 4000}}
	requests := (&Backend{}).RunWords().Requests
	for _, tt := range []struct {
		stats simulator.Stats
		want  int
		from  string
	}{
		{simulator.Stats{Commands: 50, ServerCalls: 40}, 40, "commandstats"},
		{simulator.Stats{Commands: 50}, 50, "counted by the classroom"},
	} {
		m := simulator.MetersOf(requests, events, tt.stats)
		if m.Requests != tt.want || !strings.Contains(m.RequestsFrom, tt.from) {
			t.Errorf("stats %+v: requests %d from %q, want %d from %s", tt.stats, m.Requests, m.RequestsFrom, tt.want, tt.from)
		}
	}
}
