package pglock

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// pollQuery is the one statement a poll runs, for every watched lock
// together, whatever the number of viewers. It reads pg_locks once
// (MATERIALIZED: pg_lock_status takes every lock-manager partition lock,
// so it is not called per lock), calls pg_blocking_pids only for sessions
// that wait, and joins pg_stat_activity only for the sessions shown.
// Parameters: $1, $2, $3 the advisory keys' classid, objid and objsubid;
// $4 the watched tables. %s is the wait start column: pg_locks.waitstart
// from PostgreSQL 14, NULL before.
//
// Discovery (--watch-under postgres:advisory, postgres:rows) rides on the
// same statement: $5 true takes every advisory lock of the database, not
// only the keys in $1-$3; $6 true adds to rels every table of the database
// with a tuple lock (which PostgreSQL takes only while a row lock is waited
// for), named SCHEMA.TABLE. The poll reads them back from locks and tables.
const pollQuery = `WITH pl AS MATERIALIZED (
	SELECT locktype, database, relation, classid, objid, objsubid, pid, mode, granted, %s AS waitstart
	FROM pg_locks WHERE pid IS NOT NULL
), rels AS (
	SELECT n AS name, to_regclass(n)::oid AS oid FROM unnest($4::text[]) AS n
	UNION SELECT ns.nspname || '.' || c.relname, c.oid
	FROM pl t JOIN pg_class c ON c.oid = t.relation JOIN pg_namespace ns ON ns.oid = c.relnamespace
	WHERE $6::bool AND t.locktype = 'tuple' AND t.database = (SELECT oid FROM pg_database WHERE datname = current_database())
), mine AS (
	SELECT * FROM pl l
	WHERE (l.locktype = 'advisory'
	       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	       AND ($5::bool OR (l.classid, l.objid, l.objsubid) IN (SELECT * FROM unnest($1::oid[], $2::oid[], $3::int2[]))))
	   OR (l.locktype = 'tuple' AND l.relation IN (SELECT oid FROM rels))
	   OR (l.locktype = 'transactionid' AND NOT l.granted
	       AND l.pid IN (SELECT t.pid FROM pl t WHERE t.locktype = 'tuple' AND t.relation IN (SELECT oid FROM rels)))
), waits AS (
	SELECT w.pid, pg_blocking_pids(w.pid) AS blockers
	FROM (SELECT DISTINCT pid FROM pl WHERE NOT granted) w
), shown AS (
	SELECT pid FROM mine
	UNION SELECT unnest(blockers) FROM waits WHERE pid IN (SELECT pid FROM mine)
)
SELECT json_build_object(
	'now', now(),
	'started', pg_postmaster_start_time(),
	'locks', (SELECT json_agg(json_build_object('locktype', locktype, 'relation', relation::int8,
		'classid', classid::int8, 'objid', objid::int8, 'objsubid', objsubid, 'pid', pid, 'mode', mode,
		'granted', granted, 'waitstart', waitstart)) FROM mine),
	'waits', (SELECT json_agg(w) FROM waits w WHERE cardinality(w.blockers) > 0),
	'sessions', ` + sessionsJSON + `,
	'tables', (SELECT json_agg(json_build_object('name', name, 'oid', oid::int8)) FROM rels))`

// sessionsJSON is the pg_stat_activity rows (session) of the backends in
// a query's "shown" set.
const sessionsJSON = `(SELECT json_agg(json_build_object('pid', a.pid, 'database', a.datname, 'user', a.usename,
		'application', a.application_name, 'clientAddr', host(a.client_addr), 'clientPort', a.client_port,
		'state', a.state, 'backendStart', a.backend_start, 'xactStart', a.xact_start,
		'queryStart', a.query_start, 'stateChange', a.state_change, 'query', left(a.query, 200)))
		FROM pg_stat_activity a WHERE a.pid IN (SELECT pid FROM shown))`

// queryFor is pollQuery for a server version (server_version_num).
func queryFor(version int) string {
	return fmt.Sprintf(pollQuery, waitStartColumn(version))
}

// waitStartColumn is pg_locks' wait start: its waitstart column from
// PostgreSQL 14, NULL before.
func waitStartColumn(version int) string {
	if version >= 140000 {
		return "waitstart"
	}
	return "NULL::timestamptz"
}

// queryArgs are pollQuery's parameters for the watched locks, and for
// discovery of every advisory lock (advisory) and of the tables whose row
// locks are waited for (rows).
func queryArgs(names []lockName, advisory, rows bool) []any {
	var classids, objids []uint32
	var subids []int16
	tables := []string{}
	for _, n := range names {
		if n.recipe == RowLock {
			tables = append(tables, n.table)
			continue
		}
		classids, objids, subids = append(classids, n.classid), append(objids, n.objid), append(subids, n.objsubid)
	}
	return []any{classids, objids, subids, tables, advisory, rows}
}

