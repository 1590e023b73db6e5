package simulator

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// The time–space diagram: a run's report drawn as Kleppmann's figures draw
// a lock's story, one horizontal line per process (the lock server, each
// client, the protected resource) with time flowing right, the messages
// between them as arrows. It is drawn here, from the report alone, so the
// CLI (sim --format svg) and the classroom's export draw the same picture.

// Layout, in SVG user units (pixels at 100%).
const (
	tsLeft      = 170 // the lanes' names
	tsTop       = 110 // the title and its two lines
	tsLaneGap   = 64
	tsMinStep   = 72  // a step whose clock does not move still gets room
	tsMaxStep   = 300 // a long expiry is not drawn to scale past this
	tsPxPerSec  = 60
	tsTail      = 60 // after the last step
	tsLegendRow = 20
)

// Colours, one per meaning, repeated in the legend.
const (
	tsHeld     = "#2e7d32"
	tsBelieved = "#ef6c00"
	tsWaiting  = "#1565c0"
	tsPause    = "#9e9e9e"
	tsRefused  = "#c62828"
	tsViolate  = "#e53935"
	tsInk      = "#212121"
)

// expiryWords are what each service's clients lose when they go silent,
// as the cross on the server's line names it.
var expiryWords = map[string]string{
	"":         "session expired",
	"redis":    "key expired",
	"etcd":     "lease expired",
	"postgres": "session ended by the server",
}

// The most a diagram draws: beyond them it would be too large to read (a
// lane each, an arrow each), and costly to make on a shared server. The
// classroom starts at most 50 clients.
const (
	MaxDrawClients = 50
	MaxDrawEvents  = 5000
)

// WriteSVG draws rep as a self-contained SVG time–space diagram: inline
// styles, text labels, a title and a legend. A run beyond MaxDrawClients
// or MaxDrawEvents is ErrConflict.
func WriteSVG(w io.Writer, rep Report) error {
	d := newTimeSpace(rep)
	if len(d.clients) > MaxDrawClients || len(rep.Events) > MaxDrawEvents {
		return conflictf("the run is too large to draw as a time–space diagram: %d clients and %d events (at most %d and %d); a run with fewer clients draws",
			len(d.clients), len(rep.Events), MaxDrawClients, MaxDrawEvents)
	}
	d.draw()
	if _, err := io.WriteString(w, d.b.String()); err != nil {
		return fmt.Errorf("write the time–space diagram: %w", err)
	}
	return nil
}

type timeSpace struct {
	rep     Report
	xs      []float64 // xs[k]: the end of step k on the run's clock; xs[0] the start
	end     float64
	clients []string
	laneY   map[string]float64
	serverY float64
	// resourceY is 0 when nobody writes to a resource.
	resourceY float64
	height    float64
	// writes counts the writes drawn, so that labels of writes close
	// together alternate between two rows.
	nWrites int
	// waited is the step each client's last wait was drawn at (a second
	// wait in the same step, such as the one that closes a cycle, adds
	// only its tooltip); lockWait is where a client's wait on one of its
	// several locks began (Event.Lock), drawn under its line until granted.
	waited   map[string]int
	lockWait map[string]float64
	b        strings.Builder
}

func newTimeSpace(rep Report) *timeSpace {
	d := &timeSpace{rep: rep, laneY: map[string]float64{}, waited: map[string]int{}, lockWait: map[string]float64{}}
	d.xs = []float64{tsLeft + 20}
	var prev int64
	for _, st := range rep.Steps {
		gap := float64(st.ClockMs-prev) / 1000 * tsPxPerSec
		d.xs = append(d.xs, d.xs[len(d.xs)-1]+min(max(gap, tsMinStep), tsMaxStep))
		prev = st.ClockMs
		for _, c := range st.Clients {
			if _, ok := d.laneY[c.Name]; !ok {
				d.laneY[c.Name] = 0
				d.clients = append(d.clients, c.Name)
			}
		}
	}
	d.end = d.xs[len(d.xs)-1] + tsTail
	y := float64(tsTop + 30)
	d.serverY = y
	for _, c := range d.clients {
		y += tsLaneGap
		d.laneY[c] = y
	}
	if d.writes() {
		y += tsLaneGap
		d.resourceY = y
	}
	d.height = y + 84
	return d
}

