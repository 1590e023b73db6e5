package zksim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/proxy"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// client is one simulated lock user: its own ZooKeeper session, reached
// through its own proxy so the simulator can cut it off without killing it.
// Its methods run the recipe; they are called by one goroutine at a time
// (the world's step, or one settle worker per client).
type client struct {
	name  string
	mode  lockqueue.Mode
	index int // creation order
	w     *world

	proxy   *proxy.Proxy
	conn    *zk.Conn
	sess    *sessionState
	session int64

	node     string // lock node name while it has one
	lastNode string // the node it had, for display after it left
	token    int64  // fencing token (czxid), once read
	state    string
	waitsFor string // node name, while waiting
	line     int    // pseudocode line it is at
	joined   int    // step it joined at
	since    int    // step of the last state change
	cutAt    time.Time
	// While a split scenario's cut client waits for its expire step (and
	// a paused one for its resume): the node it had and whether it held.
	cutNode string
	cutHeld bool
	// lapsed: its session expired while it was cut off (the expire step
	// ran); a paused client resumes only then.
	lapsed  bool
	closed  atomic.Bool
	watches []*armedWatch
	stats   simulator.Stats

	// In a scene of two locks (scene.go): owner is the client whose
	// session a node on the other lock shares, set on that member; member
	// is the owner's node there.
	owner, member *client
}

// armedWatch is a watch the client has set and not yet seen fire.
type armedWatch struct {
	path string // full server path
	kind string // "exists" or "children"
	ch   <-chan zk.Event
	// creation marks an exists watch set on a node that was already gone:
	// ZooKeeper keeps it as a watch for the node's creation, which never
	// comes (sequence numbers are not reused). It stays armed on the
	// server until the session ends, but it can wake nobody, so the
	// simulator's watch table leaves it out once the client has moved on.
	creation bool
}

// sessionState follows a connection's session events, so a step can wait
// for "has a session" without a channel that could fill up while the
// client is cut off and retrying.
type sessionState struct {
	mu      sync.Mutex
	state   zk.State
	expired bool
	changed chan struct{}
}

func newSessionState() *sessionState {
	return &sessionState{state: zk.StateDisconnected, changed: make(chan struct{})}
}

func (s *sessionState) set(st zk.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = st
	if st == zk.StateExpired {
		s.expired = true
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// wait blocks until ok holds or ctx ends.
func (s *sessionState) wait(ctx context.Context, ok func(st zk.State) bool) error {
	for {
		s.mu.Lock()
		st, ch := s.state, s.changed
		s.mu.Unlock()
		if ok(st) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("session state %v: %w", st, context.Cause(ctx))
		case <-ch:
		}
	}
}

// zkLogger sends go-zookeeper's chatter to slog at debug level.
type zkLogger struct {
	log  *slog.Logger
	name string
}

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("zk: "+fmt.Sprintf(format, args...), "client", l.name)
}

// dial opens a session on servers whose state sess follows, with
// go-zookeeper's chatter logged as name's.
func dial(servers []string, timeout time.Duration, sess *sessionState, log *slog.Logger, name string) (*zk.Conn, error) {
	conn, _, err := zk.Connect(servers, timeout,
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession {
				sess.set(ev.State)
			}
		}),
		zk.WithLogger(zkLogger{log: log, name: name}),
		zk.WithLogInfo(false),
	)
	return conn, err
}

// connect opens the client's proxy and session.
func (c *client) connect(ctx context.Context, server string) error {
	p, err := proxy.New(server)
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	c.proxy = p
	c.sess = newSessionState()
	conn, err := dial([]string{p.Addr()}, c.w.sessionTimeout, c.sess, c.w.Log, c.name)
	if err != nil {
		p.Close()
		return fmt.Errorf("%s: connect: %w", c.name, err)
	}
	c.conn = conn
	if err := c.sess.wait(ctx, func(st zk.State) bool { return st == zk.StateHasSession }); err != nil {
		c.close()
		return fmt.Errorf("%s: no ZooKeeper session through %s to %s: %w", c.name, p.Addr(), server, err)
	}
	c.session = conn.SessionID()
	return nil
}

