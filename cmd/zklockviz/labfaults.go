package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglock"
	"github.com/zklockviz/zklockviz/redis/redislock"
)

// labFaults are the faults the lab can do on each service, in the order
// the help and the errors name them.
var labFaults = map[string][]string{
	lockqueue.ZooKeeper: {lab.Pause, lab.Kill, lab.ServerCrash, lab.CutOff},
	redislock.Name:      {lab.Pause, lab.Kill, lab.ServerCrash, lab.CutOff, lab.Restart, lab.Clock},
	etcdlock.Name:       {lab.Pause, lab.Kill, lab.ServerCrash, lab.CutOff},
	pglock.Name:         {lab.Pause, lab.Kill, lab.ServerCrash, lab.CutOff},
}

// labNeedsThrowaway are the faults that stop the server: the lab does
// them only to a throwaway server it started, never to a user's.
var labNeedsThrowaway = []string{lab.ServerCrash, lab.Restart}

// labNemesis reads --nemesis for a service: none, all (every fault the
// service has, but those that stop the server when it is the user's), or
// a comma-separated list of the service's faults.
func labNemesis(list, service string, users bool) ([]string, error) {
	svc := labServices[service]
	faults := labFaults[service]
	switch list {
	case "none":
		return nil, nil
	case "all":
		if users {
			faults = slices.DeleteFunc(slices.Clone(faults), func(f string) bool { return slices.Contains(labNeedsThrowaway, f) })
		}
		return faults, nil
	}
	out := strings.Split(list, ",")
	for _, n := range out {
		switch {
		case !slices.Contains(lab.Nemeses, n):
			// pause and kill first, as the lab has always named them.
			return nil, usagef("--nemesis: unknown fault %q: want %s, or none; %s also has %s, or all of them",
				n, strings.Join(lab.Nemeses[:2], ", "), svc.title, strings.Join(faults[2:], ", "))
		case !slices.Contains(faults, n):
			return nil, usagef("--nemesis %s: %s has no %s fault: want %s, all or none", n, svc.title, n, strings.Join(faults, ", "))
		case users && slices.Contains(labNeedsThrowaway, n):
			return nil, usagef("--nemesis %s stops the server, and the lab stops only a throwaway server it started, never the one --%s names: leave --%s out (a throwaway %s is started), or pick other faults",
				n, svc.flag, svc.flag, svc.title)
		}
	}
	return out, nil
}

// labControl is what the nemesis may do to a throwaway server s: kill or
// stop it, and start it again.
func labControl(s labControllable) *lab.ServerControl {
	return &lab.ServerControl{Kill: s.Kill, Stop: s.Stop, Start: s.Start}
}

// labControllable is a throwaway server as the nemesis strikes it: each
// *local package's Server (redislocal's Start empties it first).
type labControllable interface {
	Kill() error
	Stop() error
	Start(context.Context) error
}

// labRedisNote is what a Redis throwaway server loses when it is killed
// or restarted: it runs without persistence (redislocal).
const labRedisNote = "without persistence every key is lost, the token counter too: tokens go back"

// labRedisJump is the clock fault on the Redis at addr, emulated as the
// classroom's Redlock does (redislock.ActExpire): the lock's key expires
// at once, as if the server's clock jumped past its TTL. A real jump
// cannot be staged (libfaketime makes Debian's redis-server hang).
func labRedisJump(addr, key string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true, DialTimeout: reachTimeout})
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(ctx, reachTimeout)
		defer cancel()
		set, err := rdb.PExpire(ctx, key, time.Millisecond).Result()
		if err != nil {
			return "", fmt.Errorf("clock jump, emulated: PEXPIRE %s 1: %w", key, err)
		}
		how := fmt.Sprintf("emulated: PEXPIRE %s 1, the key expires as if the server's clock jumped past its TTL", key)
		if !set {
			how += " (no key: nobody held)"
		}
		return how, nil
	}
}

// labRoute is how a client reaches the server at addr through a proxy,
// for the cut fault: the server's host:port, and addr with the proxy's
// in its place (the client's $ZKLOCKVIZ_LAB_SERVER).
func labRoute(service, addr string) (target string, through func(proxy string) string, err error) {
	switch service {
	case pglock.Name:
		return pgRoute(addr)
	case etcdlock.Name:
		if strings.Contains(addr, ",") {
			return "", nil, usagef("--nemesis cut: the lab cuts a client off one server, and --etcd names several")
		}
		u, err := url.Parse(addr)
		if err != nil {
			return "", nil, fmt.Errorf("etcd endpoint %s: %w", addr, err)
		}
		return u.Host, func(p string) string { v := *u; v.Host = p; return v.String() }, nil
	}
	if strings.Contains(addr, ",") {
		return "", nil, usagef("--nemesis cut: the lab cuts a client off one server, and %s names several", addr)
	}
	return addr, func(p string) string { return p }, nil
}

