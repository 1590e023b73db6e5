package pglock

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// rowsQuery reads who holds and who waits for each row of a classroom
// table, from the server: a row's holders are the lockers pgrowlocks
// finds in the row itself (pg_locks has no entry for a held row lock,
// which lives in the row's xmax), its waiters the sessions with a tuple
// lock on it (the first waiter holds the tuple lock while it waits for
// the locker's transaction, the later ones wait for the tuple lock).
// $1 is the table. %[1]s is the table as an identifier, %[2]s pg_locks'
// wait start column (waitStartColumn).
const rowsQuery = `WITH r AS (
	SELECT id, ctid, (ctid::text::point)[0]::int AS page, (ctid::text::point)[1]::int AS tuple FROM %[1]s
), held AS (
	SELECT r.id, unnest(l.pids) AS pid, unnest(l.modes) AS mode FROM r JOIN pgrowlocks($1) l ON l.locked_row = r.ctid
), queued AS (
	SELECT r.id, p.pid, p.mode,
		(SELECT min(w.%[2]s) FROM pg_locks w WHERE w.pid = p.pid AND NOT w.granted) AS "waitStart"
	FROM pg_locks p JOIN r ON p.page = r.page AND p.tuple = r.tuple
	WHERE p.locktype = 'tuple' AND p.relation = to_regclass($1) AND p.pid IS NOT NULL
), waits AS (
	SELECT w.pid, pg_blocking_pids(w.pid) AS blockers
	FROM (SELECT DISTINCT pid FROM pg_locks WHERE NOT granted AND pid IS NOT NULL) w
), shown AS (
	SELECT pid FROM held UNION SELECT pid FROM queued
)
SELECT json_build_object(
	'now', now(),
	'held', (SELECT json_agg(held) FROM held),
	'queued', (SELECT json_agg(queued) FROM queued),
	'waits', (SELECT json_agg(w) FROM waits w WHERE cardinality(w.blockers) > 0),
	'sessions', ` + sessionsJSON + `)`

// rowsResult is rowsQuery's one row.
type rowsResult struct {
	pollResult
	Held []struct {
		ID   int    `json:"id"`
		Pid  int    `json:"pid"`
		Mode string `json:"mode"`
	} `json:"held"`
	Queued []struct {
		ID        int        `json:"id"`
		Pid       int        `json:"pid"`
		Mode      string     `json:"mode"`
		WaitStart *time.Time `json:"waitStart"`
	} `json:"queued"`
}

// rowIDs are the classroom table's rows (newClassWorld inserts them).
var rowIDs = []int{1, 2}

// severalRows says whether a scenario's clients lock both rows of the
// table: then each row is a lock of its own in the scene.
func severalRows(sc *simulator.Scenario, p classParams) bool {
	return p.Lock == kindRow && (len(p.Reversed) > 0 || slices.ContainsFunc(sc.Steps, func(a simulator.Action) bool { return a.Action == ActLockSecond }))
}

// Locks reads each row of a two-row scene as a lock of its own (the
// live reader follows the table as one lock), by the live reader's rules
// (BuildServerQueue): after the deadlock detector aborts one transaction,
// the rows show who really holds them.
func (w *classWorld) Locks() ([]lockqueue.Snapshot, error) {
	if !w.rows {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var raw []byte
	if err := w.obs.QueryRow(ctx, fmt.Sprintf(rowsQuery, w.table, w.waitStart), w.table).Scan(&raw); err != nil {
		return nil, fmt.Errorf("postgres classroom: read the rows' locks: %w", err)
	}
	var res rowsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("postgres classroom: decode the rows' locks: %w", err)
	}
	out := make([]lockqueue.Snapshot, 0, len(rowIDs))
	for _, id := range rowIDs {
		parts := map[int]part{}
		for _, h := range res.Held {
			if h.ID == id {
				parts[h.Pid] = part{mode: h.Mode}
			}
		}
		for _, q := range res.Queued {
			if _, holds := parts[q.Pid]; q.ID == id && !holds {
				parts[q.Pid] = part{waiting: true, mode: q.Mode, waitStart: q.WaitStart}
			}
		}
		nodes, alerts := lockqueue.BuildServerQueue(lockqueue.ServerQueue{
			Recipe: RowLock, Sessions: w.storyIdle(res.sessions(w.name, parts)), Waits: res.graph(), Now: res.Now, IdleGrace: classIdleGrace,
		})
		// pg_locks does not say when a row was granted; the run does: a
		// client holds its second row since that statement returned, on the
		// run's clock (the engine stamps its first from the client's own).
		for i := range nodes {
			for _, c := range w.clients {
				if nodes[i].Name == nodeName(int(c.pid)) && nodes[i].Holding && c.secondAt > 0 && id == c.secondRow() {
					nodes[i].SetHeldSince(time.UnixMilli(w.ClockAt(c.secondAt).Milliseconds()).UTC())
				}
			}
		}
		out = append(out, lockqueue.Snapshot{
			Service: Name, Path: fmt.Sprintf("row %d of %s", id, w.table), Recipe: RowLock, Exists: true,
			Connection: lockqueue.Connected, WatchSource: "pg_locks", Nodes: nodes, Alerts: append([]lockqueue.Alert{}, alerts...), UpdatedAt: res.Now,
		})
	}
	return out, nil
}
