package views

import (
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/zklockviz/zklockviz/lockservice"
)

// A run's meters and what its servers hold (RunHerd) are drawn here from
// its state, in its service's words (lockservice.ClassroomWords). One
// thing only the page knows: which other runs share it. A bar is scaled to
// the largest figure the runs on the page show on the same meter, so each
// bar carries its own end (data-end) and its title for a larger peer's
// figure with that figure left to fill (data-wider); the page fills it
// when a peer's figure is larger (sim-panel.js's scaleMeters).

// RunStats are a run's counts by simulator.Stats field, as its JSON names
// them.
type RunStats map[string]int

// RunServers are what a run's servers hold beyond its lane
// (simulator.Servers): each Redlock master's copy of the key, and the
// key's time to live over the run's time.
type RunServers struct {
	Masters []RunMaster `json:"masters"`
	TTL     []RunTTL    `json:"ttl"`
	TTLMs   int64       `json:"ttlMs"`
}

// RunMaster is one master's copy of the lock key (simulator.MasterState).
type RunMaster struct {
	Name   string `json:"name"`
	Addr   string `json:"addr"`
	Up     bool   `json:"up"`
	Token  string `json:"token"`
	Client string `json:"client"`
	LeftMs int64  `json:"leftMs"`
}

// RunTTL is one read of the key's time to live (simulator.TTLSample).
type RunTTL struct {
	AtMs   int64  `json:"atMs"`
	LeftMs int64  `json:"leftMs"`
	Holder string `json:"holder"`
}

// runPhrases are the sentences of a run's card the server says (meters,
// client pane), by the key a service's classroom words may override
// (ClassroomWords.Say).
var runPhrases = map[string]string{
	"meter.ofLargest":   "{v} of {max}, the largest run's figure",
	"meter.lastRelease": "last release: {last} · {help}",
	"meter.ofPairs":     "{v} of {max}: the bar's end is N(N−1)/2 = {worst}: the waiters' wake-ups when each of {n} clients' releases wakes every remaining waiter",
	"meter.ofLarger":    "{v} of {max}: the bar's end is the larger run's figure, {max}",
}

// phraseVar is a phrase's {name} or {name|one|many} (a count's word).
var phraseVar = regexp.MustCompile(`\{(\w+)(?:\|([^|}]*)\|([^}]*))?\}`)

// say words key in w's terms, as the page's say does: the service's own
// phrase, else the card's, else the key itself, its {name}s filled from
// vars.
func say(w lockservice.ClassroomWords, key string, vars map[string]any) string {
	t, ok := w.Say[key]
	if !ok {
		t, ok = runPhrases[key]
	}
	if !ok {
		t = key
	}
	return phraseVar.ReplaceAllStringFunc(t, func(m string) string {
		p := phraseVar.FindStringSubmatch(m)
		v, has := vars[p[1]]
		switch {
		case strings.Contains(m, "|"):
			if n, ok := v.(int); ok && n == 1 {
				return p[2]
			}
			return p[3]
		case !has || v == nil:
			return ""
		}
		return fmt.Sprint(v)
	})
}

// RunMeter is one bar under a run: its figure, what it counts and its
// scale.
type RunMeter struct {
	Key, Label, Help string
	Value            int
	// End is the bar's end as the run alone has it; Title says what it is
	// scaled to, Wider the same for a larger figure of another run on the
	// page, left as {max}.
	End          int
	Title, Wider string
	Good         bool
}

// Width is the bar's length in percent of its end, rounded as the page
// rounds it (half up).
func (m RunMeter) Width() string {
	return strconv.Itoa((200*m.Value+m.End)/(2*m.End)) + "%"
}

// valueOf is meter m's figure in stats: its field, or the sum of its
// fields.
func valueOf(stats RunStats, m lockservice.Meter) int {
	keys := m.Sum
	if len(keys) == 0 {
		keys = []string{m.Key}
	}
	v := 0
	for _, k := range keys {
		v += stats[k]
	}
	return v
}

