package views

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// postgres is PostgreSQL's service name (pglock.Name; views imports no
// service package).
const postgres = "postgres"

// pgSession is a PostgreSQL node's data: the backend's row of
// pg_stat_activity as the reader records it.
type pgSession = lockqueue.PGSession

// queryShown is how much of a query the pane shows; the whole is its
// tooltip.
const queryShown = 60

// addPostgres describes a PostgreSQL node as pg_activity shows a backend:
// pid, application, client, state, query, how long its transaction and
// its wait have lasted (at the read, s.UpdatedAt), and the statement an
// operator would run to end it. zklockviz only shows the statement: the
// reader never writes to the server. It reports false when the data is no
// session record, and the pane shows the data as it is.
func (d *NodeDetails) addPostgres(s lockqueue.Snapshot, n lockqueue.Node) bool {
	var ss pgSession
	if n.DataBinary || json.Unmarshal([]byte(n.Data), &ss) != nil || ss.Pid == 0 {
		return false
	}
	d.add("pid", strconv.Itoa(ss.Pid), "mono")
	d.add("application", pgText(ss.Application, "(none)"), "")
	if ss.User != nil || ss.Database != nil {
		d.add("user @ database", pgText(ss.User, "?")+" @ "+pgText(ss.Database, "?"), "mono")
	}
	client := "local socket"
	if ss.ClientAddr != nil && *ss.ClientAddr != "" {
		client = *ss.ClientAddr
		if ss.ClientPort != nil && *ss.ClientPort > 0 {
			client = net.JoinHostPort(client, strconv.Itoa(*ss.ClientPort))
		}
	}
	d.add("client address", client, "mono")
	d.add("backend state", pgText(ss.State, "?"), "")
	if ss.LockMode != "" {
		d.add("lock mode", ss.LockMode, "mono")
	}
	q := strings.Join(strings.Fields(pgText(ss.Query, "")), " ")
	shown := q
	if r := []rune(q); len(r) > queryShown {
		shown = string(r[:queryShown]) + "…"
	}
	d.Entries = append(d.Entries, Detail{Term: "query", Value: shown, Class: "mono pg-query", Title: q})
	at := s.UpdatedAt
	if ss.XactStart != nil {
		d.add("transaction", pgSince(*ss.XactStart, at), "")
	} else {
		d.add("transaction", "none open", "")
	}
	if ss.WaitStart != nil {
		d.add("waiting", pgSince(*ss.WaitStart, at), "")
	}
	d.Entries = append(d.Entries, Detail{
		Term: "to end it", Value: fmt.Sprintf("SELECT pg_terminate_backend(%d);", ss.Pid), Class: "mono copyable",
		Title: "for an operator to run, in psql as a superuser or the session's role; zklockviz never runs it",
	})
	return true
}

// pgSince is how long before the read a session's time was, and the time.
func pgSince(t, at time.Time) string {
	if at.IsZero() || at.Before(t) {
		return When(t)
	}
	return Duration(at.Sub(t)) + ", since " + When(t)
}

func pgText(p *string, empty string) string {
	if p == nil || *p == "" {
		return empty
	}
	return *p
}
