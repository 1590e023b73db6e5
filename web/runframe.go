package web

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/views"
)

// A classroom panel's socket (/api/v1/sim/runs/{id}/ws?parts=1) carries,
// beside each state of the run, what the panel shows of it in the server's
// words: the run's table (a page of it, views.QueueTable), the selected
// node's details (views.NodeDetailsView) and the lane's name labels of every
// node of the state's locks. The step is the run's, so it is rendered here
// from the state the frame carries; the panel never sends a snapshot back
// to be rendered. A panel that turns the table's page, filters it or
// selects a node opens its socket again on that view.

// runView is what one classroom socket's panel shows beside the state; nil
// for a socket that asked for no parts (the API's scripts).
type runView struct {
	table views.TableQuery
	// services word each snapshot's lock (serviceViewNamed).
	services *lockservice.Registry
	// fit is how many node columns the panel's pane shows at a readable
	// size (?fit=, a fraction: a fold mark is wider than a node): a longer
	// lane is folded (foldRun); 0 draws it whole. mark is how many node
	// columns a fold mark takes as the page draws it (?mark=, 1 if not
	// told): the page knows its layout, the server which nodes to keep.
	fit, mark float64
}

// maxRunTableRows bounds a page of a run's table.
const maxRunTableRows = 200

// parseRunView reads ?parts=1 with the table's ?page=, ?size=, ?q=, the
// selected node ?selected= and the pane's room ?fit=.
func parseRunView(q url.Values) (*runView, error) {
	if !q.Has("parts") {
		return nil, nil
	}
	tq := tableQuery(q)
	if tq.Page < 0 || tq.Size < 0 || len(tq.Filter) > maxFilterLen {
		return nil, errorf(ErrInvalid, "bad table view: want ?page= from 0, ?size= up to %d and ?q= of at most %d bytes", maxRunTableRows, maxFilterLen)
	}
	tq.Size = min(cmp.Or(tq.Size, 50), maxRunTableRows)
	tq.Show = ""
	v := &runView{table: tq}
	if q.Has("fit") {
		fit, err := strconv.ParseFloat(q.Get("fit"), 64)
		if err != nil || !(fit >= 0 && fit <= maxRunFit) {
			return nil, errorf(ErrInvalid, "bad ?fit=%q: want the node columns the pane shows, 0 to %d", q.Get("fit"), maxRunFit)
		}
		v.fit = fit
	}
	v.mark = 1
	if q.Has("mark") {
		mark, err := strconv.ParseFloat(q.Get("mark"), 64)
		if err != nil || !(mark >= 1 && mark <= 10) {
			return nil, errorf(ErrInvalid, "bad ?mark=%q: want the node columns a fold mark takes, 1 to 10", q.Get("mark"))
		}
		v.mark = mark
	}
	return v, nil
}

// sceneState is a run's state that says which locks it shows: the lock the
// live reader follows first, then a scene's (simulator.State).
type sceneState interface {
	LockSnapshots() []lockqueue.Snapshot
	WithLocks(f func(lockqueue.Snapshot) lockqueue.Snapshot) any
}

// drawn is a run's state as a page is sent it: its locks' nodes with what
// their lanes write (views.StampLane).
func drawn(state any) any {
	if ss, ok := state.(sceneState); ok {
		return ss.WithLocks(views.StampLane)
	}
	return state
}

// runParts is what a parts socket's frame carries beside a run's state.
type runParts struct {
	HTML     string `json:"html,omitempty"`
	Table    string `json:"table"`
	Node     string `json:"node"`
	NodeName string `json:"nodeName"`
}

// withRunParts adds v's parts of state to b, state's JSON object; b as it
// is when state shows no lock.
func withRunParts(b []byte, state any, v *runView, now time.Time) ([]byte, error) {
	ss, ok := state.(sceneState)
	if !ok {
		return b, nil
	}
	snaps := ss.LockSnapshots()
	if len(snaps) == 0 {
		return b, nil
	}
	var f runFocus
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("read a run's state: %w", err)
	}
	x := runParts{NodeName: v.table.Selected}
	var err error
	if x.HTML, err = renderString(views.RunParts(f.RunState, classroomWordsOf(v.services, f.Service), snaps)); err != nil {
		return nil, err
	}
	if v.fit > 0 {
		if b, err = withFoldedLane(b, &f, v.fit, v.mark, v.table.Selected); err != nil {
			return nil, err
		}
	}
	first, node := snaps[0], snapshotWith(snaps, v.table.Selected)
	if x.Table, err = renderString(views.QueueTable(views.NewTable(serviceViewNamed(v.services, first.Service), first, v.table, now))); err != nil {
		return nil, err
	}
	if x.Node, err = renderString(views.NodeDetailsView(views.NewNodeDetails(serviceViewNamed(v.services, node.Service), node, v.table.Selected, now))); err != nil {
		return nil, err
	}
	xb, err := json.Marshal(x)
	if err != nil {
		return nil, fmt.Errorf("encode a run's parts: %w", err)
	}
	return mergeObjects(b, xb), nil
}