// writes says whether any client wrote to the protected resource.
func (d *timeSpace) writes() bool {
	for _, e := range d.rep.Events {
		if e.Event == EvWrite || e.Event == EvFenced {
			return true
		}
	}
	return false
}

func (d *timeSpace) token(t int64) string {
	if d.rep.token != nil {
		return d.rep.token(t)
	}
	return decimalToken(t)
}

func (d *timeSpace) draw() {
	width := d.end + 130 // room for the last labels
	legendY := d.height
	total := legendY + 4*tsLegendRow + 10
	fmt.Fprintf(&d.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		width, total, width, total)
	fmt.Fprintf(&d.b, `<title>%s</title>`+"\n", esc(d.title()))
	fmt.Fprintf(&d.b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="#ffffff"/>`+"\n", width, total)
	d.text(16, 26, d.title(), `font-size="16" font-weight="bold"`)
	d.text(16, 46, d.subtitle(), `fill="#424242"`)
	d.text(16, 64, "verdict: "+d.rep.Verdict.Summary, `fill="#424242"`)
	d.violations()
	d.lanes()
	evs := d.placeEvents()
	d.events(evs, d.states(evs))
	d.axis()
	d.legend(legendY)
	d.b.WriteString("</svg>\n")
}

func (d *timeSpace) title() string {
	return fmt.Sprintf("%s: a time–space diagram of the run", cmp.Or(d.rep.Title, d.rep.Scenario))
}

func (d *timeSpace) subtitle() string {
	return fmt.Sprintf("scenario %s on %s, fencing %s; time flows right on the run's clock (a step whose clock does not move gets a slot of its own)",
		d.rep.Scenario, d.serverName(), d.rep.FencingOnOff())
}

func (d *timeSpace) serverName() string { return cmp.Or(d.rep.server, "the lock server") }

// lanes draws one line per process, named at its left.
func (d *timeSpace) lanes() {
	d.b.WriteString(`<g class="lanes">` + "\n")
	lane := func(class, name, label string, y float64) {
		fmt.Fprintf(&d.b, `<g class="lane %s" data-name="%s"><line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#616161" stroke-width="1.5"/>`,
			class, esc(name), tsLeft, y, d.end, y)
		d.text(12, y+4, label, `font-weight="bold"`)
		d.b.WriteString("</g>\n")
	}
	lane("server", d.serverName(), d.serverName(), d.serverY)
	for _, c := range d.clients {
		lane("client", c, c, d.laneY[c])
	}
	if d.resourceY > 0 {
		lane("resource", "resource", "protected resource", d.resourceY)
	}
	d.b.WriteString("</g>\n")
}

// placed is an event where the diagram draws it: a step's events spread
// over the step's stretch of the axis in the order they happened, the last
// at the step's end, so that a pause, an expiry and a resume within one
// step are drawn apart and the pause as long as the step let time pass.
type placed struct {
	e    Event
	x    float64
	step int // the index of its step in rep.Steps
}

func (d *timeSpace) placeEvents() []placed {
	at := make(map[int]int, len(d.rep.Steps))
	for k, st := range d.rep.Steps {
		at[st.Step] = k
	}
	var out []placed
	for k, st := range d.rep.Steps {
		evs := st.eventsOf(d.rep.Events)
		gap := d.xs[k+1] - d.xs[k]
		for i, e := range evs {
			out = append(out, placed{e: e, x: d.xs[k] + gap*float64(i+1)/float64(len(evs)), step: at[e.Step]})
		}
	}
	return out
}

// eventsOf are the events of step st.
func (st StepInfo) eventsOf(all []Event) []Event {
	var out []Event
	for _, e := range all {
		if e.Step == st.Step {
			out = append(out, e)
		}
	}
	return out
}

// belief is what a client believes and what the server says of it, at one
// point of its line.
type belief struct {
	held, believed, waiting, paused bool
}

// style is how its line is drawn: held (the server agrees), believed
// only, waiting, or nothing.
func (b belief) style() string {
	switch {
	case b.held:
		return "held"
	case b.believed:
		return "believed"
	case b.waiting:
		return "waiting"
	}
	return ""
}