// pollResult is pollQuery's one row.
type pollResult struct {
	Now time.Time `json:"now"`
	// Started is when the server started (pg_postmaster_start_time): a
	// new value is a restart, which ended every session and its locks.
	Started  time.Time `json:"started"`
	Locks    []pgLock  `json:"locks"`
	Waits    []pgWait  `json:"waits"`
	Sessions []session `json:"sessions"`
	Tables   []struct {
		Name string  `json:"name"`
		OID  *uint32 `json:"oid"`
	} `json:"tables"`
}

type pgLock struct {
	Locktype  string     `json:"locktype"`
	Relation  *uint32    `json:"relation"`
	Classid   *uint32    `json:"classid"`
	Objid     *uint32    `json:"objid"`
	Objsubid  *int16     `json:"objsubid"`
	Pid       int        `json:"pid"`
	Mode      string     `json:"mode"`
	Granted   bool       `json:"granted"`
	WaitStart *time.Time `json:"waitstart"`
}

type pgWait struct {
	Pid      int   `json:"pid"`
	Blockers []int `json:"blockers"`
}

// session is a pg_stat_activity row; it is also the node's data, as JSON,
// which the views read back (lockqueue.PGSession: one type for both).
type session = lockqueue.PGSession

func decodeResult(b []byte) (pollResult, error) {
	var r pollResult
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("decode the poll's result: %w", err)
	}
	return r, nil
}

func nodeName(pid int) string { return "pid-" + strconv.Itoa(pid) }

// graph is the server's waits-for graph by node name.
func (r *pollResult) graph() map[string][]string {
	g := make(map[string][]string, len(r.Waits))
	for _, w := range r.Waits {
		for _, b := range w.Blockers {
			g[nodeName(w.Pid)] = append(g[nodeName(w.Pid)], nodeName(b))
		}
	}
	return g
}

// tableOID is the watched table's oid; false when it does not exist.
func (r *pollResult) tableOID(table string) (uint32, bool) {
	for _, t := range r.Tables {
		if t.Name == table && t.OID != nil {
			return *t.OID, true
		}
	}
	return 0, false
}

// part is one session's part in one lock, before ordering.
type part struct {
	waiting   bool
	mode      string
	waitStart *time.Time
}

// parts finds the sessions of one lock and whether each waits. An
// advisory lock's sessions are its pg_locks rows. A row lock's waiters
// are the sessions that wait for a tuple lock on the table, or hold one
// and wait for the row's locker to end (transactionid); its holders are
// whom they wait for, as pg_locks has no row for a held row lock.
func (r *pollResult) parts(n lockName) (map[int]part, bool) {
	if n.recipe == Advisory {
		return r.advisoryParts(n), true
	}
	oid, ok := r.tableOID(n.table)
	if !ok {
		return map[int]part{}, false
	}
	return r.rowLockParts(oid), true
}

// advisoryParts are the sessions of advisory lock n: its pg_locks rows.
func (r *pollResult) advisoryParts(n lockName) map[int]part {
	out := map[int]part{}
	for _, l := range r.Locks {
		if !l.isAdvisory(n) {
			continue
		}
		p := out[l.Pid]
		if !l.Granted {
			p.waiting, p.waitStart = true, l.WaitStart
		}
		if p.mode == "" || !l.Granted {
			p.mode = l.Mode
		}
		out[l.Pid] = p
	}
	return out
}

// isAdvisory says whether l is a row of advisory lock n.
func (l pgLock) isAdvisory(n lockName) bool {
	return l.Locktype == "advisory" && l.Classid != nil && l.Objid != nil && l.Objsubid != nil &&
		*l.Classid == n.classid && *l.Objid == n.objid && *l.Objsubid == n.objsubid
}

// rowLockParts are the sessions of the row locks on the table of oid: the
// waiters from its tuple locks (and their transactionid waits), the holders
// from whom those waiters wait for.
func (r *pollResult) rowLockParts(oid uint32) map[int]part {
	out := map[int]part{}
	tuple := map[int]bool{}
	for _, l := range r.Locks {
		if l.Locktype == "tuple" && l.Relation != nil && *l.Relation == oid {
			tuple[l.Pid] = true
			if !l.Granted {
				out[l.Pid] = part{waiting: true, mode: l.Mode, waitStart: l.WaitStart}
			} else if _, seen := out[l.Pid]; !seen {
				out[l.Pid] = part{mode: l.Mode}
			}
		}
	}
	for _, l := range r.Locks {
		if l.Locktype == "transactionid" && !l.Granted && tuple[l.Pid] {
			out[l.Pid] = part{waiting: true, mode: out[l.Pid].mode, waitStart: l.WaitStart}
		}
	}
	for _, w := range r.Waits {
		if !out[w.Pid].waiting {
			continue
		}
		for _, b := range w.Blockers {
			if _, seen := out[b]; !seen {
				out[b] = part{mode: "row lock"}
			}
		}
	}
	return out
}

