package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// The flight recorder's flags and wiring: serve records every snapshot the
// live readers publish (not the classroom's) into a store under
// --data-dir.

const historyUsage = `  --data-dir DIR                 where the history is kept (default
                                 $XDG_STATE_HOME/zklockviz, else
                                 ~/.local/state/zklockviz; env
                                 ZKLOCKVIZ_DATA_DIR)
  --history on|off               record every watched lock's changes
                                 (default on; env ZKLOCKVIZ_HISTORY)
  --history-retention DURATION   keep this long, e.g. 7d or 36h (default 7d;
                                 env ZKLOCKVIZ_HISTORY_RETENTION)
  --history-max-size SIZE        keep at most this much, e.g. 1GiB or 500MB
                                 (default 1GiB; env
                                 ZKLOCKVIZ_HISTORY_MAX_SIZE); the oldest
                                 data goes first
  --history-db postgres://...    keep the history in this PostgreSQL database
                                 instead of --data-dir (table
                                 zklockviz_history, created if missing; env
                                 ZKLOCKVIZ_HISTORY_DB). Several serve
                                 processes may share one: all serve the
                                 whole history, one records at a time (the
                                 one whose session holds advisory lock
                                 2054974582), the next takes over when it
                                 dies
  --history-replica NAME         this process's name among those sharing
                                 --history-db (default: the host name, and
                                 the process id unless it is 1; env
                                 ZKLOCKVIZ_HISTORY_REPLICA)
  --cluster NAME                 name the servers read, for every service
                                 (default: each one's own identity: etcd's
                                 cluster id, PostgreSQL's system
                                 identifier, the Redis masters, the
                                 ZooKeeper members and chroot); the history
                                 keeps each cluster's locks apart, and
                                 every metric carries cluster=NAME (env
                                 ZKLOCKVIZ_CLUSTER)
`

// historyConfig is the recorder's validated configuration.
type historyConfig struct {
	On      bool
	DataDir string
	// DirGiven: --data-dir (or its env) was given, not the default.
	DirGiven bool
	MaxAge   time.Duration
	MaxSize  int64
	// DB is a PostgreSQL URL to keep the history in instead of DataDir;
	// Replica names this process among those sharing it.
	DB      string
	Replica string
	// Cluster names the servers read (--cluster), for every service;
	// empty: each names its own.
	Cluster string
}

// historyFlags are the recorder's flags as given.
type historyFlags struct {
	dataDir, on, retention, maxSize, db, replica, cluster string
}

func (f *historyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dataDir, "data-dir", "", "")
	fs.StringVar(&f.on, "history", "on", "")
	fs.StringVar(&f.retention, "history-retention", "7d", "")
	fs.StringVar(&f.maxSize, "history-max-size", "1GiB", "")
	fs.StringVar(&f.db, "history-db", "", "")
	fs.StringVar(&f.replica, "history-replica", "", "")
	fs.StringVar(&f.cluster, "cluster", "", "")
}

func (f *historyFlags) config() (historyConfig, error) {
	var c historyConfig
	switch f.on {
	case "on", "true", "1":
		c.On = true
	case "off", "false", "0":
	default:
		return c, fmt.Errorf("--history %q: want on or off", f.on)
	}
	var err error
	if c.MaxAge, err = parseRetention(f.retention); err != nil {
		return c, fmt.Errorf("--history-retention %q: %w", f.retention, err)
	}
	if c.MaxSize, err = parseSize(f.maxSize); err != nil {
		return c, fmt.Errorf("--history-max-size %q: %w", f.maxSize, err)
	}
	c.DataDir, c.DirGiven = f.dataDir, f.dataDir != ""
	if f.db != "" && !strings.HasPrefix(f.db, "postgres://") && !strings.HasPrefix(f.db, "postgresql://") {
		return c, fmt.Errorf("--history-db: want a PostgreSQL URL, postgres://user:password@host/database")
	}
	c.DB = f.db
	if strings.ContainsFunc(f.replica, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return c, fmt.Errorf("--history-replica %q: want printable characters", f.replica)
	}
	if f.replica != "" && c.DB == "" {
		return c, errors.New("--history-replica names a replica sharing --history-db: give --history-db too")
	}
	c.Replica = f.replica
	if c.Cluster, err = clusterName(f.cluster); err != nil {
		return c, err
	}
	if c.DataDir == "" && c.On {
		if c.DataDir, err = defaultDataDir(); err != nil {
			return c, fmt.Errorf("--data-dir: %w", err)
		}
	}
	return c, nil
}

// clusterName checks --cluster: printable, and not the name the history
// gives recordings of an unknown cluster.
func clusterName(v string) (string, error) {
	if v == history.UnknownCluster {
		return "", fmt.Errorf("--cluster %q: the history calls recordings of an unknown cluster so; pick another name", v)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return "", fmt.Errorf("--cluster %q: want printable characters", v)
	}
	return v, nil
}

