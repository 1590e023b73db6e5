package redislock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/redis/redislocal"
	"github.com/zklockviz/zklockviz/simulator"
)

// Master actions, on Redlock's masters (the step's client names a master,
// M1…M5).
const (
	ActStop    = "stop"    // SIGTERM: the master is down until start
	ActStart   = "start"   // a stopped master comes back, empty
	ActRestart = "restart" // a real restart without persistence: every key lost
	// ActExpire emulates a clock jump on the master: its copy of the key
	// expires at once (PEXPIRE key 1). A real jump cannot be staged here
	// (libfaketime makes Debian's redis-server hang).
	ActExpire = "clock-jump"
	// ActDelayedRestart is the restart Redlock requires of a master
	// without persistence: it loses every key, and stays out for at least
	// the longest TTL, so that every lock it may have granted has expired
	// before it grants another. Its start is its rejoining.
	ActDelayedRestart = "restart-delayed"
)

var masterActions = []string{ActStop, ActStart, ActRestart, ActExpire, ActDelayedRestart}

// master is one Redis server the world reads: the classroom's shared one,
// or one of Redlock's, which the world owns (srv set).
type master struct {
	name string
	addr string
	obs  *redis.Client
	srv  *redislocal.Server
	// out: restarted with the delay (ActDelayedRestart) and not rejoined
	// yet; outToken is the copy it lost, outAt when, on the run's clock.
	out      bool
	outToken string
	outAt    time.Duration
}

func newMaster(name, addr string, srv *redislocal.Server) *master {
	return &master{name: name, addr: addr, srv: srv, obs: redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: 1, PoolSize: 2, DialTimeout: time.Second, ReadTimeout: commandTimeout,
	})}
}

func (m *master) close() error {
	m.obs.Close()
	if m.srv == nil {
		return nil
	}
	return m.srv.Close()
}

func masterName(i int) string { return "M" + strconv.Itoa(i+1) }

// startMasters starts Redlock's n masters for one world: a restart must not
// touch another run's keys.
func startMasters(ctx context.Context, n int) ([]*master, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	srvs, err := redislocal.StartN(ctx, n, redislocal.Options{})
	if err != nil {
		return nil, fmt.Errorf("start %d redis masters: %w", n, err)
	}
	out := make([]*master, n)
	for i, s := range srvs {
		out[i] = newMaster(masterName(i), s.Addr(), s)
	}
	return out, nil
}

// tokens is the value each master holds for the key ("" when it has none
// or is down), read by the classroom's own connections.
func (w *world) tokens(ctx context.Context) []string {
	out := make([]string, len(w.masters))
	for i, m := range w.masters {
		if m.srv != nil && !m.srv.Running() {
			continue
		}
		if v, err := m.obs.Get(ctx, w.key).Result(); err == nil {
			out[i] = v
		}
	}
	return out
}

func (w *world) masterByName(name string) *master {
	if i := slices.IndexFunc(w.masters, func(m *master) bool { return m.name == name }); i >= 0 {
		return w.masters[i]
	}
	return nil
}

// actMaster does a master action; then the waiters poll once.
func (w *world) actMaster(ctx context.Context, m *master, action string) error {
	var text string
	switch action {
	case ActStop:
		if err := m.srv.Stop(); err != nil {
			return fmt.Errorf("stop %s: %w", m.name, err)
		}
		text = fmt.Sprintf("master %s (%s) stops: the clients cannot reach it", m.name, m.addr)
	case ActStart:
		if err := m.srv.Start(ctx); err != nil {
			return fmt.Errorf("start %s: %w", m.name, err)
		}
		text = fmt.Sprintf("master %s comes back on %s, empty (no persistence)", m.name, m.addr)
		if m.out {
			text = w.rejoin(m)
		}
	case ActDelayedRestart:
		var err error
		if text, err = w.restartDelayed(ctx, m); err != nil {
			return err
		}
	case ActRestart:
		if err := m.srv.Restart(ctx); err != nil {
			return fmt.Errorf("restart %s: %w", m.name, err)
		}
		text = fmt.Sprintf("master %s restarts without persistence (a real restart of redis-server): its copy of the key is lost", m.name)
	case ActExpire:
		if err := m.obs.PExpire(ctx, w.key, time.Millisecond).Err(); err != nil {
			return fmt.Errorf("expire the key on %s: %w", m.name, err)
		}
		// Until the millisecond is over the key still reads as there.
		for {
			n, err := m.obs.Exists(ctx, w.key).Result()
			if err != nil {
				return fmt.Errorf("read the key on %s: %w", m.name, err)
			}
			if n == 0 {
				break
			}
			if err := simulator.Sleep(ctx, time.Millisecond); err != nil {
				return err
			}
		}
		text = fmt.Sprintf("master %s's clock jumps forward (emulated: PEXPIRE %s 1): its copy of the key expires early", m.name, w.key)
	default:
		return fmt.Errorf("unknown master action %q", action)
	}
	w.Emit(simulator.Event{Client: m.name, Event: action, Text: text})
	return w.pollRound(ctx)
}

