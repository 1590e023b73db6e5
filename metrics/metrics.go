// Package metrics exposes zklockviz's lock queues to Prometheus. It is the
// one package that knows client_golang.
//
// The figures are read from the hub when Prometheus scrapes, not kept up to
// date on every change: a scrape every 15s reads the summary the hub keeps
// of each lock's newest snapshot (its counts and oldest wait), and a busy
// queue costs nothing extra between scrapes.
package metrics

import (
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Source is what the collector reads: the summaries of the hub's newest
// snapshots, and its counters.
type Source interface {
	Summaries(buf []*lockqueue.Summary) []*lockqueue.Summary
	Stats() hub.Stats
}

// Config says where the figures come from.
type Config struct {
	Hub Source
	// Services lists the registered lock services (the registry's All);
	// each one with a Reader gets its connection state gauged. Nil, or
	// no service with a reader (a simulator-only server), gauges none.
	Services func() []lockservice.Service
	// Now is the clock for ages; time.Now when nil.
	Now func() time.Time
	// Extra collectors served beside the lock figures (the flight
	// recorder's wait and hold histograms).
	Extra []prometheus.Collector
	// Cluster, when set (serve --cluster), is a label on every series:
	// two zklockviz scraped by one Prometheus stay apart by it.
	Cluster string
}

// Handler serves the Prometheus text format: the lock figures, the Go
// runtime's and the process's.
func Handler(cfg Config) http.Handler {
	reg := prometheus.NewRegistry()
	var into prometheus.Registerer = reg
	if cfg.Cluster != "" {
		into = prometheus.WrapRegistererWith(prometheus.Labels{"cluster": cfg.Cluster}, reg)
	}
	into.MustRegister(
		newCollector(cfg),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	into.MustRegister(cfg.Extra...)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// readEveryScrape: a queue of up to this many nodes is read at each
// scrape for its longest hold; a longer one once per snapshot.
const readEveryScrape = 256

var connections = []lockqueue.Connection{lockqueue.Connected, lockqueue.Reconnecting, lockqueue.Expired}

type collector struct {
	cfg Config

	// held keeps when the longest hold of each long queue's snapshot
	// began, by its summary (one per snapshot), so that a scrape reads a
	// 100,000-node queue once per change, not once per scrape.
	mu   sync.Mutex
	held map[*lockqueue.Summary]time.Time

	queueLength, holders, waiters, oldestWait, holderAge, live, alerts *prometheus.Desc
	zkConnection, connection, locks, viewers, published, coalesced     *prometheus.Desc
}

func newCollector(cfg Config) *collector {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	// Every per-lock series names its service: an etcd prefix and a znode
	// may share a path.
	path := []string{"service", "path"}
	return &collector{
		cfg: cfg,
		queueLength: prometheus.NewDesc("zklockviz_lock_queue_length",
			"Lock nodes under the lock parent, holders and waiters (foreign children not counted).", path, nil),
		holders: prometheus.NewDesc("zklockviz_lock_holders",
			"Nodes that hold the lock by their recipe's rule.", path, nil),
		waiters: prometheus.NewDesc("zklockviz_lock_waiters",
			"Nodes that wait for the lock, and the waiters the server counts without naming them (Redisson's).", path, nil),
		oldestWait: prometheus.NewDesc("zklockviz_lock_oldest_wait_seconds",
			"Age of the oldest waiter's node (of unnamed waiters: since first seen); 0 with no waiters.", path, nil),
		holderAge: prometheus.NewDesc("zklockviz_lock_holder_age_seconds",
			"Age of the oldest holder's node: how long the lock has been held; 0 when free.", path, nil),
		live: prometheus.NewDesc("zklockviz_lock_live",
			"1 when the lock's state is live, 0 when it is the last known state (ZooKeeper unreachable or a read failed).", path, nil),
		alerts: prometheus.NewDesc("zklockviz_lock_alerts",
			"Alerts on the lock by kind (deadlock, zombie, foreign-child, persistent-node, ...).", []string{"service", "path", "kind"}, nil),
		// Kept beside zklockviz_connection for the dashboards and alerts
		// written against it before there were other services.
		zkConnection: prometheus.NewDesc("zklockviz_zookeeper_connection",
			"1 for the watcher's current ZooKeeper session state, 0 for the others (zklockviz_connection{service=\"zookeeper\"}).", []string{"state"}, nil),
		connection: prometheus.NewDesc("zklockviz_connection",
			"1 for each lock service reader's current connection state, 0 for the others.", []string{"service", "state"}, nil),
		locks: prometheus.NewDesc("zklockviz_locks",
			"Lock paths with a snapshot (watched locks and simulator runs).", nil, nil),
		viewers: prometheus.NewDesc("zklockviz_viewers",
			"Open live subscriptions: websocket viewers.", nil, nil),
		published: prometheus.NewDesc("zklockviz_snapshots_published_total",
			"Snapshots published to viewers (one per change of a lock's state).", nil, nil),
		coalesced: prometheus.NewDesc("zklockviz_snapshots_coalesced_total",
			"Snapshots a slow viewer skipped because a newer one replaced them.", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queueLength, c.holders, c.waiters, c.oldestWait, c.holderAge,
		c.live, c.alerts, c.zkConnection, c.connection, c.locks, c.viewers, c.published, c.coalesced} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	now := c.cfg.Now()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	age := func(since time.Time) float64 {
		if since.IsZero() || !now.After(since) {
			return 0
		}
		return now.Sub(since).Seconds()
	}
	sums := c.cfg.Hub.Summaries(nil)
	c.mu.Lock()
	held := make(map[*lockqueue.Summary]time.Time, len(c.held))
	for _, sum := range sums {
		s := sum.Snapshot
		svc := s.ServiceName()
		// WaiterCount counts waiters without a node too; the queue's
		// length counts nodes.
		holders, waiters := sum.HolderCount, sum.WaiterCount
		gauge(c.queueLength, float64(holders+waiters-s.AnonymousWaiters), svc, s.Path)
		gauge(c.holders, float64(holders), svc, s.Path)
		gauge(c.waiters, float64(waiters), svc, s.Path)
		gauge(c.oldestWait, age(sum.OldestWaiter), svc, s.Path)
		var heldSince time.Time
		if holders > 0 {
			if len(s.Nodes) <= readEveryScrape {
				heldSince, _ = s.Oldest()
			} else {
				t, ok := c.held[sum]
				if !ok {
					t, _ = s.Oldest()
				}
				heldSince, held[sum] = t, t
			}
		}
		gauge(c.holderAge, age(heldSince), svc, s.Path)
		gauge(c.live, boolFloat(s.Live()), svc, s.Path)
		kinds := map[string]int{}
		for _, a := range s.Alerts {
			kinds[a.Kind]++
		}
		for kind, n := range kinds {
			gauge(c.alerts, float64(n), svc, s.Path, kind)
		}
	}
	c.held = held
	c.mu.Unlock()
	c.collectConnections(gauge)
	st := c.cfg.Hub.Stats()
	gauge(c.locks, float64(st.Topics))
	gauge(c.viewers, float64(st.Viewers))
	ch <- prometheus.MustNewConstMetric(c.published, prometheus.CounterValue, float64(st.Published))
	ch <- prometheus.MustNewConstMetric(c.coalesced, prometheus.CounterValue, float64(st.Coalesced))
}

// collectConnections gauges each reader's connection state: one series per
// known state, and the current one even when it is none of those, so a
// service's own state is never hidden.
func (c *collector) collectConnections(gauge func(d *prometheus.Desc, v float64, labels ...string)) {
	if c.cfg.Services == nil {
		return
	}
	for _, svc := range c.cfg.Services() {
		if svc.Reader == nil {
			continue
		}
		state := svc.Reader.Connection()
		states := connections
		if !slices.Contains(states, state) {
			states = append(slices.Clone(states), state)
		}
		for _, st := range states {
			gauge(c.connection, boolFloat(st == state), svc.Name, string(st))
			if svc.Name == lockqueue.ZooKeeper {
				gauge(c.zkConnection, boolFloat(st == state), string(st))
			}
		}
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