// meters are s's bars in w's terms. Where w scales them to pairs (the
// herd's), a bar's end is N(N−1)/2, the waiters' wake-ups when every
// release wakes every remaining waiter (or the larger run's figure, should
// that exceed it: the herd scenario's joins and the holders' own leftover
// watches add more), and its help says the last release's figure: one
// run's bars mean something alone. Otherwise its end is its own figure
// until another run's on the page is larger.
func (s RunState) meters(w lockservice.ClassroomWords) []RunMeter {
	n := len(s.Clients)
	worst := n * (n - 1) / 2
	out := make([]RunMeter, 0, len(w.Meters))
	for _, m := range w.Meters {
		v := valueOf(s.Stats, m)
		x := RunMeter{Key: m.Key, Label: m.Label, Help: m.Help, Value: v, Good: m.Good || (m.GoodAtZero && v == 0)}
		if !w.PairsScale {
			x.End = max(1, v)
			x.Title = say(w, "meter.ofLargest", map[string]any{"v": v, "max": x.End})
			x.Wider = say(w, "meter.ofLargest", map[string]any{"v": v, "max": "{max}"})
			out = append(out, x)
			continue
		}
		x.End = max(1, worst, v)
		if s.LastRelease != nil {
			x.Help = say(w, "meter.lastRelease", map[string]any{"last": valueOf(s.LastRelease, m), "help": m.Help})
		}
		key := "meter.ofLarger"
		if x.End == worst && worst > 0 {
			key = "meter.ofPairs"
		}
		x.Title = say(w, key, map[string]any{"v": v, "max": x.End, "worst": worst, "n": n})
		x.Wider = say(w, "meter.ofLarger", map[string]any{"v": v, "max": "{max}"})
		out = append(out, x)
	}
	return out
}

