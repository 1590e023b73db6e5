package views

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// paneLine is one term of a client's pane; Class marks its value (mono, or
// time: a clock from Since, on the run's clock).
type paneLine struct {
	Term, Value, Class string
	Since              int64
}

// paneLines are what client c's pane says of it in w's terms, and of its
// node in locks (the step's, the followed lock first) unless the server
// describes that node below them (serverPane: a service whose words do not
// show the node here, as ZooKeeper's show its znodes).
func (s RunState) paneLines(w lockservice.ClassroomWords, c RunClient, locks []lockqueue.Snapshot) (lines []paneLine, serverPane bool) {
	var node *lockqueue.Node
	for i := range locks {
		for j := range locks[i].Nodes {
			if node == nil && c.Node != "" && locks[i].Nodes[j].Name == c.Node {
				node = &locks[i].Nodes[j]
			}
		}
	}
	serverPane = node != nil && !w.NodeLines
	add := func(key, value, class string) {
		lines = append(lines, paneLine{Term: say(w, key, nil), Value: value, Class: class})
	}
	add("pane.client", c.Name, "")
	if c.State == "stale" {
		add("pane.state", c.State+say(w, "pane.stale", nil), "")
	} else {
		add("pane.state", c.State, "")
	}
	if !serverPane {
		// A service without sessions (Redis: a key and its token) shows none.
		if session := cmp.Or(c.Session, nodeSession(node)); session != "" {
			add("pane.session", session, "mono")
		}
		add("pane.node", cmp.Or(c.Node, "—"), "mono")
	}
	if c.WaitsFor != "" {
		add("pane.waitsClient", c.WaitsFor, "")
	}
	if node != nil && !serverPane {
		path := locks[0].Path
		add("pane.mode", ModeLabel(node.Mode), "")
		switch {
		case node.DataBinary:
			add("pane.data", say(w, "pane.binary", map[string]any{"data": node.Data}), "mono")
		default:
			add("pane.data", cmp.Or(node.Data, say(w, "pane.empty", nil)), "mono")
		}
		if !node.Holding && node.WaitsOn == lockqueue.OnChildren {
			add("pane.waitsFor", say(w, "pane.children", map[string]any{"path": path}), "mono")
		} else if !node.Holding {
			add("pane.waitsFor", cmp.Or(node.WaitsFor, "—"), "mono")
		}
		var watches []string
		for _, p := range node.Watching {
			watches = append(watches, strings.Replace(p, path+"/", "", 1))
		}
		add("pane.watches", cmp.Or(strings.Join(watches, ", "), say(w, "pane.nothing", nil)), "mono")
		// A holder's clock runs from its hold (stamped on the run's clock),
		// a waiter's from its join: the page's RunClock's rule.
		since, key := c.JoinedMs, "pane.waitingFor"
		if node.Holding {
			since, key = s.ClockMs, "details.holdingFor"
			if !node.HeldSince().IsZero() {
				since = node.HeldSince().UnixMilli()
			}
		}
		lines = append(lines, paneLine{Term: say(w, key, nil), Class: "time", Since: since})
	}
	if c.Token != 0 {
		add("pane.token", strconv.FormatInt(c.Token, 10), "")
	}
	return lines, serverPane
}

func nodeSession(n *lockqueue.Node) string {
	if n == nil {
		return ""
	}
	return n.Session
}

// runActs are the actions a teacher may take on a client, in its pane.
var runActs = []string{"release", "crash", "pause", "write"}

// actHelp is action's button's help in w's terms; a write says whether
// the resource checks the fencing token.
func (s RunState) actHelp(w lockservice.ClassroomWords, action string) string {
	switch {
	case action == "write" && s.Fencing:
		return say(w, "pane.writeFencing", nil)
	case action == "write":
		return say(w, "pane.write", nil)
	}
	return w.Actions[action]
}

// acts says whether c may be acted on with action: a client in the queue
// (a paused one is not paused again).
func (c RunClient) acts(action string) bool {
	switch c.State {
	case "waiting", "holding", "stale":
		return true
	case "paused":
		return action != "pause"
	}
	return false
}
