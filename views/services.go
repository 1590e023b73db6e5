package views

import (
	"cmp"
	"net/url"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Every page names a lock by (service, path). The default service's URLs
// carry no service (lockqueue.WireService), so every link that existed
// before other services keeps working.

// Service is a lock service as the pages name it and word its locks.
type Service struct {
	// Name is the registry's name (?service=); Title is how people call it.
	Name  string
	Title string
	// Default: a request that names no service means this one.
	Default bool
	// Words are the service's own words for its locks.
	Words lockservice.Words
}

// NewService is svc as the pages name it, with its words (the neutral
// ones when it supplies none).
func NewService(svc lockservice.Service) Service {
	return Service{Name: svc.Name, Title: cmp.Or(svc.Title, svc.Name), Default: lockservice.IsDefault(svc.Name), Words: svc.WordsOf()}
}

// Missing says that a live lock of s has nothing to show.
func (s Service) Missing() string { return cmp.Or(s.Words.Missing, lockservice.NeutralWords().Missing) }

// ReadOnly says what watching a lock of s does to its server.
func (s Service) ReadOnly() string {
	return cmp.Or(s.Words.ReadOnly, "zklockviz never writes to "+s.Title+".")
}

// NoReader is what a server that cannot add watches on s runs without.
func (s Service) NoReader() string { return cmp.Or(s.Words.NoReader, "its reader") }

// LockHref is the lock view's URL for a lock of a service.
func LockHref(service, path string) string {
	return "/lock?" + LockQuery(service, path)
}

// LockQuery is the lock's URL query (lockqueue.LockID.Query, service
// first as links always had it): the lock page carries it
// (data-lock-query) so its script builds every URL and the watch request
// from it.
func LockQuery(service, path string) string {
	q := "path=" + url.QueryEscape(path)
	if w := lockqueue.WireService(service); w != "" {
		return "service=" + url.QueryEscape(w) + "&" + q
	}
	return q
}

// JSONHref is the lock's GET /api/v1/lock URL.
func (l Lock) JSONHref() string {
	return "/api/v1" + LockHref(l.Service.Name, l.Path)
}

// ServiceStatus is one registered service as the dashboard shows it: its
// reader's connection and the error that keeps it from its locks.
type ServiceStatus struct {
	Service
	// Reader is false for a service registered only for the classroom.
	Reader     bool
	Connection string
	// Text says what Connection means for the locks of the service.
	Text string
	// Err is the reader's own message (it names the service, the address
	// and what to check), empty when nothing is wrong.
	Err string
}

// NewServiceStatus words a reader's state; err is its Err().
func NewServiceStatus(s Service, reader bool, conn lockqueue.Connection, err error) ServiceStatus {
	st := ServiceStatus{Service: s, Reader: reader, Connection: string(conn)}
	if !reader {
		st.Connection = "none"
		st.Text = s.Title + ": this server has no reader"
		return st
	}
	st.Text = serviceConnectionText(s.Title, string(conn))
	if err != nil {
		st.Err = err.Error()
	}
	return st
}

// SetServices tells the dashboard the registered services: their badges,
// the filter's choices and each reader's status.
func (d *Dashboard) SetServices(ss []ServiceStatus) {
	d.Services = ss
	titles := map[string]string{}
	for _, s := range ss {
		titles[s.Name] = s.Title
	}
	for i, l := range d.Locks {
		d.Locks[i].ServiceTitle = cmp.Or(titles[l.Service], l.Service)
	}
}

// OnlyService says that the locks listed are one service's ("" for all):
// the server chose them.
func (d *Dashboard) OnlyService(name string) { d.Filter = name }

// Readers are the services whose reader the dashboard reports beside
// the default service's own line.
func (d Dashboard) Readers() []ServiceStatus {
	var out []ServiceStatus
	for _, s := range d.Services {
		if s.Reader && !s.Default {
			out = append(out, s)
		}
	}
	return out
}

// DefaultService is the default service's status, the service alone
// when it is not registered.
func (d Dashboard) DefaultService() ServiceStatus {
	for _, s := range d.Services {
		if s.Default {
			return s
		}
	}
	return ServiceStatus{Service: d.Default}
}

// ShowDefault reports whether the dashboard has the default service's
// line (ZooKeeper's ensemble): a server started without it (no --zk) has
// no state of it to report, unless one of its locks is listed anyway.
func (d Dashboard) ShowDefault() bool {
	def := d.DefaultService()
	for _, l := range d.Locks {
		if l.Service == def.Name {
			return true
		}
	}
	for _, s := range d.Services {
		if s.Default {
			return s.Reader
		}
	}
	return true
}

// Watchable lists the services that can add a lock to watch.
func (d Dashboard) Watchable() []ServiceStatus {
	var out []ServiceStatus
	for _, s := range d.Services {
		if s.Reader {
			out = append(out, s)
		}
	}
	return out
}

func pendingRow(service, path string) LockRow {
	return LockRow{
		Service: service, Path: path, Href: LockHref(service, path), Recipe: "—",
		Holders: "not read yet", OldestWait: "—", Alerts: "—", Pending: true,
	}
}

// serviceConnectionText says what a service's connection state means for
// its locks on screen.
func serviceConnectionText(title, c string) string {
	switch c {
	case string(lockqueue.Connected):
		return title + ": connected"
	case string(lockqueue.Reconnecting):
		return title + ": unreachable, reconnecting — lock states below are NOT live"
	case string(lockqueue.Expired):
		return title + ": session expired — lock states below are NOT live"
	case "mixed":
		return title + ": some locks are not live"
	case "":
		return title + ": no lock watched yet"
	}
	return title + ": " + c
}

// Lease is a node's lease as shown: its id, and its time left when the
// snapshot was taken, counted down from then.
type Lease struct {
	ID string
	// Left is the time left now, as text; Until is when it runs out, in
	// Unix milliseconds, for the browser's countdown (0: no time known).
	Left  string
	Until int64
	TTL   string
}

// nodeLease is n's lease, nil when the service has none for it. The
// countdown starts from the snapshot's UpdatedAt: LeaseLeftMs was true then.
func nodeLease(n lockqueue.Node, updated, now time.Time) *Lease {
	if n.LeaseID() == "" && n.LeaseTTLMs() == 0 && n.LeaseLeftMs() == 0 {
		return nil
	}
	l := &Lease{ID: n.LeaseID()}
	if n.LeaseTTLMs() > 0 {
		l.TTL = Duration(time.Duration(n.LeaseTTLMs()) * time.Millisecond)
	}
	if n.LeaseLeftMs() > 0 && !updated.IsZero() {
		until := updated.Add(time.Duration(n.LeaseLeftMs()) * time.Millisecond)
		l.Until = until.UnixMilli()
		l.Left = LeaseLeftText(until.Sub(now))
	}
	return l
}

// LeaseLeftText is a lease's time left; queue.js's tick counts it down
// with the same words (data-until, data-expired).
func LeaseLeftText(left time.Duration) string {
	if left <= 0 {
		return "expired"
	}
	return Duration(left) + " left"
}

// Provenance words who vouches for a waits-for edge.
func Provenance(p lockqueue.Provenance) string {
	if p == lockqueue.ByServer {
		return "confirmed"
	}
	return "inferred"
}

// EdgeView is one waits-for edge as the table shows it.
type EdgeView struct {
	To         string
	Provenance string
}

func waitEdges(n lockqueue.Node) []EdgeView {
	var out []EdgeView
	for _, e := range n.WaitEdges() {
		out = append(out, EdgeView{To: e.To, Provenance: Provenance(e.Provenance)})
	}
	return out
}

// Empty is what the dashboard's table says with no lock to list.
func (d Dashboard) Empty() string {
	switch {
	case d.List.Q != "" || d.List.State != "" && d.List.State != "all":
		return "No watched lock matches."
	case d.List.Cursor != "" && d.List.Matched > 0:
		return "No lock on this page any more."
	case d.Filter != "":
		return "No lock of this service is watched."
	}
	return "No locks watched yet. Add a lock parent path below."
}

// connClass and connText show a lock's connection; a lock not read yet has
// none.
func connClass(c string) string { return cmp.Or(c, "unknown") }

func connText(c string) string { return cmp.Or(c, "?") }
