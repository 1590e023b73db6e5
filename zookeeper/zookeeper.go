// Package zookeeper is ZooKeeper behind the lock-service seam: the live
// reader is zkwatch.Watcher, the classroom is simulator.Manager, and this
// package adapts both to lockservice's interfaces and names the service.
// It holds no logic of its own: zkwatch and simulator stay usable (and
// tested) on their own, and this is the one file a reader compares with a
// new service's package.
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
	s := lockservice.Service{Name: Name, Title: "ZooKeeper", CheckName: CheckName}
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

func (r Reader) Watched() []string                { return r.w.Paths() }
func (r Reader) Connection() lockqueue.Connection { return r.w.Connection() }
func (r Reader) Run(ctx context.Context) error    { return r.w.Run(ctx) }
func (r Reader) Close()                           { r.w.Close() }

// Classroom is a simulator.Manager as a lockservice.Classroom.
type Classroom struct{ m *simulator.Manager }

var _ lockservice.Classroom = Classroom{}

// NewClassroom adapts m.
func NewClassroom(m *simulator.Manager) Classroom { return Classroom{m: m} }

func (c Classroom) Scenarios() any    { return c.m.Scenarios() }
func (c Classroom) Actions() []string { return simulator.Actions() }

// Start decodes a simulator.Spec and starts its run.
func (c Classroom) Start(decode func(any) error) (lockservice.Run, error) {
	var spec simulator.Spec
	if err := decode(&spec); err != nil {
		return nil, err
	}
	r, err := c.m.Start(spec)
	if err != nil {
		return nil, err
	}
	return run{r}, nil
}

func (c Classroom) Get(id string) (lockservice.Run, bool) {
	r, ok := c.m.Get(id)
	if !ok {
		return nil, false
	}
	return run{r}, true
}

func (c Classroom) Runs() []lockservice.Run {
	rs := c.m.Runs()
	out := make([]lockservice.Run, len(rs))
	for i, r := range rs {
		out[i] = run{r}
	}
	return out
}

func (c Classroom) Delete(id string) error { return c.m.Delete(id) }

// run is a simulator.Run whose State and Subscribe speak lockservice.
type run struct{ *simulator.Run }

func (r run) State() any { return r.Run.State() }

func (r run) Subscribe() (lockservice.Subscription, error) {
	s, err := r.Run.Subscribe()
	if err != nil {
		return nil, err
	}
	return subscription{s}, nil
}

type subscription struct{ *simulator.Subscription }

func (s subscription) State() any { return s.Subscription.State() }
