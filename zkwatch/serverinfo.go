package zkwatch

// What one ensemble member tells about watches and sessions, in one poll:
// from the four-letter words on its client port (fourletter.go) or its
// AdminServer's JSON (adminserver.go). Merging over members and joining
// with the queues is in watchtable.go.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zklockviz/zklockviz/zkwatch/fourlw"
)

// memberInfo is what one ensemble member told in one poll.
type memberInfo struct {
	// Down: the member refused the connection or is not serving (no quorum):
	// it holds no client connections and no watches, so it adds nothing.
	Down bool
	// Watches maps a session to the paths it holds data watches on; nil when
	// the member would not tell.
	Watches map[int64][]string
	// Connected is the set of sessions connected to this member; nil unknown.
	Connected map[int64]bool
	// Expiry is when sessions expire; nil when the member does not tell
	// (followers, or no dump).
	Expiry map[int64]time.Time
	// WatchCount is mntr's zk_watch_count (data and children watches); -1 unknown.
	WatchCount int
	// State is mntr's zk_server_state: "leader", "follower", "observer" or
	// "standalone"; "" unknown.
	State string
	// Learners is, on a leader, the number of followers and observers
	// connected to it (mntr's zk_learners); -1 unknown.
	Learners int
	// Errs are what went wrong, for the log.
	Errs []error
}

// told is what m says: only that it is down (and why) when it is, as a
// member down adds nothing, whatever it told before it went.
func (m memberInfo) told() memberInfo {
	if m.Down {
		return memberInfo{Down: true, WatchCount: -1, Learners: -1, Errs: m.Errs}
	}
	return m
}

// dataWatchTotal counts listed (session, path) pairs, before any filtering:
// it is what zk_watch_count counts for data watches.
func (m memberInfo) dataWatchTotal() int {
	n := 0
	for _, ps := range m.Watches {
		n += len(ps)
	}
	return n
}

// The four-letter words' refusals, as fourlw reports them.
var (
	errNotWhitelisted = fourlw.ErrNotWhitelisted
	errNotServing     = fourlw.ErrNotServing
)

// memberDown reports whether err means the member holds no clients: nothing
// listens there, or it is not serving.
func memberDown(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, errNotServing)
}

// parseSession reads "0x1000008971f0017" (Long.toHexString, so unsigned).
func parseSession(s string) (int64, error) {
	h, ok := strings.CutPrefix(strings.TrimSpace(s), "0x")
	if !ok {
		return 0, fmt.Errorf("session id %q: want 0x<hex>", s)
	}
	v, err := strconv.ParseUint(h, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("session id %q: %w", s, err)
	}
	return int64(v), nil
}
