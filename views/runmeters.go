package views

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/zklockviz/zklockviz/lockservice"
)

// A run's meters and what its servers hold are drawn from its state in its
// service's words (RunParts). Only the page knows which other runs share
// it, whose larger figure on the same meter scales a bar: each bar says its
// own end, and its title for a larger figure with {max} left to fill
// (sim-panel.js's renderHerd).

// RunStats are a run's counts by simulator.Stats field.
type RunStats map[string]int

// RunServers are what a run's servers hold beyond its lane
// (simulator.Servers, its fields' JSON names matched regardless of case):
// each Redlock master's copy of the key, and the key's time to live.
type RunServers struct {
	Masters []struct {
		Name, Addr, Token, Client string
		Up                        bool
		LeftMs                    int64
	} `json:"masters"`
	TTL []struct {
		AtMs, LeftMs int64
		Holder       string
	} `json:"ttl"`
	TTLMs int64 `json:"ttlMs"`
}

// runPhrases are the card's sentences the server says, by the key a
// service's words may override (ClassroomWords.Say).
var runPhrases = map[string]string{
	"meter.ofLargest":    "{v} of {max}, the largest run's figure",
	"meter.lastRelease":  "last release: {last} · {help}",
	"meter.ofPairs":      "{v} of {max}: the bar's end is N(N−1)/2 = {worst}: the waiters' wake-ups when each of {n} clients' releases wakes every remaining waiter",
	"meter.ofLarger":     "{v} of {max}: the bar's end is the larger run's figure, {max}",
	"run.cycle":          "⚠ wait cycle across {n} locks: {chain}",
	"side.requestsValue": "{perSec} ({requests} in all)",
	"side.requestsTip":   "requests: {from}; per second of the run's real time",
	"side.handoffValue":  "{ms} ms",
	"pane.client":        "client",
	"pane.state":         "state",
	"pane.stale":         ": back from a pause that outlasted its hold on the lock (its session, lease or key), it still believes it holds",
	"pane.session":       "session",
	"pane.node":          "node",
	"pane.waitsClient":   "waits for client",
	"pane.mode":          "mode",
	"pane.data":          "data",
	"pane.binary":        "base64 {data}",
	"pane.empty":         "(empty)",
	"pane.waitsFor":      "waits for",
	"pane.children":      "children of {path}",
	"pane.watches":       "watches",
	"pane.nothing":       "nothing",
	"pane.waitingFor":    "waiting for",
	"pane.holdingFor":    "holding for",
	"pane.token":         "fencing token",
	"pane.write":         "write to the protected resource",
	"pane.writeFencing":  "write to the protected resource (it checks the fencing token)",
	"act.release":        "release",
	"act.crash":          "crash",
	"act.pause":          "pause",
	"act.write":          "write",
}

var phraseVar = regexp.MustCompile(`\{(\w+)(?:\|([^|}]*)\|([^}]*))?\}`)

// say words key as the page's say does: w's own phrase, else the card's or
// the lane's, else the key itself, with its {name}s filled from vars ({n|one|many}:
// the word for a count of one or of any other).
func say(w lockservice.ClassroomWords, key string, vars map[string]any) string {
	t, ok := w.Say[key]
	if !ok {
		t, ok = runPhrases[key]
	}
	if !ok {
		t = cmp.Or(lanePhrases[key], key)
	}
	return phraseVar.ReplaceAllStringFunc(t, func(m string) string {
		p := phraseVar.FindStringSubmatch(m)
		v, ok := vars[p[1]]
		switch {
		case strings.Contains(m, "|") && v == 1:
			return p[2]
		case strings.Contains(m, "|"):
			return p[3]
		case ok:
			return fmt.Sprint(v)
		}
		return ""
	})
}

// RunMeter is one bar under a run, Good if its kind is cheap (or while it
// reads 0, where that is good): End is its end as the run alone has it,
// which Title says; Wider is the title for another run's larger figure,
// {max} left to fill.
type RunMeter struct {
	lockservice.Meter
	Value, End   int
	Title, Wider string
}

// meters are s's bars in w's terms. On the herd's pairs scale a bar ends at
// N(N−1)/2, the waiters' wake-ups when every release wakes every remaining
// waiter (or at its figure, should that exceed it: the herd scenario's
// joins and the holders' own leftover watches add more), and its help says
// the last release's figure: one run's bars mean something alone.
func (s RunState) meters(w lockservice.ClassroomWords) []RunMeter {
	n := len(s.Clients)
	worst := n * (n - 1) / 2
	out := make([]RunMeter, 0, len(w.Meters))
	for _, m := range w.Meters {
		x := RunMeter{Meter: m, Value: s.Stats.of(m)}
		x.Good = m.Good || (m.GoodAtZero && x.Value == 0)
		vars := map[string]any{"v": x.Value, "max": "{max}", "worst": worst, "n": n}
		x.End, x.Wider = max(1, x.Value), say(w, "meter.ofLargest", vars)
		if w.PairsScale {
			x.End, x.Wider = max(1, worst, x.Value), say(w, "meter.ofLarger", vars)
			if s.LastRelease != nil {
				x.Help = say(w, "meter.lastRelease", map[string]any{"last": s.LastRelease.of(m), "help": m.Help})
			}
		}
		vars["max"] = x.End
		x.Title = strings.ReplaceAll(x.Wider, "{max}", strconv.Itoa(x.End))
		if w.PairsScale && x.End == worst && worst > 0 {
			x.Title = say(w, "meter.ofPairs", vars)
		}
		out = append(out, x)
	}
	return out
}

