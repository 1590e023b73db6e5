package views

import (
	"fmt"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Unexplored is a service whose discovery below its prefixes stopped at a
// bound: the dashboard's banner, and the note of GET /api/v1/locks.
type Unexplored struct {
	Service Service
	// Folders were not looked into; Limit is the bound reached, Flag the
	// command-line flag that raises it.
	Folders, Limit int
	Flag           string
	// What names what Folders counts (lockservice.Unexplored.What):
	// empty for ZooKeeper's folders.
	What string
}

// Text says what is not shown and how to show it.
func (u Unexplored) Text() string {
	keys := "keys"
	if u.Folders == 1 {
		keys = "key"
	}
	switch u.What {
	case lockqueue.UnexploredUnwalked:
		return fmt.Sprintf("%s: the first SCAN of the keyspace for the --watch-under patterns has about %d %s still to look at (about %d per --poll): lock keys among them are not shown yet. Raise %s to walk it faster.",
			u.Service.Title, u.Folders, keys, u.Limit, u.Flag)
	case lockqueue.UnexploredOverLimit:
		return fmt.Sprintf("%s: %d lock %s matching the --watch-under patterns not followed: the limit of %d keys followed is reached, so they are not shown. Raise %s to follow them.",
			u.Service.Title, u.Folders, keys, u.Limit, u.Flag)
	}
	folders := "folders"
	if u.Folders == 1 {
		folders = "folder"
	}
	return fmt.Sprintf("%s: %d %s below the --watch-under prefixes not looked into: the limit of %d folders with a children watch each is reached, so locks in them are not shown. Raise %s to look into them.",
		u.Service.Title, u.Folders, folders, u.Limit, u.Flag)
}
