package views

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// seqMarkers are the recipes' markers before a node's sequence, longest
// first where one ends another.
var seqMarkers = []string{"__READ__", "__WRIT__", "__rlock__", "__lock__", "-lock-", "-latch-", "-lease-", "-read-", "-write-"}

// ShortName keeps what tells lock nodes apart, the recipe's marker and the
// sequence, plus a few characters of the random prefix Curator, kazoo and
// go-zookeeper add: "_c_8f3a…-__READ__0000000003" reads "8f3a…READ#3". seq is
// the node's parsed sequence, -1 when it has none.
func ShortName(name string, seq int64) string {
	if utf8.RuneCountInString(name) <= 14 {
		return name
	}
	if seq == -1 {
		r := []rune(name)
		return string(r[:6]) + "…" + string(r[len(r)-6:])
	}
	width := 10
	if s := strconv.FormatInt(seq, 10); seq < 0 && len(s) > width {
		width = len(s)
	}
	prefix := name[:max(0, len(name)-width)]
	marker := ""
	for _, m := range seqMarkers {
		if strings.HasSuffix(prefix, m) {
			marker = strings.Trim(m, "-_")
			prefix = strings.TrimSuffix(prefix, m)
			break
		}
	}
	prefix = strings.TrimPrefix(strings.TrimPrefix(prefix, "_c_"), "x-")
	head := ""
	if r := []rune(prefix); len(r) > 0 {
		head = string(r[:min(4, len(r))]) + "…"
	}
	if marker == "" {
		return head + "#" + strconv.FormatInt(seq, 10)
	}
	return head + marker + "#" + strconv.FormatInt(seq, 10)
}

// LaneOf is what a lane draws of n: its state (the table's), and what it
// writes under its shape. That is three lines: its short name; who it is
// (its Label) or its data, quoted and clipped ("‹binary›" for bytes that
// are not text, "—" for none); its session's tail ("persistent" for a node
// no session owns) or, for a service without sessions, its client. And a
// clock: ClockOf's, or the time its lease or its zombie's session has
// left, counted from updated, the snapshot's UpdatedAt, when that time
// left was true. Every lane draws it as it comes (StampLane): the browser
// has no copy of the rules.
func LaneOf(n *lockqueue.Node, updated time.Time) *lockqueue.Lane {
	data := "—"
	switch {
	case n.Label() != "":
		data = clipText(n.Label(), 18)
	case n.DataBinary:
		data = "‹binary›"
	case n.Data != "":
		data = "“" + clipText(oneLine(n.Data, 15), 15) + "”"
	}
	session := clipText(n.Client(), 16)
	switch s := n.Session; {
	case s == "0x0":
		session = "persistent"
	case len(s) > 8:
		session = "s …" + s[len(s)-5:]
	case s != "":
		session = "s " + s
	}
	c := ClockOf(*n)
	l := &lockqueue.Lane{
		State: stateClass(*n), Persistent: n.Session == "0x0" && !n.Foreign,
		Lines: []string{ShortName(n.Name, n.Seq), data, session}, Verb: c.Verb, Since: c.SinceMs(), Hint: c.Hint,
	}
	if l.Since == 0 && l.Hint == "" {
		l.Hint = lanePhrases["node.waitUnknown"]
	}
	// The time left says more than the node's age: when it runs out, the
	// service lets the node go.
	switch {
	case n.LeaseLeftMs() > 0 && !updated.IsZero():
		l.Kind, l.Verb, l.Left, l.Expired = "lease", "lease", n.LeaseLeftMs(), leaseExpired
		l.Until = updated.UnixMilli() + l.Left
	case n.Zombie && n.ExpiresInMs() > 0 && !updated.IsZero():
		l.Kind, l.Verb, l.Left, l.Expired = "zombie", "zombie", n.ExpiresInMs(), lanePhrases["clock.expiryDue"]
		l.Until = updated.UnixMilli() + l.Left
	case n.Zombie:
		// Its expiry unknown, the clock is how long it has held: worded
		// so, not as if it had been a zombie all that time.
		l.Kind, l.Verb = "zombie", zombieHeld
	}
	return l
}

// oneLine is the start of text with each run of spaces, tabs and line
// breaks one space, long enough to clip to n characters: a node's data
// may be a kilobyte, and a page is sent a thousand nodes a change.
func oneLine(text string, n int) string {
	var b strings.Builder
	runes, space := 0, false
	for _, r := range text {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			runes++
			space = false
		}
		if runes > n {
			break
		}
		b.WriteRune(r)
		runes++
	}
	if space {
		b.WriteByte(' ')
	}
	return b.String()
}

// clipText cuts text to n characters, the last an ellipsis when it cut.
func clipText(text string, n int) string {
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	return string([]rune(text)[:n-1]) + "…"
}

// StampLane is s with each node carrying what its lane writes under it
// (LaneOf): the nodes a page is sent to draw, a window of a long queue or
// a classroom's lock, never a whole big queue. s's nodes are copied, never
// changed.
func StampLane(s lockqueue.Snapshot) lockqueue.Snapshot {
	nodes := make([]lockqueue.Node, len(s.Nodes))
	for i := range s.Nodes {
		nodes[i] = s.Nodes[i]
		nodes[i].SetLane(LaneOf(&nodes[i], s.UpdatedAt))
	}
	s.Nodes = nodes
	return s
}
