package zkwatch

import (
	"sync/atomic"

	"github.com/zklockviz/zklockviz/third_party/zk"
)

// Reader is everything the watcher may ask of ZooKeeper. It has no write
// method, so the watcher cannot write by construction; *zk.Conn satisfies it.
// AddWatch and RemoveWatches change nothing in the tree either: they ask
// the server to tell this connection of changes, or to stop (persist.go).
type Reader interface {
	AddWatch(path string, mode zk.AddWatchMode) error
	RemoveWatches(path string, t zk.WatcherType) error
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Get(path string) ([]byte, *zk.Stat, error)
	Exists(path string) (bool, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	MultiRead(ops ...zk.ReadOp) ([]zk.ReadResult, error)
	State() zk.State
	SessionID() int64
}

var _ Reader = (*zk.Conn)(nil)

// countingReader counts the requests sent to ZooKeeper, so tests and the
// benchmark can show that reads follow changes, not viewers.
type countingReader struct {
	r Reader
	n *atomic.Int64
}

func (c countingReader) AddWatch(p string, mode zk.AddWatchMode) error {
	c.n.Add(1)
	return c.r.AddWatch(p, mode)
}

func (c countingReader) RemoveWatches(p string, t zk.WatcherType) error {
	c.n.Add(1)
	return c.r.RemoveWatches(p, t)
}

func (c countingReader) Children(p string) ([]string, *zk.Stat, error) {
	c.n.Add(1)
	return c.r.Children(p)
}

func (c countingReader) ChildrenW(p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	c.n.Add(1)
	return c.r.ChildrenW(p)
}

func (c countingReader) Get(p string) ([]byte, *zk.Stat, error) {
	c.n.Add(1)
	return c.r.Get(p)
}

func (c countingReader) Exists(p string) (bool, *zk.Stat, error) {
	c.n.Add(1)
	return c.r.Exists(p)
}

func (c countingReader) ExistsW(p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	c.n.Add(1)
	return c.r.ExistsW(p)
}

// MultiRead counts as one request, however many reads it carries.
func (c countingReader) MultiRead(ops ...zk.ReadOp) ([]zk.ReadResult, error) {
	c.n.Add(1)
	return c.r.MultiRead(ops...)
}

func (c countingReader) State() zk.State  { return c.r.State() }
func (c countingReader) SessionID() int64 { return c.r.SessionID() }
