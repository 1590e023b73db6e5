package etcdlock

import (
	"fmt"

	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
)

// ClassroomWords are what the classroom page says of etcd's runs: its
// requests, the one watch event each release delivers and the leases kept
// alive.
var ClassroomWords = lockservice.ClassroomWords{
	Meters: []lockservice.Meter{
		{Key: "commands", Label: "requests", Help: "requests the clients sent etcd"},
		{Key: "notifications", Label: "watch events", Help: "each delivered to the one waiter watching the deleted key"},
		{Key: "renewals", Label: "keep-alives", Help: "lease keep-alives of the clients' sessions"},
		lockservice.WritesMeter,
	},
	Panes: []lockservice.SidePane{{Service: Name, Scenario: "etcd-side-by-side", Label: "etcd", Order: 30}},
}

// ClassroomWords are the classroom page's words for etcd's runs
// (lockservice.ClassroomWorder).
func (*Backend) ClassroomWords() lockservice.ClassroomWords { return ClassroomWords }

// RunWords word a run's text report in etcd's terms: a lock prefix, a
// lease, watch events and keep-alives.
func (*Backend) RunWords() simulator.RunWords {
	return simulator.RunWords{
		Heading: func(rep simulator.Report) string {
			return fmt.Sprintf("scenario %s (%s, %s waiters, fencing %s) on the prefix %s, lease %.1fs",
				rep.Scenario, rep.Service, rep.Strategy, rep.FencingOnOff(), rep.Path, rep.TimeoutSeconds())
		},
		Counts: func(s simulator.Stats) string {
			return fmt.Sprintf("requests %d (watch events %d, lease keep-alives %d), keys put %d, deletes %d, writes %d, fenced %d",
				s.Commands, s.Notifications, s.Renewals, s.Create, s.Delete, s.Writes, s.Fenced)
		},
	}
}
