package pglock

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Words are how the pages word a PostgreSQL lock: a node is a backend,
// its client the pid, and the server itself reports whom it is blocked by
// (pg_blocking_pids). No lease, and the order is the queue's.
func Words() *lockservice.Words {
	legend := append(lockservice.ModeItems(lockqueue.Read, lockqueue.Exclusive), lockservice.Holding,
		lockservice.LegendItem{Key: "rule", Swatch: "rule", Label: "waits for (confirmed)", Title: "solid, above the lane: the first session the server reports this one waits on (pg_blocking_pids)"},
		lockservice.LegendItem{Key: "confirmed", Swatch: "actual", Label: "also blocked by (confirmed)", Title: "below the lane: every other session the server reports this one waits on"})
	return &lockservice.Words{
		Legend:     legend,
		Columns:    lockservice.Columns{Client: "pid", BlockedBy: "blocked by"},
		Missing:    "free: nobody holds or waits",
		Source:     source,
		HideClient: true,
		Details:    Details,
	}
}

func source(src string) (term, value string) {
	if src == "pg_locks" {
		return "read from", "pg_locks, polled"
	}
	return lockservice.NeutralSource(src)
}

// queryShown is how much of a query the pane shows; the whole is its
// tooltip.
const queryShown = 60

// Details describe a PostgreSQL node as pg_activity shows a backend: pid,
// application, client, state, query, how long its transaction and its wait
// have lasted (at the read, s.UpdatedAt), and the statement an operator
// would run to end it. zklockviz only shows the statement: the reader
// never writes to the server. They replace the stored lines, unless the
// data is no session record: then the pane shows the data as it is.
func Details(s lockqueue.Snapshot, n lockqueue.Node) ([]lockservice.DetailLine, bool) {
	var ss session
	if n.DataBinary || json.Unmarshal([]byte(n.Data), &ss) != nil || ss.Pid == 0 {
		return nil, false
	}
	var out []lockservice.DetailLine
	add := func(term, value, class string) {
		out = append(out, lockservice.DetailLine{Term: term, Value: value, Class: class})
	}
	add("pid", strconv.Itoa(ss.Pid), "mono")
	add("application", pgText(ss.Application, "(none)"), "")
	if ss.User != nil || ss.Database != nil {
		add("user @ database", pgText(ss.User, "?")+" @ "+pgText(ss.Database, "?"), "mono")
	}
	client := "local socket"
	if ss.ClientAddr != nil && *ss.ClientAddr != "" {
		client = *ss.ClientAddr
		if ss.ClientPort != nil && *ss.ClientPort > 0 {
			client = net.JoinHostPort(client, strconv.Itoa(*ss.ClientPort))
		}
	}
	add("client address", client, "mono")
	add("backend state", pgText(ss.State, "?"), "")
	if ss.LockMode != "" {
		add("lock mode", ss.LockMode, "mono")
	}
	q := strings.Join(strings.Fields(pgText(ss.Query, "")), " ")
	shown := q
	if r := []rune(q); len(r) > queryShown {
		shown = string(r[:queryShown]) + "…"
	}
	out = append(out, lockservice.DetailLine{Term: "query", Value: shown, Class: "mono pg-query", Title: q})
	if ss.XactStart != nil {
		out = append(out, lockservice.DetailLine{Term: "transaction", Since: *ss.XactStart, At: s.UpdatedAt})
	} else {
		add("transaction", "none open", "")
	}
	if ss.WaitStart != nil {
		out = append(out, lockservice.DetailLine{Term: "waiting", Since: *ss.WaitStart, At: s.UpdatedAt})
	}
	out = append(out, lockservice.DetailLine{
		Term: "to end it", Value: fmt.Sprintf("SELECT pg_terminate_backend(%d);", ss.Pid), Class: "mono copyable",
		Title: "for an operator to run, in psql as a superuser or the session's role; zklockviz never runs it",
	})
	return out, true
}

func pgText(p *string, empty string) string {
	if p == nil || *p == "" {
		return empty
	}
	return *p
}
