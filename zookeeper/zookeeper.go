// Package zookeeper is ZooKeeper behind the lock-service seam: the live
// reader is zkwatch.Watcher, the classroom is a simulator.Manager on
// zksim's backend (zksim.New), and this package adapts both to
// lockservice's interfaces and names the service. It holds no logic of its
// own: zkwatch and zksim stay usable (and tested) on their own, and this is
// the one file a reader compares with a new service's package.
package zookeeper

import (
	"context"
	"fmt"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/zkwatch"
)

// Name is the service's registry name, the default of ?service=.
const Name = lockqueue.ZooKeeper

// Service is ZooKeeper for the registry. w and m may each be nil: no
// watcher (a classroom-only server) or no classroom.
func Service(w *zkwatch.Watcher, m *simulator.Manager) lockservice.Service {
	s := lockservice.Service{Name: Name, Title: "ZooKeeper", CheckName: CheckName, Words: Words()}
	if w != nil {
		s.Reader = NewReader(w)
	}
	if m != nil {
		s.Classroom = NewClassroom(m)
	}
	return s
}

// CheckName checks a lock parent's znode path (zkwatch.ValidatePath). The
// error keeps zkwatch's message and also matches lockservice.ErrBadName.
func CheckName(p string) error {
	if err := zkwatch.ValidatePath(p); err != nil {
		return badName{err}
	}
	return nil
}

// badName is a zkwatch path error that is also a lockservice.ErrBadName.
type badName struct{ error }

func (b badName) Is(target error) bool { return target == lockservice.ErrBadName }
func (b badName) Unwrap() error        { return b.error }

// Reader is a zkwatch.Watcher as a lockservice.Reader.
type Reader struct{ w *zkwatch.Watcher }

var _ lockservice.Reader = Reader{}

// NewReader adapts w. Its snapshots go where w's Config.Publish sends them.
func NewReader(w *zkwatch.Watcher) Reader { return Reader{w: w} }

// Watch adds a lock parent path to the watcher.
func (r Reader) Watch(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	return r.w.AddPath(name)
}

// Unwatch stops following a lock parent (zkwatch.Watcher.RemovePath): no
// more reads or snapshots, and the hub forgets it. ZooKeeper keeps the
// parent's children watch until it next fires, unanswered. A parent found
// under a --watch-under prefix stays (zkwatch.ErrDiscovered).
func (r Reader) Unwatch(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	return r.w.RemovePath(name)
}

// Err says the session is not live; the watcher itself logs the cause
// per member, and serve's startup check names each address's problem.
func (r Reader) Err() error {
	if c := r.w.Connection(); c != lockqueue.Connected {
		return fmt.Errorf("zookeeper: session %s: check that the ensemble is up and reachable", c)
	}
	return nil
}

var (
	_ lockservice.Discoverer  = Reader{}
	_ lockservice.EmptyFinder = Reader{}
)

// Unexplored is what --watch-under discovery leaves unread: folders past
// --discover-limit, with children watches only (ZooKeeper before 3.6).
func (r Reader) Unexplored() lockservice.Unexplored {
	st := r.w.Discovery()
	if st.Unexplored == 0 {
		return lockservice.Unexplored{}
	}
	u := lockservice.Unexplored{Folders: st.Unexplored, Limit: st.Limit, Flag: "--discover-limit"}
	folders := "folders"
	if u.Folders == 1 {
		folders = "folder"
	}
	u.Text = fmt.Sprintf("%d %s below the --watch-under prefixes not looked into: the limit of %d folders with a children watch each is reached, so locks in them are not shown. Raise %s to look into them.",
		u.Folders, folders, u.Limit, u.Flag)
	return u
}

// EmptyFolders counts the empty folders --watch-under discovery found: a
// kazoo lock's parent after its last release is one.
func (r Reader) EmptyFolders() int { return r.w.EmptyFolders() }

func (r Reader) Watched() []string                { return r.w.Paths() }
func (r Reader) Connection() lockqueue.Connection { return r.w.Connection() }
func (r Reader) Run(ctx context.Context) error    { return r.w.Run(ctx) }
func (r Reader) Close()                           { r.w.Close() }

// NewClassroom adapts m, a manager zksim.New made (simulator.NewClassroom,
// shared with every service whose classroom is a simulator backend).
func NewClassroom(m *simulator.Manager) lockservice.Classroom { return simulator.NewClassroom(m) }
