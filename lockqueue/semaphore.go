package lockqueue

import (
	"strconv"
	"strings"
)

// Where semaphores keep their state besides their own path (recipes.md §1).
const (
	// CuratorLeases and CuratorLocks are the folders Curator's
	// InterProcessSemaphoreV2 (and InterProcessSemaphoreMutex, built on
	// it) makes below its path: one protected sequential node per lease,
	// and an InterProcessMutex queue whose holder is the one acquirer
	// allowed to add a lease.
	CuratorLeases = "leases"
	CuratorLocks  = "locks"
	// KazooSemaphoreLock is appended to a kazoo Semaphore's path to make
	// the path of the kazoo Lock its acquirers queue on; the leases are
	// the semaphore path's own children.
	KazooSemaphoreLock = "-__lock__"
)

// SemaphoreFolders tells whether the folder at path, with these child names
// and this data, is a semaphore's path, and which other folders hold the
// semaphore's nodes. A reader lists path and each of them, sets each
// child's Folder to the folder it came from, and builds with
// Options.Semaphore.
//
// Curator's semaphore path has only "leases" and "locks" below it (each a
// container the server deletes some time after it empties). kazoo's has
// only lease nodes (32 hex digits, no sequence), or none while its data,
// the lease limit as text, says it is one; its lock queue is a sibling, so
// it is read whether or not it exists yet (a listing of a missing node
// leaves no watch behind).
func SemaphoreFolders(path string, names []string, data []byte) (Recipe, []string) {
	if IsCuratorSemaphore(names) {
		var out []string
		for _, d := range []string{CuratorLeases, CuratorLocks} {
			for _, n := range names {
				if n == d {
					out = append(out, childPath(path, d))
				}
			}
		}
		return Curator, out
	}
	if path == "/" {
		return NoRecipe, nil
	}
	for _, n := range names {
		if !isKazooLease(n) {
			return NoRecipe, nil
		}
	}
	if _, ok := kazooLimit(data); ok || len(names) > 0 {
		return Kazoo, []string{path + KazooSemaphoreLock}
	}
	return NoRecipe, nil
}

// IsCuratorSemaphore reports whether a folder's children are those of a
// Curator semaphore's path: "leases", "locks" or both, and nothing else.
// (A folder of lock parents that happens to hold only a "locks" folder
// looks the same; discovery checks what is inside before it believes it.)
func IsCuratorSemaphore(names []string) bool {
	for _, n := range names {
		if n != CuratorLeases && n != CuratorLocks {
			return false
		}
	}
	return len(names) > 0
}

// kazooLimit reads kazoo's Semaphore lease limit from its path's data.
func kazooLimit(data []byte) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return n, err == nil && n > 0
}

func childPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// assignSemaphore decides who holds a lease and whom each acquirer waits
// for. q is in queue order: the lease nodes first (their folder sorts
// first), then the internal lock queue by sequence. limit is the lease
// limit, 0 when unknown; the result is the limit inferred from the layout,
// 0 when it tells nothing.
//
// Both libraries let only the holder of the internal lock add a lease: it
// takes the lock, and (Curator) creates its lease node, then waits with a
// children watch on the leases' folder until the number of leases is within
// the limit, or (kazoo) waits with that watch until there is room and only
// then creates its lease node. It releases the internal lock once it holds a
// lease; the others wait for their predecessor in the lock queue. So at most
// one lease node is not held: the newest one, owned by the lock queue's
// head, while there are more lease nodes than the limit. When the limit is
// unknown and such a node exists, the others are exactly the held leases
// that keep it waiting, which gives the limit (marked as inferred).
//
// The lock queue's head whose session owns the newest lease node is the
// acquirer that made it: its lock node is PartOf that lease node, so the
// acquirer counts once. (Two threads of one session can look the same for
// the moment between one letting the lock go and the next making its
// lease node; the count is then one low for that moment.)
func assignSemaphore(q []Node, limit int) (inferred int) {
	var leases, queue []int
	for i := range q {
		if q[i].parsedMode() == Lease {
			leases = append(leases, i)
		} else {
			queue = append(queue, i)
		}
		q[i].Mode = Lease
	}
	pending := -1
	if len(queue) > 0 {
		head := &q[queue[0]]
		// The head waits for a lease to free, by a children watch on the
		// leases' folder: no sibling is its predecessor.
		head.WaitsOn = OnChildren
		for k := 1; k < len(queue); k++ {
			q[queue[k]].WaitsFor = q[queue[k-1]].Name
		}
		if n := len(leases); n > 0 && head.owner != 0 && q[leases[n-1]].owner == head.owner {
			// The newest lease node is the lock holder's own: one
			// acquirer, one contender, whether its lease is pending or
			// held until it lets the lock go.
			head.SetPartOf(q[leases[n-1]].Name)
			switch {
			case limit > 0 && n > limit:
				pending = leases[n-1]
			case limit == 0 && n >= 2:
				// With one lease node only, the head has just got its
				// lease (any limit is at least 1) and is about to release
				// the internal lock.
				pending = leases[n-1]
				inferred = n - 1
			}
		}
	}
	for _, i := range leases {
		if i == pending {
			q[i].WaitsOn = OnChildren
			continue
		}
		q[i].Holding = true
	}
	return inferred
}
