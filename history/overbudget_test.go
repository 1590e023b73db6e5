package history_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
)

// A closed segment that holds more than the cache does is read from
// its file by every query, and not collected again each time up to the
// cache's size only to be dropped: a query of it allocates what one with
// no cache at all does, not that plus the cache's size. (A 100,000-node
// lock's figures, strip and density each collected and dropped 64 MB,
// and a lock page asks for all three.)
func TestOverBudgetSegmentNotCollectedAgain(t *testing.T) {
	const p, n = "/locks/runaway", 20_000
	names, at := bigNames(n), afterT0
	perQuery := func(cache int64) uint64 {
		c := newClock(t0)
		s := openStore(t, history.Options{Dir: t.TempDir(), Now: c.Now, SegmentAge: 500 * time.Millisecond, CacheSize: cache})
		record(t, s, queue(p, at(100), names...))
		c.set(at(600))
		if err := s.Flush(false); err != nil { // closes the segment
			t.Fatal(err)
		}
		record(t, s, queue(p, at(700), names[1:]...))
		query := func() {
			if _, err := s.Stats(p, t0, at(1000)); err != nil {
				t.Fatal(err)
			}
		}
		query() // the first read finds out the segment does not fit
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 3 {
			query()
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 3
	}
	none := perQuery(1)       // nothing ever fits: read from the file
	some := perQuery(1 << 20) // the segment's frames and strings are more than 1 MiB
	t.Logf("a query allocates %d KB with a 1-byte cache, %d KB with a 1 MiB one", none>>10, some>>10)
	if some > none+none/2 {
		t.Errorf("a query of a segment over the cache's size allocates %d KB, one with no cache %d KB: it is collected again", some>>10, none>>10)
	}
}
