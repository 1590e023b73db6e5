package pglock

import "github.com/zklockviz/zklockviz/lockservice"

// ClassroomWords are what the classroom page says of PostgreSQL's runs:
// the statements sent, none while a waiter sleeps in the lock manager.
var ClassroomWords = lockservice.ClassroomWords{
	Meters: []lockservice.Meter{
		{Key: "commands", Label: "statements", Help: "statements the clients sent; a waiter sends none while the lock manager holds it"},
		{Key: "create", Label: "locks taken", Help: "locks granted"},
		{Key: "delete", Label: "released", Help: "locks released"},
		lockservice.WritesMeter,
	},
	Panes: []lockservice.SidePane{{Service: Name, Scenario: "pg-side-by-side", Label: "PostgreSQL", Order: 40}},
}

// ClassroomWords are the classroom page's words for PostgreSQL's runs
// (lockservice.ClassroomWorder).
func (*Backend) ClassroomWords() lockservice.ClassroomWords { return ClassroomWords }