// namedState is a run's state as the classroom's API answers it: with
// what its card shows of it (views.RunParts), which the panel draws at
// once, before its socket brings the same state.
type namedState struct {
	state    any
	services *lockservice.Registry
}

// named is state as the classroom's API answers it.
func (s *Server) named(state any) namedState { return namedState{state, s.cfg.Services} }

func (n namedState) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(drawn(n.state))
	if err != nil {
		return nil, err
	}
	ss, ok := n.state.(sceneState)
	if !ok {
		return b, nil
	}
	var s views.RunState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read a run's state to render it: %w", err)
	}
	html, err := renderString(views.RunParts(s, classroomWordsOf(n.services, s.Service), ss.LockSnapshots()))
	if err != nil {
		return nil, err
	}
	x, err := json.Marshal(struct {
		HTML string `json:"html"`
	}{html})
	if err != nil {
		return nil, err
	}
	return mergeObjects(b, x), nil
}

// classroomWordsOf are the classroom words of the service a run's state
// names (the default service when it names none), the neutral ones for a
// service that supplies none.
func classroomWordsOf(reg *lockservice.Registry, service string) lockservice.ClassroomWords {
	all := reg.ClassroomWords()
	return all.Services[cmp.Or(service, all.Default)]
}

// snapshotWith is the first of snaps that has a node named name, the first
// of them if none has: a scene's other lock may hold a node the followed
// lock's queue no longer shows (a PostgreSQL row nobody waits for).
func snapshotWith(snaps []lockqueue.Snapshot, name string) lockqueue.Snapshot {
	for _, s := range snaps {
		for i := range s.Nodes {
			if s.Nodes[i].Name == name {
				return s
			}
		}
	}
	return snaps[0]
}

func renderString(c templ.Component) (string, error) {
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		return "", fmt.Errorf("render a run's part: %w", err)
	}
	return buf.String(), nil
}

// A classroom pane beside another (compare, side by side) or on a
// projector is narrow: a long lane scaled into it has labels nobody in the
// hall reads. The panel says how many node columns fit its pane at a
// readable size (?fit=), and a lane longer than that is folded here with
// the lock page's fold (foldTo): the holders, the selected node, the node
// the step acts on, those it notifies, and the first and last nodes, as
// many as fit; the rest are "…" marks that count their nodes and the
// notifications they received. The panel then scales only what still does
// not fit (sim-panel.js's fitLane).

// classroomWholeUpTo: a lane of up to this many nodes is always drawn
// whole (scaled to its pane if need be): a scenario's own queue (LOCK1–LOCK5)
// is its story, and a mark hiding two or three nodes saves no room.
const classroomWholeUpTo = 8

// maxRunFit bounds ?fit=: no pane is wider than this many columns.
const maxRunFit = 1000

// runFocus is a state's facts with its lane, to fold; nodes says which of
// its nodes the step is about.
type runFocus struct {
	frameFacts
	Snapshot json.RawMessage   `json:"snapshot"`
	Locks    []json.RawMessage `json:"locks"`
}

// acted and notified are the lock nodes of the client the step acts on
// and of those it notifies.
func (f *runFocus) nodes() (acted string, notified []string) {
	node := make(map[string]string, len(f.Clients))
	for _, c := range f.Clients {
		node[c.Name] = c.Node
	}
	if f.Action != nil {
		acted = node[f.Action.Client]
	}
	for _, c := range f.woken() {
		notified = append(notified, node[c])
	}
	return acted, notified
}

