// Package lockservice is the seam between zklockviz and the lock services it
// shows. Each service (ZooKeeper, Redis, etcd and PostgreSQL) is one
// package that provides a Reader for live locks, a Classroom for the
// simulator, or both, and is listed once in a Registry by cmd. The web layer
// knows only these interfaces and the lockqueue model; it never imports a
// service's package.
//
// Like etcd's client/v3/concurrency, the interfaces are narrow on purpose:
// what a service must offer, not how it gets it.
package lockservice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Errors a service or the registry returns; the web layer maps them to
// HTTP statuses. A service wraps them with what went wrong.
var (
	// ErrUnknownService: no service is registered under the name.
	ErrUnknownService = errors.New("unknown lock service")
	// ErrBadName: the name cannot name a lock of the service.
	ErrBadName = errors.New("invalid lock name")
	// ErrUnsupported: the service does not offer the operation.
	ErrUnsupported = errors.New("not supported by this lock service")
)

// Sink receives every snapshot a Reader or a Classroom run publishes: the
// whole state of one lock, its Service field set (empty for ZooKeeper).
// It must not block; the hub's Publish is one.
type Sink func(lockqueue.Snapshot)

// Reader follows live locks on one service, read-only, and publishes a
// whole Snapshot of a lock to its Sink (given to the service's constructor)
// after every change it sees: one upstream watch or poll per lock, however
// many viewers look.
type Reader interface {
	// Watch starts following the lock name; watching it twice is no error.
	// A bad name's error wraps ErrBadName.
	Watch(name string) error
	// Unwatch stops following name; ErrUnsupported when the service
	// cannot.
	Unwatch(name string) error
	// Watched lists the followed locks, including those not read yet.
	Watched() []string
	// Connection is the reader's own connection state.
	Connection() lockqueue.Connection
	// Err is what keeps the reader from following its locks now, nil
	// when nothing does. It names the service, the address and what to
	// check ("redis 10.0.0.5:6379: WRONGPASS: check --redis-password"),
	// so the dashboard and the log can show it as is while the other
	// services keep working.
	Err() error
	// Run reads and publishes until ctx ends or the reader fails for good.
	// Its error names the service and the address at fault: cmd reports
	// it as is, beside the other services' readers.
	Run(ctx context.Context) error
	// Close releases the connection; Run returns.
	Close()
}

// Classroom runs scenarios: clients of a real server, which the project
// starts, taking a lock step by step so a learner can watch.
type Classroom interface {
	// Scenarios describes what the classroom offers, as JSON the browser
	// lists.
	Scenarios() any
	// Actions are the act verbs a client accepts (release, crash, pause…).
	Actions() []string
	// Start begins a run. decode fills the service's own run spec from the
	// request (the web layer passes its JSON body decoder), so each service
	// keeps its own spec type and the web layer its one error vocabulary.
	Start(decode func(spec any) error) (Run, error)
	// Get finds an open run by id.
	Get(id string) (Run, bool)
	// Runs lists the open runs, oldest first.
	Runs() []Run
	// Delete ends a run and removes what it wrote.
	Delete(id string) error
}

// Warmer is a Classroom whose server is slow to start (PostgreSQL's initdb
// takes a second or more): the classroom page warms it when a teacher opens
// it, so the first run does not wait, and a server nobody opens the
// classroom for is never started.
type Warmer interface {
	// Warm begins starting the server in the background; it returns at
	// once and does nothing when the server is up or starting.
	Warm()
}

// Run is one classroom run. Every command returns an error in the web
// layer's vocabulary (fault) when the run refuses it.
type Run interface {
	ID() string
	// State is the run's whole state as JSON-able data.
	State() any
	Step() error
	Back() error
	Seek(step int) error
	Play() error
	Pause() error
	SetSpeed(x float64) error
	Act(client, action string) error
	// Subscribe follows the run's state.
	Subscribe() (Subscription, error)
}

// Drawer is a Run that draws its recorded history as a time–space diagram
// (one line per client, the server and the resource), an SVG document: the
// service draws it, so the page and the CLI show one picture.
type Drawer interface {
	TimeSpaceSVG(w io.Writer) error
}

// Subscription signals a run's changes, coalesced: C has at most one
// pending signal, after which State is the newest; Done closes when the
// run ends.
type Subscription interface {
	C() <-chan struct{}
	Done() <-chan struct{}
	State() any
	Close()
}

// Service is one lock service as the rest of zklockviz sees it.
type Service struct {
	// Name is how URLs (?service=) and snapshots (Snapshot.Service) name
	// it: lower case, no spaces.
	Name string
	// Title is how pages name it ("ZooKeeper").
	Title string
	// CheckName says whether name can name a lock here, without asking the
	// server; its error wraps ErrBadName and says which rule failed.
	CheckName func(name string) error
	// Reader follows live locks; nil when the service is not connected.
	Reader Reader
	// Classroom runs scenarios; nil when it is off.
	Classroom Classroom
	// Words are how the pages word its locks; nil: NeutralWords.
	Words *Words
}

// Registry holds the services by name. cmd fills it at startup; the web
// layer looks services up per request. The zero value is empty and ready.
type Registry struct {
	mu       sync.RWMutex
	services map[string]Service
	order    []string
}

// Register adds s. A service needs a name and a name check, and is
// registered once.
func (r *Registry) Register(s Service) error {
	if s.Name == "" {
		return errors.New("lockservice: a service needs a name")
	}
	if s.CheckName == nil {
		return fmt.Errorf("lockservice: service %s: CheckName is required", s.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.services[s.Name]; dup {
		return fmt.Errorf("lockservice: service %s registered twice", s.Name)
	}
	if r.services == nil {
		r.services = map[string]Service{}
	}
	r.services[s.Name] = s
	r.order = append(r.order, s.Name)
	return nil
}

// DefaultName is the service a request that names none means: ZooKeeper,
// so URLs without ?service= mean what they always did. It is the one
// place the web layer reads an empty name as a service.
const DefaultName = lockqueue.ZooKeeper

// defaultTitle names the default service on a server that has not
// registered it (zookeeper.Service's Title).
const defaultTitle = "ZooKeeper"

// IsDefault reports whether name is the default service (or names none).
func IsDefault(name string) bool { return name == "" || name == DefaultName }

// Lookup finds a service by name; an empty name is the default service.
func (r *Registry) Lookup(name string) (Service, error) {
	if name == "" {
		name = DefaultName
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.services[name]
	if !ok {
		return Service{}, fmt.Errorf("%w %q: known services: %v", ErrUnknownService, name, r.order)
	}
	return s, nil
}

// Default is the service a request that names none means, an
// ErrUnknownService when it is not registered.
func (r *Registry) Default() (Service, error) { return r.Lookup("") }

// DefaultOrName is the default service, or, when it is not registered,
// a service that only names it (no reader, no classroom, no words).
func (r *Registry) DefaultOrName() Service {
	if s, err := r.Default(); err == nil {
		return s
	}
	return Service{Name: DefaultName, Title: defaultTitle}
}

// All lists the services in registration order.
func (r *Registry) All() []Service {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Service, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.services[n])
	}
	return out
}

// Names lists the registered names in registration order.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.order)
}
