package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/postgres/pglock"
	"github.com/zklockviz/zklockviz/queuecost"
	"github.com/zklockviz/zklockviz/redis/redislock"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/zookeeper"
	"github.com/zklockviz/zklockviz/zookeeper/zksim"
)

// classService is a lock service as cmd knows it: the prefix of its
// --watch values, how serve reads its server's flags, and its classroom
// (what `zklockviz sim --service` runs and what serve --sim registers). A
// new service adds its line to classServices, and the flags, the side by
// side and the classroom follow.
type classService struct {
	name string
	// aliases are what people type for it ("pg"), suggested as name.
	aliases []string
	// readConfig reads its server's flags and its locks (--watch and
	// --watch-under values prefixed with its name) into c; given says its
	// server was given. Nil for ZooKeeper, whose paths serve reads itself.
	readConfig func(f *serveFlags, c *serveConfig, watch, under []string) (given bool, err error)
	catalog    *simulator.Catalog
	// words are its classroom's words: its panes of scenario 12.
	words lockservice.ClassroomWords
	// pkg is the package that installs the server its classroom starts;
	// empty for ZooKeeper, whose ensemble is given with --zk.
	pkg string
	// newClassroom builds the classroom on a server it starts itself; nil
	// for ZooKeeper, whose manager works on --zk's ensemble.
	newClassroom func(simulator.ManagerConfig) (lockservice.Classroom, *simulator.Manager, error)
	// noStrategy and noClients say why sim refuses --strategy and
	// --clients; empty when the service takes them.
	noStrategy, noClients string
	// onceFlag is its server's flag when it names one server, a
	// cluster's members in one value ("zk"); "" when it is repeatable
	// (Redis's masters).
	onceFlag string
	// register registers it with serve, its reader built from its own
	// flags; zkSim is the manager on --zk's ensemble (newSim), nil
	// without --sim.
	register func(m *Main, zkSim *simulator.Manager) error
}

var classServices = []classService{
	{
		name: lockqueue.ZooKeeper, aliases: []string{"zk"}, catalog: zksim.Catalog, words: zksim.ClassroomWords, onceFlag: "zk",
		register: func(m *Main, zkSim *simulator.Manager) error {
			return m.services.Register(zookeeper.Service(m.watcher, zkSim))
		},
	},
	{
		name: redislock.Name, readConfig: readRedisConfig, catalog: redislock.Catalog, words: redislock.ClassroomWords, pkg: "redis-server", newClassroom: newRedisClassroom,
		register:   ownServer((*Main).registerRedis),
		noStrategy: "--strategy is ZooKeeper's: Redis waiters poll",
		noClients:  "--clients: the Redis scenarios have a fixed cast; drop --clients",
	},
	{
		name: etcdlock.Name, readConfig: readEtcdConfig, catalog: etcdlock.Catalog, words: etcdlock.ClassroomWords, pkg: "etcd-server", newClassroom: etcdlock.NewClassroom,
		register: ownServer((*Main).registerEtcd), onceFlag: "etcd",
		noStrategy: "--strategy is ZooKeeper's: etcd's Mutex waiters always watch their predecessor",
		noClients:  "--clients: the etcd scenarios have a fixed cast; drop --clients",
	},
	{
		name: pglock.Name, aliases: []string{"pg", "postgresql", "psql"}, readConfig: readPostgresConfig, catalog: pglock.Catalog, words: pglock.ClassroomWords, pkg: "postgresql", newClassroom: pglock.NewClassroom,
		register: ownServer((*Main).registerPostgres), onceFlag: "postgres",
		noStrategy: "--strategy is ZooKeeper's: PostgreSQL's waiters queue in the server",
		noClients:  "--clients: the PostgreSQL scenarios have a fixed cast; drop --clients",
	},
}

// serviceOf finds a service being registered in classServices. It is set
// in init, not declared so: a service's register in classServices calls
// registerService, which reads classServices back, a cycle Go refuses in
// a package variable's initialisation.
var serviceOf func(name string) (classService, error)

func init() { serviceOf = classServiceNamed }

// ownServer is the register of a service whose classroom starts a server
// of its own (registerService), not a manager on --zk's ensemble.
func ownServer(register func(*Main) error) func(*Main, *simulator.Manager) error {
	return func(m *Main, _ *simulator.Manager) error { return register(m) }
}

// registerServices registers every service of classServices with serve:
// the default first (Lookup("") and the dashboard's first line), the
// others by name, the order the pages list them in.
func (m *Main) registerServices(zkSim *simulator.Manager) error {
	m.services = &lockservice.Registry{}
	rest := slices.SortedFunc(slices.Values(classServices[1:]), func(a, b classService) int { return strings.Compare(a.name, b.name) })
	var errs []error
	for _, s := range append([]classService{classServices[0]}, rest...) {
		errs = append(errs, s.register(m, zkSim))
	}
	return errors.Join(errs...)
}

// classServiceNamed finds a service by --service; empty is ZooKeeper.
func classServiceNamed(name string) (classService, error) {
	if name == "" {
		name = lockqueue.ZooKeeper
	}
	for _, s := range classServices {
		if s.name == name {
			return s, nil
		}
	}
	return classService{}, usagef("--service %q: want %s", name, classServiceList())
}

// classServiceList names the services for messages: "a, b, c or d".
func classServiceList() string {
	names := make([]string, len(classServices))
	for i, s := range classServices {
		names[i] = s.name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// sidePanes are scenario 12's panes of every service in classServices, in
// the order they are shown.
func sidePanes() []lockservice.SidePane {
	ws := make([]lockservice.ClassroomWords, len(classServices))
	for i, s := range classServices {
		ws[i] = s.words
	}
	return lockservice.SidePanes(ws...)
}

// registerService registers svc, its reader (if any) set, with its
// classroom when serve --sim is on. The classroom's server starts with its
// first run and stops with serve (stopSim).
func (m *Main) registerService(svc lockservice.Service) error {
	if m.Config.Sim {
		cs, err := serviceOf(svc.Name)
		if err == nil && cs.newClassroom == nil {
			err = errors.New("its classroom needs the ensemble's manager (newSim), not a server of its own")
		}
		if err != nil {
			return fmt.Errorf("%s classroom: %w", svc.Name, err)
		}
		cls, sim, err := cs.newClassroom(simulator.ManagerConfig{
			Root: m.Config.SimRoot, Logger: m.log, Publish: m.hub.Publish, Remove: m.hub.Remove,
		})
		if err != nil {
			return fmt.Errorf("%s classroom: %w", svc.Name, err)
		}
		prev := m.stopSim
		m.stopSim = func() error {
			var err error
			if prev != nil {
				err = prev()
			}
			return errors.Join(err, sim.Close())
		}
		svc.Classroom = cls
	}
	return m.services.Register(svc)
}

// newRedisClassroom is Redis's classroom with scenario 7's comparison wired
// in: the same waiters queued on a ZooKeeper and an etcd queuecost starts.
func newRedisClassroom(cfg simulator.ManagerConfig) (lockservice.Classroom, *simulator.Manager, error) {
	return redislock.NewClassroomWith(cfg, func(ctx context.Context, service string, n int, window time.Duration) (redislock.QueueResult, error) {
		r, err := queuecost.Measure(ctx, service, n, window)
		return redislock.QueueResult{Waiters: r.Waiters, Requests: r.Requests, Window: r.Window, Counter: r.Counter}, err
	})
}
