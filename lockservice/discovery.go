package lockservice

// Discoverer is a Reader that finds locks below prefixes and, for a bound,
// may not look everywhere; the web layer asks it (an optional interface)
// so that what is not looked into is said, never hidden.
type Discoverer interface {
	// Unexplored says what discovery leaves unread now; its Folders is 0
	// when it looks into everything.
	Unexplored() Unexplored
}

// Unexplored is what a reader's discovery did not look into.
type Unexplored struct {
	// Folders is how many folders below the prefixes were not looked into:
	// locks in them are not shown.
	Folders int
	// Limit is the bound that was reached, and Flag the command-line flag
	// that raises it.
	Limit int
	Flag  string
	// What names what Folders counts, for the API: empty for folders
	// below the prefixes (ZooKeeper); another service names its own (keys
	// of a keyspace not walked yet, keys past a limit).
	What string
	// Text says, in the reader's own terms, what is not shown and how to
	// show it; the pages put the service's title before it. Empty: the
	// pages say it of folders.
	Text string
}

// EmptyFinder is a Discoverer that also counts the empty folders below
// its prefixes: places a lock may be taken (a kazoo lock's parent after
// its last release) with no lock nodes in them now, which the dashboard
// counts with the locks found, so that a fleet of idle locks reads as
// found, not as missing.
type EmptyFinder interface {
	EmptyFolders() int
}