// close ends the session (if the client can still reach the server) and
// the proxy. Safe to call more than once.
func (c *client) close() {
	if c.closed.Swap(true) || c.owner != nil {
		return // a member's session is its owner's to end
	}
	if c.conn != nil {
		c.conn.Close()
	}
	if c.proxy != nil {
		c.proxy.Close()
	}
}

// live reports whether the client talks to ZooKeeper: not cut off, not closed.
func (c *client) live() bool {
	if c.owner != nil {
		return !c.closed.Load() && c.owner.live()
	}
	return !c.closed.Load() && c.conn != nil && !c.proxy.Cutting()
}

func (c *client) nodePath() string { return c.w.zpath + "/" + c.node }

// join creates the client's lock node and runs the recipe once.
func (c *client) join() (acquired bool, err error) {
	c.line = c.w.recipe.create
	p, err := c.conn.Create(c.w.zpath+"/"+nodePrefix(c.mode, c.name), []byte(c.name),
		zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	c.stats.Create++
	if err != nil {
		return false, fmt.Errorf("%s: create under %s: %w", c.name, c.w.path, err)
	}
	c.node = path.Base(p)
	c.lastNode = c.node
	return c.check()
}

// check is the recipe's loop from getChildren on: hold, or arm the watch
// the strategy calls for and wait. Whom to wait for comes from
// lockqueue.Build, the one place that knows the recipe's rules.
func (c *client) check() (acquired bool, err error) {
	r := c.w.recipe
	for range 100 {
		me, err := c.readQueue()
		if err != nil {
			return false, err
		}
		c.line = r.hold
		if me.Holding {
			c.state, c.waitsFor = simulator.StateHolding, ""
			if err := c.readToken(); err != nil {
				return false, err
			}
			return true, nil
		}
		c.state, c.waitsFor = simulator.StateWaiting, me.WaitsFor
		if c.w.strategy != simulator.Predecessor {
			c.line = r.wait
			return false, nil
		}
		c.line = r.watch
		there, err := c.watchPredecessor(me.WaitsFor)
		if err != nil {
			return false, err
		}
		if there {
			c.line = r.wait
			return false, nil
		}
	}
	return false, fmt.Errorf("%s: the queue kept changing under it for 100 rounds", c.name)
}

// readQueue reads the lock's children (watching them, unless the client
// watches its predecessor) and returns its own node as the recipe places
// it.
func (c *client) readQueue() (lockqueue.Node, error) {
	c.line = c.w.recipe.children
	var names []string
	var err error
	if c.w.strategy == simulator.Predecessor {
		names, _, err = c.conn.Children(c.w.zpath)
		c.stats.GetChildren++
	} else {
		var ch <-chan zk.Event
		names, _, ch, err = c.conn.ChildrenW(c.w.zpath)
		c.stats.GetChildren++
		if err == nil {
			c.arm(c.w.zpath, "children", ch)
		}
	}
	if err != nil {
		return lockqueue.Node{}, fmt.Errorf("%s: getChildren %s: %w", c.name, c.w.path, err)
	}
	children := make([]lockqueue.Child, len(names))
	for i, n := range names {
		children[i] = lockqueue.Child{Name: n, EphemeralOwner: 1}
	}
	q := lockqueue.Build(c.w.path, children, c.w.opts)
	i := slices.IndexFunc(q.Nodes, func(n lockqueue.Node) bool { return n.Name == c.node })
	if i < 0 {
		return lockqueue.Node{}, fmt.Errorf("%s: its node %s is no longer under %s", c.name, c.node, c.w.path)
	}
	return q.Nodes[i], nil
}

// watchPredecessor sets an exists watch on the node the client waits for
// and says whether it is there (if not, the queue must be read again).
func (c *client) watchPredecessor(name string) (there bool, err error) {
	target := c.w.zpath + "/" + name
	if c.w.beforeExists != nil {
		c.w.beforeExists(c.name, target)
	}
	ok, _, ch, err := c.conn.ExistsW(target)
	c.stats.Exists++
	if err != nil {
		return false, fmt.Errorf("%s: exists %s: %w", c.name, target, err)
	}
	// exists() sets a watch whether or not the node is there. When it is
	// gone, the watch waits for a creation that never comes (sequence
	// numbers are not reused) and the client reads the children again.
	// ZooKeeper's own lock recipe (WriteLock) behaves the same way.
	c.arm(target, "exists", ch)
	c.watches[len(c.watches)-1].creation = !ok
	return ok, nil
}

func (c *client) arm(p, kind string, ch <-chan zk.Event) {
	c.watches = append(c.watches, &armedWatch{path: p, kind: kind, ch: ch})
}

// watching reports whether the client has a watch armed on one of paths
// (a children watch counts for any path under the lock).
func (c *client) watching(paths []string) bool {
	for _, w := range c.watches {
		if w.kind == "children" && len(paths) > 0 {
			return true
		}
		for _, p := range paths {
			if w.path == p {
				return true
			}
		}
	}
	return false
}

// fired takes the watches that have fired. A watch invalidated by a lost
// session (EventNotWatching) is dropped but is no notification.
func (c *client) fired() []zk.Event {
	var out []zk.Event
	keep := c.watches[:0]
	for _, w := range c.watches {
		select {
		case ev, ok := <-w.ch:
			if ok && ev.Type != zk.EventNotWatching {
				out = append(out, ev)
			}
		default:
			keep = append(keep, w)
		}
	}
	clear(c.watches[len(keep):])
	c.watches = keep
	return out
}

// reaction is what one client did about the notifications it found.
type reaction struct {
	c        *client
	events   []zk.Event
	acquired bool
	rewait   bool // waits for a different node now
	err      error
}

// react handles the client's fired watches: a waiter runs the recipe again;
// anyone else (a holder's leftover children watch) just wakes for nothing.
func (c *client) react() reaction {
	r := reaction{c: c, events: c.fired()}
	if len(r.events) == 0 {
		return r
	}
	c.stats.Notifications += len(r.events)
	if c.state != simulator.StateWaiting {
		c.stats.WastedWakeups += len(r.events)
		return r
	}
	before := c.waitsFor
	r.acquired, r.err = c.check()
	if !r.acquired {
		c.stats.WastedWakeups += len(r.events)
		r.rewait = c.waitsFor != before
	}
	return r
}

// release deletes the client's node and ends its session. A stale client
// finds its node already gone.
func (c *client) release() (gone bool, self []zk.Event, err error) {
	c.line = c.w.recipe.release
	if c.node == "" {
		return true, nil, nil
	}
	err = c.conn.Delete(c.nodePath(), -1)
	c.stats.Delete++
	switch {
	case errors.Is(err, zk.ErrNoNode):
		gone = true
	case err != nil:
		return false, nil, fmt.Errorf("%s: delete %s: %w", c.name, c.node, err)
	}
	// A herd holder still has the children watch of its last getChildren;
	// its own delete fires it, and the event arrives before the reply.
	self = c.fired()
	c.stats.Notifications += len(self)
	c.stats.WastedWakeups += len(self)
	c.node = ""
	return gone, self, nil
}

// readToken reads the client's fencing token, its node's creation zxid, as
// it acquires: go-zookeeper's Create answers only the path, and a
// getChildren's Stat is the parent's, so it takes one exists() on its own
// node. That read is the simulator's bookkeeping, not a step of the recipe
// being taught: it is counted in TokenReads, never in Exists. A holder that
// later pauses before it ever wrote still comes back with its real token.
func (c *client) readToken() error {
	if c.token != 0 || c.node == "" {
		return nil
	}
	ok, st, err := c.conn.Exists(c.nodePath())
	c.stats.TokenReads++
	if err != nil {
		return fmt.Errorf("%s: read its fencing token: exists %s: %w", c.name, c.node, err)
	}
	if ok {
		c.token = st.Czxid
	}
	return nil
}