// defaultDataDir follows the XDG base directory spec: state that should
// survive a restart but is not worth a backup.
func defaultDataDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "zklockviz"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory for the default (%w); give --data-dir", err)
	}
	return filepath.Join(home, ".local", "state", "zklockviz"), nil
}

// parseRetention reads a Go duration or a number of days ("7d").
func parseRetention(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, perr := strconv.ParseFloat(days, 64)
		d, err = time.Duration(n*24)*time.Hour, perr
	}
	if err != nil || d <= 0 {
		return 0, errors.New("want a positive duration such as 7d, 36h or 90m")
	}
	return d, nil
}

// parseSize reads bytes with an optional unit: KB, MB, GB (powers of
// 1000), KiB, MiB, GiB (powers of 1024).
func parseSize(v string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	num, mult := v, int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || n <= 0 {
		return 0, errors.New("want a size such as 1GiB, 500MB or 1048576")
	}
	return int64(n * float64(mult)), nil
}

// historyRun is the recorder of a running serve.
type historyRun struct {
	store    history.DB
	recorder *history.Recorder
	metrics  *history.Metrics
}

// startHistory opens the store and starts the recorder when --history is
// on. A data directory another zklockviz records into is no reason not
// to serve: this one serves without a history and says so.
func (m *Main) startHistory(ctx context.Context) error {
	c := m.Config.History
	if !c.On {
		return nil
	}
	if c.DB != "" {
		return m.startHistoryDB(ctx)
	}
	opts := history.Options{Dir: c.DataDir, MaxAge: c.MaxAge, MaxSize: c.MaxSize, Logger: m.log}
	store, err := history.Open(opts)
	if err != nil {
		// Another zklockviz records into the directory, or it cannot be
		// written (no home, a read-only container): serving the live view
		// matters more. The pages say the history is off and why, and the
		// directory is tried again until it opens.
		m.log.Warn("history off until the data directory can be used; retrying", "dataDir", c.DataDir, "err", offWhy(c.DataDir, err))
		later := newLaterStore(ctx, opts, offWhy(c.DataDir, err), m.log)
		m.startRecorder(later)
		return nil
	}
	m.startRecorder(store)
	m.log.Info("recording history", "dataDir", c.DataDir, "retention", c.MaxAge, "maxSize", c.MaxSize)
	return nil
}

// offWhy says why the data directory cannot be used, in a user's words.
func offWhy(dir string, err error) error {
	if errors.Is(err, history.ErrLocked) {
		return fmt.Errorf("another zklockviz records into %s (give this one its own --data-dir)", dir)
	}
	return fmt.Errorf("%w (check --data-dir)", err)
}

// laterStore is the history of a serve whose data directory could not be
// opened at start: it refuses writes saying why (so the recorder reports
// itself not recording) and reads as no history, and it tries to open the
// directory every retryEvery until it does; from then on it is that store.
type laterStore struct {
	mu    sync.Mutex
	store history.DB
	err   error
	stop  context.CancelFunc
	done  chan struct{}
}

// laterRetry is how often laterStore tries the directory again.
const laterRetry = 2 * time.Second

func newLaterStore(ctx context.Context, opts history.Options, why error, log *slog.Logger) *laterStore {
	ctx, cancel := context.WithCancel(ctx)
	l := &laterStore{err: why, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(laterRetry)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			store, err := history.Open(opts)
			l.mu.Lock()
			if err == nil {
				l.store, l.err = store, nil
			} else {
				l.err = offWhy(opts.Dir, err)
			}
			l.mu.Unlock()
			if err == nil {
				log.Info("recording history: the data directory opened", "dataDir", opts.Dir)
				return
			}
		}
	}()
	return l
}

func (l *laterStore) get() (history.DB, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.store, l.err
}

func (l *laterStore) Record(snap lockqueue.Snapshot) ([]history.Event, error) {
	db, err := l.get()
	if db == nil {
		return nil, err
	}
	return db.Record(snap)
}

func (l *laterStore) RecordGap(lock string, since time.Time, why string) error {
	db, err := l.get()
	if db == nil {
		return err
	}
	return db.RecordGap(lock, since, why)
}

// Before the directory opened, nothing is recorded: no events, no locks,
// figures of a window that is all gap, and no moment to replay.

func (l *laterStore) Events(lock string, from, to time.Time) ([]history.Event, error) {
	db, _ := l.get()
	if db == nil {
		return nil, nil
	}
	return db.Events(lock, from, to)
}

func (l *laterStore) Walk(lock string, from, to time.Time, fn func(history.Event) error) error {
	db, _ := l.get()
	if db == nil {
		return nil
	}
	return db.Walk(lock, from, to, fn)
}

