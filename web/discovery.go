package web

import (
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/views"
)

// UnexploredNote is a service whose discovery below its prefixes stopped
// at a bound, in GET /api/v1/locks: locks in the folders it did not look
// into are missing from the list.
type UnexploredNote struct {
	Service string `json:"service"`
	// Folders were not looked into; Limit is the bound reached, Flag the
	// command-line flag that raises it.
	Folders int    `json:"folders"`
	Limit   int    `json:"limit"`
	Flag    string `json:"flag"`
	// What names what Folders counts, left out for folders (ZooKeeper):
	// redis-unwalked (keys the first walk of the keyspace has still to
	// look at) or redis-over-limit (lock keys found but not followed).
	What    string `json:"what,omitempty"`
	Message string `json:"message"`
}

// unexplored lists the services whose discovery left folders unread.
func unexplored(reg *lockservice.Registry) []views.Unexplored {
	var out []views.Unexplored
	for _, svc := range reg.All() {
		d, ok := svc.Reader.(lockservice.Discoverer)
		if !ok {
			continue
		}
		if u := d.Unexplored(); u.Folders > 0 {
			out = append(out, views.Unexplored{Service: serviceView(svc), Folders: u.Folders, Limit: u.Limit, Flag: u.Flag, What: u.What, Words: u.Text})
		}
	}
	return out
}

// unexploredNotes is unexplored for the API.
func unexploredNotes(reg *lockservice.Registry) []UnexploredNote {
	var out []UnexploredNote
	for _, u := range unexplored(reg) {
		out = append(out, UnexploredNote{Service: u.Service.Name, Folders: u.Folders, Limit: u.Limit, Flag: u.Flag, What: u.What, Message: u.Text()})
	}
	return out
}