// after is b after event e of its client.
func (b belief) after(e Event) belief {
	switch e.Event {
	case EvWait:
		b.waiting = true
	case EvLock:
		b = belief{held: true, believed: true, paused: b.paused}
	case EvUnlock, EvCrash:
		b = belief{}
	case EvExpire:
		// The server took the lock (or the place in the queue) away; the
		// client, cut off, still believes what it believed.
		b.held, b.waiting = false, false
	case EvPause:
		b.paused = true
	case EvResume:
		b.paused = false
	}
	return b
}

// atStepEnd reconciles b with the client's state as the step left it,
// which the recorded events may not spell out (a waiter's wake-up).
func (b belief) atStepEnd(c ClientInfo) belief {
	switch c.State {
	case StateHolding:
		return belief{held: true, believed: true, paused: b.paused}
	case StateWaiting:
		return belief{waiting: true, paused: b.paused}
	case StateStale:
		return belief{believed: true}
	case StatePaused:
		b.paused = true
		return b
	}
	return belief{}
}

// states draws each client's line as its belief changes along it: holding
// (the server agrees), believing it holds after the server took the lock
// away, waiting; and behind it, a thick gray span while it is paused.
//
// It returns, for each of evs, what its client believed just before it.
func (d *timeSpace) states(evs []placed) []belief {
	type line struct {
		b                belief
		from, pausedFrom float64
	}
	lines := map[string]*line{}
	for _, c := range d.clients {
		lines[c] = &line{}
	}
	var bars, pauses strings.Builder
	move := func(c string, x float64, next belief) {
		l := lines[c]
		if l == nil {
			return
		}
		if next.paused != l.b.paused {
			if next.paused {
				l.pausedFrom = x
			} else {
				d.pauseSpan(&pauses, c, l.pausedFrom, x)
			}
		}
		if next.style() != l.b.style() {
			d.bar(&bars, c, l.b.style(), l.from, x)
			l.from = x
		}
		l.b = next
	}
	before := make([]belief, len(evs))
	i := 0
	for k, st := range d.rep.Steps {
		for ; i < len(evs) && evs[i].step == k; i++ {
			if l := lines[evs[i].e.Client]; l != nil {
				before[i] = l.b
				move(evs[i].e.Client, evs[i].x, l.b.after(evs[i].e))
			}
		}
		for _, c := range st.Clients {
			if l := lines[c.Name]; l != nil {
				move(c.Name, d.xs[k+1], l.b.atStepEnd(c))
			}
		}
	}
	for _, c := range d.clients {
		move(c, d.end, belief{})
	}
	d.b.WriteString(`<g class="states">` + "\n" + pauses.String() + bars.String() + "</g>\n")
	return before
}

// pauseSpan draws client c's pause from x1 to x2.
func (d *timeSpace) pauseSpan(b *strings.Builder, c string, x1, x2 float64) {
	fmt.Fprintf(b, `<rect class="pause" x="%.1f" y="%.1f" width="%.1f" height="20" fill="%s" fill-opacity="0.55"/>`+"\n", x1, d.laneY[c]-10, x2-x1, tsPause)
}

// bar draws client c's line from x1 to x2 in style.
func (d *timeSpace) bar(b *strings.Builder, c, style string, x1, x2 float64) {
	y := d.laneY[c]
	switch style {
	case "held":
		fmt.Fprintf(b, `<rect class="held" x="%.1f" y="%.1f" width="%.1f" height="6" fill="%s"/>`+"\n", x1, y-3, x2-x1, tsHeld)
	case "believed":
		fmt.Fprintf(b, `<rect class="believed" x="%.1f" y="%.1f" width="%.1f" height="6" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="6 3"/>`+"\n", x1, y-3, x2-x1, tsBelieved)
	case "waiting":
		fmt.Fprintf(b, `<line class="waiting" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3" stroke-dasharray="2 4"/>`+"\n", x1, y, x2, y, tsWaiting)
	}
}

// events draws the messages and marks where placeEvents put them.
func (d *timeSpace) events(evs []placed, before []belief) {
	d.b.WriteString(`<g class="events">` + "\n")
	queued := map[string]bool{}
	for i, p := range evs {
		d.event(p.e, p.x, holderToken(d.rep.Steps[p.step], p.e.Client), before[i], queued)
	}
	d.b.WriteString("</g>\n")
}