// restartDelayed restarts m without persistence and keeps it out until
// its start: Redlock's delayed restart. Until then the copy it lost still
// counts for the majority of the client that had it (keyToken): a master
// kept out can grant that lock to no one else, which is the algorithm's
// whole argument.
func (w *world) restartDelayed(ctx context.Context, m *master) (string, error) {
	tok, err := m.obs.Get(ctx, w.key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("read the key on %s: %w", m.name, err)
	}
	if err := m.srv.Stop(); err != nil {
		return "", fmt.Errorf("restart %s: %w", m.name, err)
	}
	m.out, m.outToken, m.outAt = true, tok, w.Clock
	lost := "it held no copy of the key"
	if tok != "" {
		lost = fmt.Sprintf("its copy of %s's key is lost, but kept out it can grant that lock to no one else, so %s still holds a majority as Redlock counts it", w.clientOf(tok), w.clientOf(tok))
	}
	return fmt.Sprintf("master %s restarts without persistence, with Redlock's delay: it stays out for at least the longest TTL (%d ms) before it rejoins, so that every lock it may have granted has expired first; %s",
		m.name, w.p.ExpiryMs, lost), nil
}

// rejoin is a delayed master's start: on the run's clock, at least the
// key's TTL after its restart. (No key of the run's should be held across
// it: the classroom holds keys' clocks between steps, so a key would not
// lose the time the run's clock skips.)
func (w *world) rejoin(m *master) string {
	if due := m.outAt + time.Duration(w.p.ExpiryMs)*time.Millisecond; w.Clock < due {
		w.Clock = due
	}
	m.out, m.outToken = false, ""
	return fmt.Sprintf("master %s rejoins, empty, after its delay: at least the key's %d ms TTL since its restart, so no lock it granted before can still be held", m.name, w.p.ExpiryMs)
}

// redlockSnapshot draws every master: its copy of the key (whose token,
// time left) or its absence, and whether it is up.
func (w *world) redlockSnapshot(ctx context.Context, snap *lockqueue.Snapshot) {
	tokens := w.tokens(ctx)
	quorum, _ := w.keyToken(ctx)
	for i, m := range w.masters {
		if !m.srv.Running() {
			msg := fmt.Sprintf("master %s (%s) is down", m.name, m.addr)
			if m.out {
				msg = fmt.Sprintf("master %s (%s) is out after a restart without persistence: it rejoins no sooner than the key's %d ms TTL after it, and grants nothing meanwhile", m.name, m.addr, w.p.ExpiryMs)
			}
			snap.Alerts = append(snap.Alerts, lockqueue.Alert{Kind: lockqueue.AlertDisconnect, Nodes: []string{m.name}, Message: msg})
			continue
		}
		if tokens[i] == "" {
			continue
		}
		n := lockqueue.Node{Name: m.name + ":" + tokens[i], Seq: -1, Mode: lockqueue.Exclusive, Recipe: lockqueue.Generic,
			Holding: tokens[i] == quorum, Data: tokens[i],
			Rare: &lockqueue.Rare{Client: tokens[i], LeaseID: m.name, Folder: m.name, LeaseTTLMs: w.p.ExpiryMs},
		}
		if pttl, err := w.leftMs(ctx, i); err == nil && pttl > 0 {
			n.SetLeaseLeftMs(pttl)
		}
		snap.Exists = true
		snap.Nodes = append(snap.Nodes, n)
	}
}

// masterStates reads every master's copy of the key: its value (whose
// token) and PTTL, or that the master is down.
func (w *world) masterStates(ctx context.Context) []simulator.MasterState {
	tokens := w.tokens(ctx)
	out := make([]simulator.MasterState, len(w.masters))
	for i, m := range w.masters {
		ms := simulator.MasterState{Name: m.name, Addr: m.addr, Up: m.srv == nil || m.srv.Running()}
		if ms.Up && tokens[i] != "" {
			ms.Token, ms.Client = tokens[i], w.clientOf(tokens[i])
			if pttl, err := w.leftMs(ctx, i); err == nil && pttl > 0 {
				ms.LeftMs = pttl
			}
		}
		out[i] = ms
	}
	return out
}