// of is meter m's figure: its field, or the sum of its fields.
func (st RunStats) of(m lockservice.Meter) int {
	keys, v := m.Sum, 0
	if len(keys) == 0 {
		keys = []string{m.Key}
	}
	for _, k := range keys {
		v += st[k]
	}
	return v
}

// tenths is ms as the servers' view words a time, to a tenth of a second.
func tenths(ms int64) string { return strconv.FormatFloat(float64((ms+50)/100)/10, 'f', 1, 64) + "s" }

// master is master i's state (held, empty or down), what its box says and
// its title; majority marks a copy whose client holds most of the masters.
func (sv *RunServers) master(w lockservice.ClassroomWords, i int) (state, who, title string, majority bool) {
	m := sv.Masters[i]
	vars := map[string]any{"name": m.Name, "addr": m.Addr, "client": m.Client, "token": m.Token, "leftMs": m.LeftMs, "left": tenths(m.LeftMs), "of": len(sv.Masters)}
	switch {
	case !m.Up:
		return "down", say(w, "master.down", nil), say(w, "master.downTitle", vars), false
	case m.Client == "":
		return "empty", say(w, "master.empty", nil), say(w, "master.emptyTitle", vars), false
	}
	n := 0
	for _, o := range sv.Masters {
		if o.Up && o.Client == m.Client {
			n++
		}
	}
	majority = n > len(sv.Masters)/2
	vars["n"], vars["majority"] = n, say(w, "master.minority", nil)
	if majority {
		vars["majority"] = say(w, "master.majority", nil)
	}
	return "held", say(w, "master.held", vars), say(w, "master.heldTitle", vars), majority
}

// ttlLine is one holder's stretch of the key's time to live ("" none) in
// the chart's units (ttlW×ttlH): its points, and the renewals among them.
type ttlLine struct {
	Holder, Points string
	Renewals       [][2]string
}

// ttlChart is the key's time to live over the run's time (End ms), a line
// per holder's stretch: a renewal rises, an expiry falls to the floor (at
// Y0), a new holder's key is a new line. Holders held it, in turn.
type ttlChart struct {
	Lines   []ttlLine
	Y0      string
	End     int64
	Holders []string
	Rises   int
	Caption string
}

// The chart's size in its own units, stretched to its box.
const ttlW, ttlH = 600, 64

// ttl is sv's chart up to clockMs, the run's time shown, in w's words.
func (sv *RunServers) ttl(w lockservice.ClassroomWords, clockMs int64) (c ttlChart) {
	top, last := max(sv.TTLMs, 1), sv.TTL[len(sv.TTL)-1]
	c.End = max(clockMs, last.AtMs, 1)
	for _, p := range sv.TTL {
		top = max(top, p.LeftMs)
	}
	x := func(ms int64) string { return strconv.FormatFloat(ttlW*float64(ms)/float64(c.End), 'f', 1, 64) }
	y := func(ms int64) string {
		return strconv.FormatFloat(ttlH-4-(ttlH-8)*float64(ms)/float64(top), 'f', 1, 64)
	}
	for i, p := range sv.TTL {
		if i == 0 || p.Holder != sv.TTL[i-1].Holder {
			c.Lines = append(c.Lines, ttlLine{Holder: p.Holder})
			if p.Holder != "" && !slices.Contains(c.Holders, p.Holder) {
				c.Holders = append(c.Holders, p.Holder)
			}
		} else if p.Holder != "" && p.LeftMs > sv.TTL[i-1].LeftMs+100 {
			l := &c.Lines[len(c.Lines)-1]
			l.Renewals = append(l.Renewals, [2]string{x(p.AtMs), y(p.LeftMs)})
			c.Rises++
		}
		l := &c.Lines[len(c.Lines)-1]
		l.Points = strings.TrimSpace(l.Points + " " + x(p.AtMs) + "," + y(p.LeftMs))
	}
	c.Y0 = y(0)
	lease := ""
	if sv.TTLMs != 0 {
		lease = say(w, "ttl.lease", map[string]any{"lease": tenths(sv.TTLMs)})
	}
	c.Caption = say(w, "ttl.caption", map[string]any{"lease": lease})
	if last.Holder != "" {
		c.Caption += say(w, "ttl.left", map[string]any{"holder": last.Holder, "left": tenths(last.LeftMs)})
	} else {
		c.Caption += say(w, "ttl.noKey", nil)
	}
	if c.Rises > 0 {
		c.Caption += say(w, "ttl.renewals", map[string]any{"n": c.Rises})
	}
	if len(c.Holders) > 0 {
		c.Caption += say(w, "ttl.heldBy", map[string]any{"holders": strings.Join(c.Holders, " → ")})
	}
	return c
}

// aria says the chart in one sentence.
func (c ttlChart) aria(w lockservice.ClassroomWords) string {
	who := strings.Join(c.Holders, ", ")
	if who == "" {
		who = say(w, "ttl.nobody", nil)
	}
	return say(w, "ttl.aria", map[string]any{"span": tenths(c.End), "rises": c.Rises, "holders": who})
}