// holderToken is the token client held after step st (0: none).
func holderToken(st StepInfo, client string) int64 {
	for _, c := range st.Clients {
		if c.Name == client {
			return c.Token
		}
	}
	return 0
}

// event draws one event; before is what its client believed just before.
// An event of someone who is no client (a Redlock master stopping) is
// noted on the server's line; a kind of event the diagram has no mark for
// is named on its line.
func (d *timeSpace) event(e Event, x float64, token int64, before belief, queued map[string]bool) {
	if e.Client == "" {
		return
	}
	fmt.Fprintf(&d.b, `<g class="event %s" data-step="%d" data-client="%s"><title>step %d, %s: %s</title>`, esc(e.Event), e.Step, esc(e.Client), e.Step, esc(e.Client), esc(e.Text))
	defer d.b.WriteString("</g>\n")
	y, ok := d.laneY[e.Client]
	if !ok {
		d.note(x, d.serverY, e.Client+" "+e.Event)
		return
	}
	switch e.Event {
	case EvWait:
		if d.waited[e.Client] == e.Step {
			return
		}
		d.waited[e.Client] = e.Step
		d.arrow(x-10, y, x, d.serverY, tsInk, "")
		if e.Lock != "" {
			d.waitsFor(e, x, y)
		} else {
			d.text(x+3, y-8, "lock? queued", `font-size="10"`)
		}
		queued[e.Client] = true
	case EvLock:
		if !queued[e.Client] {
			d.arrow(x-10, y, x-4, d.serverY, tsInk, "")
		}
		queued[e.Client] = false
		d.arrow(x-4, d.serverY, x+4, y, tsHeld, "")
		label := "granted"
		if e.Lock != "" {
			label = e.Lock + " granted"
			d.lockWaitEnds(e.Client, x, y)
		}
		if token > 0 {
			label += ", token " + d.token(token)
		}
		d.text(x+6, y-8, label, `font-size="10" fill="`+tsHeld+`" class="grant"`)
	case EvNotify:
		d.arrow(x-6, d.serverY, x, y, tsWaiting, `stroke-dasharray="3 3"`)
	case EvUnlock:
		d.arrow(x-6, y, x, d.serverY, tsInk, "")
		d.text(x+3, y+16, "release", `font-size="10"`)
	case EvCrash:
		d.cross(x, y, tsRefused)
		d.text(x+8, y+16, "crashed", `font-size="10" fill="`+tsRefused+`"`)
	case EvExpire:
		d.cross(x, d.serverY, tsRefused)
		d.text(x+8, d.serverY-10, e.Client+"'s "+cmp.Or(expiryWords[d.rep.Service], "lock expired"), `font-size="10" fill="`+tsRefused+`" class="expiry"`)
		switch {
		case before.believed:
			// Where the lock ends for the server; the client's belief
			// goes on, drawn dashed, until something tells it.
			fmt.Fprintf(&d.b, `<line class="belief-ends" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"/>`, x, y-12, x, y+12, tsRefused)
			d.text(x+4, y+22, "lock lost; it does not know", `font-size="10" fill="`+tsRefused+`"`)
		case before.waiting:
			d.text(x+4, y+22, "out of the queue", `font-size="10" fill="`+tsRefused+`"`)
		}
	case EvPause:
		d.text(x+3, y-14, "pause", `font-size="10" fill="#616161"`)
	case EvResume:
		d.text(x+3, y-14, "resume", `font-size="10" fill="#616161"`)
	case EvWrite, EvFenced:
		d.write(e, x, y)
	case EvWake:
		// Its notifications are drawn as they are delivered.
	case EvDeadlock:
		// The server's detector ends the wait: its error, from the server
		// to the client it aborted.
		d.lockWaitEnds(e.Client, x, y)
		d.arrow(x-6, d.serverY, x, y, tsRefused, "")
		d.cross(x, y, tsRefused)
		said, _, _ := strings.Cut(e.Text, ":")
		d.text(x+8, y+16, said+": "+e.Client+"'s transaction aborted", `font-size="10" fill="`+tsRefused+`" class="abort"`)
	default:
		d.note(x, y, e.Event)
	}
}

