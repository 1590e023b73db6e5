package views

import "fmt"

// Unexplored is a service whose discovery below its prefixes stopped at a
// bound: the dashboard's banner, and the note of GET /api/v1/locks.
type Unexplored struct {
	Service Service
	// Folders were not looked into; Limit is the bound reached, Flag the
	// command-line flag that raises it.
	Folders, Limit int
	Flag           string
}

// Text says what is not shown and how to show it.
func (u Unexplored) Text() string {
	folders := "folders"
	if u.Folders == 1 {
		folders = "folder"
	}
	return fmt.Sprintf("%s: %d %s below the --watch-under prefixes not looked into: the limit of %d folders with a children watch each is reached, so locks in them are not shown. Raise %s to look into them.",
		u.Service.Title, u.Folders, folders, u.Limit, u.Flag)
}
