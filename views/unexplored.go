package views

import (
	"cmp"
	"fmt"
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
	// empty for folders.
	What string
	// Words say what is not shown and how to show it, in the reader's
	// own terms (lockservice.Unexplored.Text); empty: said of folders.
	Words string
}

// Text says, after the service's title, what is not shown and how to show
// it.
func (u Unexplored) Text() string {
	folders := "folders"
	if u.Folders == 1 {
		folders = "folder"
	}
	return u.Service.Title + ": " + cmp.Or(u.Words, fmt.Sprintf("%d %s below the --watch-under prefixes not looked into: the limit of %d folders is reached, so locks in them are not shown. Raise %s to look into them.",
		u.Folders, folders, u.Limit, u.Flag))
}