// waitsFor draws a wait on one of several locks a client takes: whom it
// waits for on which lock (PostgreSQL's second row), as a dotted line to
// the holder's lane, so that a deadlock's two waits draw its cycle.
func (d *timeSpace) waitsFor(e Event, x, y float64) {
	d.lockWait[e.Client] = x
	label := e.Lock + "? queued"
	if oy, ok := d.laneY[e.On]; ok && e.On != e.Client {
		label = e.Lock + "? waits for " + e.On
		end := oy - 6
		if oy < y {
			end = oy + 6
		}
		d.arrow(x+3, y, x+3, end, tsWaiting, `class="waits-for" stroke-dasharray="2 3"`)
	}
	d.text(x+5, y-8, label, `font-size="10" class="waits"`)
}

// lockWaitEnds draws, under client c's line, its wait on one of its locks
// from where it began to x, where it was granted or ended.
func (d *timeSpace) lockWaitEnds(c string, x, y float64) {
	from, ok := d.lockWait[c]
	if !ok {
		return
	}
	delete(d.lockWait, c)
	fmt.Fprintf(&d.b, `<line class="lock-wait" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3" stroke-dasharray="2 4"/>`, from, y+9, x, y+9, tsWaiting)
}

// note marks at x on a line an event the diagram has no drawing of its
// own for, by its kind; its text is the tooltip.
func (d *timeSpace) note(x, y float64, label string) {
	fmt.Fprintf(&d.b, `<path class="note" d="M%.1f %.1f L%.1f %.1f L%.1f %.1f L%.1f %.1f Z" fill="#616161"/>`, x, y-5, x+5, y, x, y+5, x-5, y)
	d.text(x+6, y-8, label, `font-size="10" fill="#424242"`)
}

// write draws a write to the resource: an arrow and its token, with a
// cross where the resource refused it.
func (d *timeSpace) write(e Event, x, y float64) {
	if d.resourceY == 0 {
		return
	}
	labelY := d.resourceY + 16 + float64(d.nWrites%2)*13
	d.nWrites++
	tok := "no token"
	if e.Token != 0 {
		tok = "token " + d.token(e.Token)
	}
	if e.Event == EvFenced {
		d.arrow(x-8, y, x, d.resourceY, tsRefused, "")
		d.cross(x, d.resourceY, tsRefused)
		d.text(x+8, labelY, "write, "+tok+": refused", `font-size="10" fill="`+tsRefused+`" class="refused"`)
		return
	}
	d.arrow(x-8, y, x, d.resourceY, tsInk, "")
	d.text(x+4, labelY, "write, "+tok+": ok", `font-size="10" class="write"`)
}

// violations shades each interval in which two clients acted as the
// holder, across every lane.
func (d *timeSpace) violations() {
	d.b.WriteString(`<g class="violations">` + "\n")
	for _, v := range d.rep.Violations {
		if len(v.Steps) == 0 {
			continue
		}
		// Shaded as far as the steps are recorded.
		first, last := max(v.Steps[0], 1), min(v.Steps[len(v.Steps)-1], len(d.xs)-1)
		if first > last {
			continue
		}
		x1, x2 := d.xs[first], d.xs[last]
		if x2-x1 < 8 {
			x1, x2 = x1-4, x1+4
		}
		bottom := d.height - 50
		fmt.Fprintf(&d.b, `<rect class="violation" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.16" stroke="%s" stroke-opacity="0.5"><title>%s</title></rect>`+"\n",
			x1, d.serverY-44, x2-x1, bottom-d.serverY+44, tsViolate, tsViolate, esc(v.Message))
		d.text(x1+4, d.serverY-32, fmt.Sprintf("%s: %s", v.Kind, strings.Join(v.Clients, " and ")+" both act as holder"), `font-size="10" fill="`+tsRefused+`"`)
	}
	d.b.WriteString("</g>\n")
}