// sessions turns one lock's parts into lockqueue's terms.
func (r *pollResult) sessions(n lockName, parts map[int]part) []lockqueue.ServerSession {
	info := make(map[int]session, len(r.Sessions))
	for _, s := range r.Sessions {
		info[s.Pid] = s
	}
	blockers := make(map[int][]int, len(r.Waits))
	for _, w := range r.Waits {
		blockers[w.Pid] = w.Blockers
	}
	out := make([]lockqueue.ServerSession, 0, len(parts))
	for _, pid := range slices.Sorted(maps.Keys(parts)) {
		p := parts[pid]
		s, ok := info[pid]
		if !ok {
			s = session{Pid: pid} // gone between pg_locks and pg_stat_activity
		}
		s.LockMode, s.WaitStart = p.mode, p.waitStart
		ss := lockqueue.ServerSession{
			Name: nodeName(pid), Client: strconv.Itoa(pid), Mode: mode(p.mode), Waiting: p.waiting,
			Since: since(n, s), Data: data(s), Label: label(s),
		}
		if p.waitStart != nil {
			ss.WaitStart = *p.waitStart
		}
		if p.waiting {
			for _, b := range blockers[pid] {
				ss.BlockedBy = append(ss.BlockedBy, nodeName(b))
			}
		}
		if s.State != nil && strings.HasPrefix(*s.State, "idle in transaction") && s.StateChange != nil {
			ss.IdleInTxSince = *s.StateChange
		}
		out = append(out, ss)
	}
	return out
}

// mode maps a pg_locks mode to the queue's: a shared advisory lock reads.
func mode(m string) lockqueue.Mode {
	if m == "ShareLock" {
		return lockqueue.Read
	}
	return lockqueue.Exclusive
}

// since is the earliest a session can have held or queued for the lock.
// pg_locks does not say when a lock was granted. A row lock lives in a
// transaction, so it is held since the transaction began at the
// earliest; an advisory lock may be the session's, taken in any earlier
// transaction, so only the backend's start bounds it.
func since(n lockName, s session) time.Time {
	if n.recipe == RowLock && s.XactStart != nil {
		return *s.XactStart
	}
	if s.BackendStart != nil {
		return *s.BackendStart
	}
	return time.Time{}
}

// data is the session as the node's data: JSON a person can read and a
// script can parse. It holds times, not ages, so it changes only when the
// session does.
// label names a session as people know it: its application, where it
// connects from, and its state.
func label(s session) string {
	var parts []string
	for _, p := range []*string{s.Application, s.ClientAddr, s.State} {
		if p != nil && *p != "" {
			parts = append(parts, *p)
		}
	}
	if len(parts) == 0 {
		return "pid " + strconv.Itoa(s.Pid)
	}
	return strings.Join(parts, " · ")
}

func data(s session) string {
	b, err := json.Marshal(s)
	if err != nil {
		return ""
	}
	return string(b)
}

// discovered names the locks the poll found that named (the watched
// locks) does not already cover: every advisory lock (advisory), and every
// table with a row lock waited for (rows, a tuple lock on it), sorted.
func (r *pollResult) discovered(named []lockName, advisory, rows bool) []string {
	type key struct {
		classid, objid uint32
		objsubid       int16
	}
	namedKeys, namedTables := map[key]bool{}, map[uint32]bool{}
	for _, n := range named {
		if n.recipe == Advisory {
			namedKeys[key{n.classid, n.objid, n.objsubid}] = true
		} else if oid, ok := r.tableOID(n.table); ok {
			namedTables[oid] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	tuples := map[uint32]bool{}
	for _, l := range r.Locks {
		switch {
		case advisory && l.Locktype == "advisory" && l.Classid != nil && l.Objid != nil && l.Objsubid != nil:
			if namedKeys[key{*l.Classid, *l.Objid, *l.Objsubid}] {
				continue
			}
			if name, ok := advisoryName(*l.Classid, *l.Objid, *l.Objsubid); ok {
				add(name)
			}
		case rows && l.Locktype == "tuple" && l.Relation != nil:
			tuples[*l.Relation] = true
		}
	}
	for _, t := range r.Tables {
		// A table whose name needs quoting cannot be named table/…:
		// it is left out rather than shown under a name that is not its.
		if t.OID != nil && tuples[*t.OID] && !namedTables[*t.OID] && tableName.MatchString(t.Name) {
			add("table/" + t.Name)
		}
	}
	slices.Sort(out)
	return out
}