func (l *laterStore) At(lock string, t time.Time) (history.State, error) {
	db, err := l.get()
	if db == nil {
		return history.State{}, fmt.Errorf("%w: the history is off: %v", history.ErrNoHistory, err)
	}
	return db.At(lock, t)
}

func (l *laterStore) Stats(lock string, from, to time.Time) (history.Stats, error) {
	db, err := l.get()
	if db == nil {
		return history.Stats{From: from, To: to, BusiestHours: []history.Hour{},
			Gaps: []history.Span{{From: from, To: to, Why: "history off: " + err.Error()}}}, nil
	}
	return db.Stats(lock, from, to)
}

func (l *laterStore) Locks() ([]history.Lock, error) {
	db, _ := l.get()
	if db == nil {
		return nil, nil
	}
	return db.Locks()
}

func (l *laterStore) Close() error {
	l.stop()
	<-l.done
	db, _ := l.get()
	if db == nil {
		return nil
	}
	return db.Close()
}

// startHistoryDB records into --history-db. A database that does not
// answer stops serve: it was asked for by name.
func (m *Main) startHistoryDB(ctx context.Context) error {
	c := m.Config.History
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(m.Config.ZKTimeout, defaultZKTimeout))
	defer cancel()
	store, err := history.OpenPG(ctx, history.PGOptions{URL: c.DB, MaxAge: c.MaxAge, MaxSize: c.MaxSize, Replica: c.Replica, Logger: m.log})
	if err != nil {
		return fmt.Errorf("%w (check --history-db, or give --history=off)", err)
	}
	m.startRecorder(store)
	role := store.Role()
	m.log.Info("history in PostgreSQL", "replica", role.Replica, "recording", role.Recording, "retention", c.MaxAge, "maxSize", c.MaxSize)
	return nil
}

func (m *Main) startRecorder(store history.DB) {
	m.hist.store, m.hist.metrics = store, history.NewMetrics()
	m.hist.recorder = history.NewRecorder(store, m.hist.metrics, 0, m.log)
}

// readerSink is the Sink for a live reader: the hub, and the recorder
// when it runs. It names each snapshot's cluster: --cluster when given,
// else the reader's own (etcd's cluster id, PostgreSQL's system
// identifier), else own, the servers as configured. A snapshot whose
// cluster is not known yet (etcd and PostgreSQL before their first
// answer) is shown but not recorded: the history could not say which
// cluster it was of, and it holds nothing the reader has seen.
func (m *Main) readerSink(own string) func(lockqueue.Snapshot) {
	name := m.Config.History.Cluster
	return func(s lockqueue.Snapshot) {
		switch {
		case name != "":
			s.Cluster = name
		case s.Cluster == "":
			s.Cluster = own
		}
		m.waits.offer(s)
	}
}

// publishLive sends a live reader's snapshot to the recorder, when it runs
// and the snapshot's cluster is known, and to the hub.
func (m *Main) publishLive(s lockqueue.Snapshot) {
	if rec := m.hist.recorder; rec != nil && s.Cluster != "" {
		rec.Offer(s)
	}
	m.hub.Publish(s)
}

// serversCluster is the identity of a cluster known by its servers'
// addresses: sorted, so the same servers given in another order are the
// same cluster, then the chroot (ZooKeeper's), if any.
func serversCluster(addrs []string, chroot string) string {
	return strings.Join(slices.Sorted(slices.Values(addrs)), ",") + chroot
}

// historySource is what the web server reads the history from: the store,
// read once the recorder has caught up with what the live views showed;
// nil when no history is kept.
func (m *Main) historySource() history.Source {
	if m.hist.store == nil {
		return nil
	}
	return m.hist.recorder.Source(m.hist.store)
}

// statusWait bounds how long a page waits for the recorder before it says
// whether the history records.
const statusWait = 500 * time.Millisecond

// historyStatus says whether the recorder records, as it is now and once
// what was offered before the call is recorded (both nil without a
// recorder): the summary of a change says whether that change was
// recorded, so the page does not ask a history that just went away.
func (m *Main) historyStatus() (now, synced func() history.Status) {
	rec := m.hist.recorder
	if rec == nil {
		return nil, nil
	}
	return rec.Status, func() history.Status { return rec.SyncedStatus(statusWait) }
}

// historyCollectors are the recorder's Prometheus collectors for /metrics.
func (m *Main) historyCollectors() []prometheus.Collector {
	if m.hist.metrics == nil {
		return nil
	}
	return []prometheus.Collector{m.hist.metrics}
}

// closeHistory records what is queued and closes the store; after the
// readers have stopped.
func (m *Main) closeHistory() error {
	if m.hist.recorder != nil {
		m.hist.recorder.Close()
	}
	if m.hist.store != nil {
		if err := m.hist.store.Close(); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	return nil
}
