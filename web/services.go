package web

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// The web layer knows lock services only through lockservice: a request
// names one with ?service= (ZooKeeper when left out, so every URL that
// existed before the seam means what it did), and the registry cmd filled
// answers for it.

// serviceOf finds the service a request names in ?service=.
func serviceOf(reg *lockservice.Registry, r *http.Request) (lockservice.Service, error) {
	return serviceNamed(reg, r.URL.Query().Get("service"))
}

// serviceNamed finds a service by name, ZooKeeper for "".
func serviceNamed(reg *lockservice.Registry, name string) (lockservice.Service, error) {
	svc, err := reg.Lookup(name)
	if err != nil {
		return svc, errorf(ErrNotFound, "unknown service %q: this server knows %s", name, strings.Join(reg.Names(), ", "))
	}
	return svc, nil
}

// lockRef reads ?service= and ?path= and checks the name by the service's
// rule: the lock a request is about.
func (s *Server) lockRef(r *http.Request) (lockservice.Service, lockqueue.LockID, error) {
	svc, err := serviceOf(s.cfg.Services, r)
	if err != nil {
		return svc, lockqueue.LockID{}, err
	}
	q := r.URL.Query()
	if !q.Has("path") {
		return svc, lockqueue.LockID{}, errorf(ErrInvalid, "missing ?path= (a lock parent such as /locks/orders)")
	}
	id := lockqueue.LockID{Service: svc.Name, Name: q.Get("path")}
	if err := svc.CheckName(id.Name); err != nil {
		return svc, id, err
	}
	return svc, id, nil
}

// watchedBy reports whether svc's reader follows name.
func watchedBy(svc lockservice.Service, name string) bool {
	return svc.Reader != nil && slices.Contains(svc.Reader.Watched(), name)
}

// zkConnection is the ZooKeeper reader's session state, the top-level
// "connection" of GET /api/v1/locks and the dashboard; empty when no
// ZooKeeper reader runs.
func zkConnection(reg *lockservice.Registry) lockqueue.Connection {
	svc, err := reg.Default()
	if err != nil || svc.Reader == nil {
		return ""
	}
	return svc.Reader.Connection()
}

// hasClassroom reports whether any service offers a classroom, which is
// when /api/v1/sim is served.
func hasClassroom(reg *lockservice.Registry) bool {
	return slices.ContainsFunc(reg.All(), func(s lockservice.Service) bool { return s.Classroom != nil })
}

// classroomOf finds the classroom of the service a request names.
func (s *Server) classroomOf(r *http.Request) (lockservice.Classroom, error) {
	svc, err := s.simService(r)
	if err != nil {
		return nil, err
	}
	return svc.Classroom, nil
}

// isBadName reports a name a service's rule refuses.
func isBadName(err error) bool { return errors.Is(err, lockservice.ErrBadName) }
