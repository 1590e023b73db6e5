package history

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Metrics are the recorder's Prometheus figures, per lock and service:
// wait and hold histograms and counters of acquisitions, expiries and
// give-ups. They count what this process saw, from its start.
type Metrics struct {
	wait, hold                     *prometheus.HistogramVec
	acquisitions, expiries, gaveUp *prometheus.CounterVec
	// recorded and overflows tell the recorder's own health: an overflow
	// is a gap in every history it touched.
	recorded, overflows prometheus.Counter
}

// Metric names, for the Grafana dashboard and its test.
const (
	MetricWait         = "zklockviz_lock_wait_seconds"
	MetricHold         = "zklockviz_lock_hold_seconds"
	MetricAcquisitions = "zklockviz_lock_acquisitions_total"
	MetricExpiries     = "zklockviz_lock_expiries_total"
	MetricGiveUps      = "zklockviz_lock_giveups_total"
	MetricRecorded     = "zklockviz_history_events_total"
	MetricOverflows    = "zklockviz_history_overflows_total"
)

// NewMetrics makes the recorder's collector.
func NewMetrics() *Metrics {
	labels := []string{"service", "path"}
	// Lock waits run from milliseconds (an idle lock) to many minutes (a
	// stalled one): 1ms to about 70 minutes, a factor of 4 apart.
	buckets := prometheus.ExponentialBuckets(0.001, 4, 12)
	return &Metrics{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricWait,
			Help: "How long lock nodes waited from queueing to holding.", Buckets: buckets}, labels),
		hold: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricHold,
			Help: "How long lock nodes held before they left.", Buckets: buckets}, labels),
		acquisitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricAcquisitions,
			Help: "Lock acquisitions seen (not a holder first seen already holding)."}, labels),
		expiries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricExpiries,
			Help: "Lock nodes that went because their session or lease expired."}, labels),
		gaveUp: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricGiveUps,
			Help: "Waiters that went without ever holding (gave up waiting)."}, labels),
		recorded: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricRecorded,
			Help: "Events the history recorded."}),
		overflows: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricOverflows,
			Help: "Snapshots not recorded one by one because the recorder's queue was full (the newest per lock is, after a gap)."}),
	}
}

func (m *Metrics) all() []prometheus.Collector {
	return []prometheus.Collector{m.wait, m.hold, m.acquisitions, m.expiries, m.gaveUp, m.recorded, m.overflows}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.all() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.all() {
		c.Collect(ch)
	}
}

// observe counts a lock's n new events and times those of evs that
// acquired or left (evs may hold the others too).
func (m *Metrics) observe(id lockqueue.LockID, n int, evs []Event) {
	m.recorded.Add(float64(n))
	for _, e := range evs {
		switch e.Kind {
		case Acquired:
			if w, ok := e.MeasuredWait(); ok {
				m.wait.WithLabelValues(id.Service, id.Name).Observe(w.Seconds())
			}
			if e.SeenAcquired() {
				m.acquisitions.WithLabelValues(id.Service, id.Name).Inc()
			}
		case Left:
			if !e.Acquired.IsZero() && e.How != Unseen {
				m.hold.WithLabelValues(id.Service, id.Name).Observe(e.Hold().Seconds())
			}
			switch e.How {
			case Expired:
				m.expiries.WithLabelValues(id.Service, id.Name).Inc()
			case GaveUp:
				m.gaveUp.WithLabelValues(id.Service, id.Name).Inc()
			}
		}
	}
}