// fixed1 is x with one decimal, as JavaScript's toFixed(1) writes it: the
// nearest, a tie going away from zero (Go's %.1f takes the even one).
func fixed1(x float64) string {
	r := new(big.Rat).SetFloat64(x)
	if r == nil {
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	neg := r.Sign() < 0
	r.Abs(r)
	r.Mul(r, big.NewRat(10, 1))
	r.Add(r, big.NewRat(1, 2))
	tenths := new(big.Int).Quo(r.Num(), r.Denom())
	s := tenths.String()
	if len(s) < 2 {
		s = "0" + s
	}
	s = s[:len(s)-1] + "." + s[len(s)-1:]
	if neg {
		s = "-" + s
	}
	return s
}

// tenthsOfSecond is ms as the servers' view words a time: "1.2s".
func tenthsOfSecond(ms int64) string { return fixed1(float64(ms)/1000) + "s" }

// masterView is one master's box in the servers' view.
type masterView struct {
	RunMaster
	// State is held, empty or down; Majority marks a copy whose client
	// holds a majority of the masters; Fill is the key's time left as a
	// bar's width, empty when the bar stays empty.
	State, Who, Title, Fill string
	Majority                bool
}

// mastersAria names the masters' boxes together.
func (sv *RunServers) mastersAria(w lockservice.ClassroomWords) string {
	return say(w, "masters.aria", map[string]any{"n": len(sv.Masters)})
}

// masters are the servers' masters as their boxes show them, in w's
// terms.
func (sv *RunServers) masters(w lockservice.ClassroomWords) []masterView {
	quorum := len(sv.Masters)/2 + 1
	copies := map[string]int{}
	for _, m := range sv.Masters {
		if m.Up && m.Client != "" {
			copies[m.Client]++
		}
	}
	out := make([]masterView, 0, len(sv.Masters))
	for _, m := range sv.Masters {
		vars := map[string]any{"name": m.Name, "addr": m.Addr, "client": m.Client, "token": m.Token, "leftMs": m.LeftMs, "left": tenthsOfSecond(m.LeftMs), "of": len(sv.Masters)}
		x := masterView{RunMaster: m}
		switch {
		case !m.Up:
			x.State, x.Who, x.Title, x.Client = "down", say(w, "master.down", nil), say(w, "master.downTitle", vars), ""
		case m.Client == "":
			x.State, x.Who, x.Title = "empty", say(w, "master.empty", nil), say(w, "master.emptyTitle", vars)
		default:
			n := copies[m.Client]
			x.Majority = n >= quorum
			vars["n"] = n
			vars["majority"] = say(w, "master.minority", nil)
			if x.Majority {
				vars["majority"] = say(w, "master.majority", nil)
			}
			x.State, x.Who, x.Title = "held", say(w, "master.held", vars), say(w, "master.heldTitle", vars)
			if sv.TTLMs > 0 {
				x.Fill = strconv.FormatFloat(max(0, min(100, 100*float64(m.LeftMs)/float64(sv.TTLMs))), 'f', -1, 64) + "%"
			}
		}
		out = append(out, x)
	}
	return out
}

// ttlLine is one holder's stretch of the key's time to live.
type ttlLine struct {
	Holder, Points string
	// Renewals are the rises of its line: a renewal's x and y.
	Renewals [][2]string
}

// class is how the line is drawn: a holder's key, or none.
func (l ttlLine) class() string {
	if l.Holder == "" {
		return "none"
	}
	return "held"
}

// ttlChart is the key's time to live over the run's time as the servers'
// view draws it.
type ttlChart struct {
	Lines                        []ttlLine
	Floor, Aria, Caption, ViewBx string
	Points, Rises                int
}

// The chart's size in its own units (stretched to its box).
const ttlW, ttlH = 600, 64

// ttl draws the samples of sv, a line per holder: a renewal shows as a
// rise, an expiry as a fall to the floor, a new holder's key as a new
// line; clockMs is the run's time shown.
func (sv *RunServers) ttl(w lockservice.ClassroomWords, clockMs int64) ttlChart {
	samples := sv.TTL
	top := max(sv.TTLMs, 1)
	for _, p := range samples {
		top = max(top, p.LeftMs)
	}
	last := samples[len(samples)-1]
	end := max(clockMs, last.AtMs, 1)
	x := func(ms int64) string { return fixed1(ttlW * float64(ms) / float64(end)) }
	y := func(ms int64) string { return fixed1(ttlH - 4 - (ttlH-8)*float64(ms)/float64(top)) }
	c := ttlChart{Floor: y(0), Points: len(samples), ViewBx: fmt.Sprintf("0 0 %d %d", ttlW, ttlH)}
	var holders []string
	for i := 0; i < len(samples); {
		j := i + 1
		for j < len(samples) && samples[j].Holder == samples[i].Holder {
			j++
		}
		l := ttlLine{Holder: samples[i].Holder}
		pts := make([]string, 0, j-i)
		for k := i; k < j; k++ {
			p := samples[k]
			pts = append(pts, x(p.AtMs)+","+y(p.LeftMs))
			if k > i && l.Holder != "" && p.LeftMs > samples[k-1].LeftMs+100 {
				l.Renewals = append(l.Renewals, [2]string{x(p.AtMs), y(p.LeftMs)})
			}
		}
		l.Points = strings.Join(pts, " ")
		c.Rises += len(l.Renewals)
		if l.Holder != "" && !slices.Contains(holders, l.Holder) {
			holders = append(holders, l.Holder)
		}
		c.Lines = append(c.Lines, l)
		i = j
	}
	who := strings.Join(holders, ", ")
	if who == "" {
		who = say(w, "ttl.nobody", nil)
	}
	c.Aria = say(w, "ttl.aria", map[string]any{"span": tenthsOfSecond(end), "rises": c.Rises, "holders": who})
	lease := ""
	if sv.TTLMs != 0 {
		lease = say(w, "ttl.lease", map[string]any{"lease": tenthsOfSecond(sv.TTLMs)})
	}
	c.Caption = say(w, "ttl.caption", map[string]any{"lease": lease})
	if last.Holder != "" {
		c.Caption += say(w, "ttl.left", map[string]any{"holder": last.Holder, "left": tenthsOfSecond(last.LeftMs)})
	} else {
		c.Caption += say(w, "ttl.noKey", nil)
	}
	if c.Rises > 0 {
		c.Caption += say(w, "ttl.renewals", map[string]any{"n": c.Rises})
	}
	if len(holders) > 0 {
		c.Caption += say(w, "ttl.heldBy", map[string]any{"holders": strings.Join(holders, " → ")})
	}
	return c
}