// axis labels every step's end with its number and the run's clock.
func (d *timeSpace) axis() {
	y := d.height - 36
	d.b.WriteString(`<g class="axis">` + "\n")
	fmt.Fprintf(&d.b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#9e9e9e"/>`, tsLeft, y, d.end, y)
	d.text(12, y+14, "step / run's clock", `font-size="10" fill="#616161"`)
	for k, st := range d.rep.Steps {
		x := d.xs[k+1]
		fmt.Fprintf(&d.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/>`, x, d.serverY-20, x, y+4)
		d.text(x-4, y+14, fmt.Sprint(st.Step), `font-size="10"`)
		d.text(x-10, y+26, fmt.Sprintf("%.1fs", float64(st.ClockMs)/1000), `font-size="9" fill="#616161"`)
	}
	d.b.WriteString("</g>\n")
}

func (d *timeSpace) legend(y float64) {
	d.b.WriteString(`<g class="legend">` + "\n")
	items := []struct{ shape, label string }{
		{fmt.Sprintf(`<rect x="0" y="-3" width="28" height="6" fill="%s"/>`, tsHeld), "holds the lock (the server agrees)"},
		{fmt.Sprintf(`<rect x="0" y="-3" width="28" height="6" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="6 3"/>`, tsBelieved), "believes it holds; the server no longer does"},
		{fmt.Sprintf(`<line x1="0" y1="0" x2="28" y2="0" stroke="%s" stroke-width="3" stroke-dasharray="2 4"/>`, tsWaiting), "waits in the queue"},
		{fmt.Sprintf(`<rect x="0" y="-10" width="28" height="20" fill="%s" fill-opacity="0.55"/>`, tsPause), "paused (a GC pause: sends nothing)"},
		{fmt.Sprintf(`<path d="M6 -6 L22 6 M6 6 L22 -6" stroke="%s" stroke-width="2.5"/>`, tsRefused), "expiry on the server, a crash, or a refused write"},
		{fmt.Sprintf(`<rect x="0" y="-8" width="28" height="16" fill="%s" fill-opacity="0.16" stroke="%s" stroke-opacity="0.5"/>`, tsViolate, tsViolate), "two clients act as the holder (a safety violation)"},
		{`<line x1="0" y1="0" x2="28" y2="0" stroke="#212121" stroke-width="1.5"/>`, "a request, a release or a write (arrow)"},
		{fmt.Sprintf(`<line x1="0" y1="0" x2="28" y2="0" stroke="%s" stroke-width="1.5" stroke-dasharray="3 3"/>`, tsWaiting), "a watch notification"},
	}
	for i, it := range items {
		x, row := 16+float64(i%2)*460, y+float64(i/2)*tsLegendRow
		fmt.Fprintf(&d.b, `<g transform="translate(%.0f %.0f)">%s</g>`, x, row, it.shape)
		d.text(x+36, row+4, it.label, `font-size="11"`)
	}
	d.b.WriteString("</g>\n")
}

func (d *timeSpace) text(x, y float64, s, attrs string) {
	fmt.Fprintf(&d.b, `<text x="%.1f" y="%.1f" %s>%s</text>`, x, y, attrs, esc(s))
}

// arrow is a message from (x1, y1) to (x2, y2), its head drawn as a path
// so the file needs no marker definitions.
func (d *timeSpace) arrow(x1, y1, x2, y2 float64, colour, attrs string) {
	fmt.Fprintf(&d.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" %s/>`, x1, y1, x2, y2, colour, attrs)
	// The head: two short strokes back from the tip, along the line.
	dx, dy := x2-x1, y2-y1
	n := max(1e-9, math.Hypot(dx, dy))
	ux, uy := dx/n, dy/n
	const l, w = 8.0, 4.0
	fmt.Fprintf(&d.b, `<path d="M%.1f %.1f L%.1f %.1f L%.1f %.1f Z" fill="%s"/>`,
		x2, y2, x2-l*ux+w*uy, y2-l*uy-w*ux, x2-l*ux-w*uy, y2-l*uy+w*ux, colour)
}

func (d *timeSpace) cross(x, y float64, colour string) {
	fmt.Fprintf(&d.b, `<path class="cross" d="M%.1f %.1f L%.1f %.1f M%.1f %.1f L%.1f %.1f" stroke="%s" stroke-width="2.5"/>`,
		x-6, y-6, x+6, y+6, x-6, y+6, x+6, y-6, colour)
}

func esc(s string) string { return html.EscapeString(s) }