// foldedLane is a folded lane's snapshot as the panel draws it: the
// snapshot's own fields, the window saying what is folded (as a lock
// page's frame says it, with how many each fold's step notified), and
// where the folded nodes notified this step are, by name, for the
// notifications to run to.
type foldedLane struct {
	Window     *Window        `json:"window"`
	NotifiedAt map[string]int `json:"notifiedAt,omitempty"`
}

// withFoldedLane replaces b's snapshot (state's JSON object, f read from
// it) with its lane folded to fit columns (a fold mark takes mark of them);
// b as it is when the lane fits, or when the state draws a scene of
// several locks (each lane its own).
func withFoldedLane(b []byte, f *runFocus, fit, mark float64, selected string) ([]byte, error) {
	if len(f.Snapshot) == 0 || len(f.Locks) > 0 {
		return b, nil
	}
	var s lockqueue.Snapshot
	if err := json.Unmarshal(f.Snapshot, &s); err != nil {
		return nil, fmt.Errorf("read a run's lane to fold it: %w", err)
	}
	acted, notified := f.nodes()
	folded, lane, ok := foldRun(s, fit, mark, selected, acted, notified)
	if !ok {
		return b, nil
	}
	sb, err := json.Marshal(folded)
	if err != nil {
		return nil, fmt.Errorf("encode a run's folded lane: %w", err)
	}
	lb, err := json.Marshal(lane)
	if err != nil {
		return nil, fmt.Errorf("encode a run's folded lane: %w", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("read a run's state to fold its lane: %w", err)
	}
	obj["snapshot"] = mergeObjects(sb, lb)
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode a run's state with its lane folded: %w", err)
	}
	return out, nil
}

// foldRun folds s's lane to fit columns (a fold mark takes mark of them),
// keeping first the holders, the selected node and the acted one whatever
// the room (the pane scales what then does not fit), then the notified
// ones in queue order, then the nodes from both ends inwards, while they
// fit. ok is false when s is drawn whole.
func foldRun(s lockqueue.Snapshot, fit, mark float64, selected, acted string, notified []string) (lockqueue.Snapshot, foldedLane, bool) {
	n := len(s.Nodes)
	if fit <= 0 || n <= classroomWholeUpTo || float64(n) <= fit {
		return s, foldedLane{}, false
	}
	facts := readWindowFacts(&s)
	keep := make([]bool, n)
	kept := 0
	add := func(i int) {
		if i >= 0 && !keep[i] {
			keep[i] = true
			kept++
		}
	}
	at := func(name string) int {
		if name == "" {
			return -1
		}
		if i, ok := facts.position(s.Nodes, name); ok {
			return i
		}
		return -1
	}
	for _, i := range facts.holders {
		add(i)
	}
	add(at(selected))
	add(at(acted))
	var wanted []int
	woken := map[int]bool{}
	for _, name := range notified {
		if i := at(name); i >= 0 && !woken[i] {
			woken[i] = true
			wanted = append(wanted, i)
		}
	}
	slices.Sort(wanted)
	for k := 0; k <= n-1-k; k++ {
		wanted = append(wanted, k, n-1-k)
	}
	for _, i := range wanted {
		if keep[i] {
			continue
		}
		keep[i] = true
		if laneCols(keep, kept+1, mark) > fit {
			keep[i] = false
			continue
		}
		kept++
	}
	shown := make([]int, 0, kept)
	for i, k := range keep {
		if k {
			shown = append(shown, i)
		}
	}
	w := &Window{Total: n, To: n, Holding: facts.holding}
	folded := foldTo(s, shown, facts, w)
	lane := foldedLane{Window: w}
	w.Notified = make([]int, len(w.Folds))
	for i := range woken {
		if !keep[i] {
			if lane.NotifiedAt == nil {
				lane.NotifiedAt = map[string]int{}
			}
			lane.NotifiedAt[s.Nodes[i].Name] = i
			f, _ := slices.BinarySearchFunc(w.Folds, i, func(f [3]int, i int) int { return cmp.Compare(f[1], i) })
			w.Notified[f]++
		}
	}
	return folded, lane, true
}

// laneCols is how many node columns a lane of the kept nodes (kept of
// them) and its fold marks takes.
func laneCols(keep []bool, kept int, mark float64) float64 {
	marks := 0
	for i, k := range keep {
		if !k && (i == 0 || keep[i-1]) {
			marks++
		}
	}
	return float64(kept) + mark*float64(marks)
}