// pgRoute is labRoute for a PostgreSQL DSN, a URL or key=value pairs
// (where a later key wins, so the proxy's host and port are appended).
func pgRoute(dsn string) (string, func(string) string, error) {
	cc, err := pglock.ConnConfig(dsn, "")
	if err != nil {
		return "", nil, err
	}
	target := net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		return target, func(p string) string { v := *u; v.Host = p; return v.String() }, nil
	}
	return target, func(p string) string {
		host, port, _ := net.SplitHostPort(p)
		return dsn + " host=" + host + " port=" + port
	}, nil
}

// labNetwork is the run's network for the cut fault: each client's
// $ZKLOCKVIZ_LAB_SERVER names its proxy instead of the server.
func labNetwork(service, addr string) (*lab.Network, error) {
	target, through, err := labRoute(service, addr)
	if err != nil {
		return nil, err
	}
	return &lab.Network{Target: target, Through: func(cmd *exec.Cmd, proxy string) {
		cmd.Env = append(cmd.Env, labServerEnv+"="+through(proxy))
	}}, nil
}

// labFaultsHelp is the lab's help on its faults: each, and the services
// that have it.
func labFaultsHelp() string {
	words := map[string]string{
		lab.Pause:       "SIGSTOP a client for --pause, then SIGCONT",
		lab.Kill:        "kill -9 a client, then start it again",
		lab.ServerCrash: "kill -9 the lock server, start it again after --pause on\nthe same port with its data (a throwaway server only)",
		lab.CutOff:      "cut a client off the server for --pause (its own proxy\ndrops its connections and refuses new ones), then heal",
		lab.Restart:     "restart the server at once without persistence: every key\nis lost, the token counter too (a throwaway server only)",
		lab.Clock:       "jump the server's clock past the lock's TTL, emulated:\nPEXPIRE the key 1 ms (libfaketime hangs redis-server)",
	}
	var b strings.Builder
	b.WriteString("\nFaults (--nemesis; all is every fault the service has):\n")
	for _, f := range lab.Nemeses {
		var on []string
		for _, name := range labServiceOrder {
			if slices.Contains(labFaults[name], f) {
				on = append(on, name)
			}
		}
		svcs := "every service"
		if len(on) < len(labFaults) {
			svcs = strings.Join(on, ", ") + " only"
		}
		fmt.Fprintf(&b, "  %-8s %s:\n           %s\n", f, svcs, strings.ReplaceAll(words[f], "\n", "\n           "))
	}
	return b.String()
}

// labServiceOrder is the services as the help names them.
var labServiceOrder = []string{lockqueue.ZooKeeper, redislock.Name, etcdlock.Name, pglock.Name}

// labFaultHooks gives cfg what its faults need from the server srv of
// service: the throwaway server's controls (none for the user's), Redis's
// clock, and each client's proxy when the nemesis cuts.
func labFaultHooks(cfg *lab.Config, service, path string, srv labServer) error {
	if srv.control != nil {
		c := *srv.control
		cfg.Server = &c
	}
	if service == redislock.Name {
		if cfg.Server == nil {
			cfg.Server = &lab.ServerControl{}
		}
		cfg.Server.Jump = labRedisJump(srv.addr, path)
		cfg.Server.Note = labRedisNote
	}
	// A schedule given (a replay) may cut when the nemesis's list does not.
	if slices.Contains(cfg.Nemesis, lab.CutOff) || slices.ContainsFunc(cfg.Schedule, func(f lab.Fault) bool { return f.Kind == lab.CutOff }) {
		n, err := labNetwork(service, srv.addr)
		if err != nil {
			return err
		}
		cfg.Network = n
	}
	return nil
}

// labFaultNotes are what a user should know before reading a run of
// service with the nemesis's faults, as the run tells them at its start.
func labFaultNotes(service string, nemesis []string) []string {
	has := func(f string) bool { return slices.Contains(nemesis, f) }
	var notes []string
	switch {
	case service == redislock.Name && (has(lab.Restart) || has(lab.ServerCrash)):
		notes = append(notes, "a killed or restarted Redis comes back empty (no persistence): the lock's key is gone, and so is the token counter, so tokens go back: with --fencing on the resource refuses every write until the counter passes the newest token it took")
	}
	if service == redislock.Name && has(lab.Clock) {
		notes = append(notes, "the clock jump is emulated, as the classroom's Redlock does: PEXPIRE of the lock's key 1 ms, for libfaketime hangs Debian's redis-server")
	}
	if has(lab.CutOff) {
		switch service {
		case pglock.Name:
			notes = append(notes, "PostgreSQL keeps a lock until it sees its session's socket closed; the lab's cut closes the proxy's both ends, so the server sees it at once and lets the lock go, while the cut holder learns it at its next check of its connection (50 ms): two believers meanwhile. Across a real partition, where no FIN comes, the server would keep the lock until TCP keepalive or a timeout ended the session")
		case lockqueue.ZooKeeper:
			notes = append(notes, "a cut holder learns that its session expired only when it reaches the server again, after the cut")
		case etcdlock.Name:
			notes = append(notes, "a cut holder learns that its lease expired on its own clock, when no keep-alive answered for the lease's TTL")
		case redislock.Name:
			notes = append(notes, "a cut holder learns it lost from its TTL timer, cut or not; its release fails while cut")
		}
	}
	return notes
}
