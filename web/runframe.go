package web

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
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
}

// maxRunTableRows bounds a page of a run's table.
const maxRunTableRows = 200

// parseRunView reads ?parts=1 with the table's ?page=, ?size=, ?q= and the
// selected node ?selected=.
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
	return &runView{table: tq}, nil
}

// sceneState is a run's state that says which locks it shows: the lock the
// live reader follows first, then a scene's (simulator.State).
type sceneState interface {
	LockSnapshots() []lockqueue.Snapshot
}

// runParts is what a parts socket's frame carries beside a run's state.
type runParts struct {
	Names    map[string]string `json:"names,omitempty"`
	Table    string            `json:"table"`
	Node     string            `json:"node"`
	NodeName string            `json:"nodeName"`
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
	x := runParts{NodeName: v.table.Selected, Names: runNames(snaps)}
	var err error
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

// runNames are the lane's labels of the nodes of snaps.
func runNames(snaps []lockqueue.Snapshot) map[string]string {
	out := map[string]string{}
	for i := range snaps {
		maps.Copy(out, newNameLabels(nil, &snaps[i]))
	}
	return out
}

// namedState is a run's state as the classroom's API answers it: with the
// lane's labels of its nodes, which the panel draws at once, before its
// socket brings the same state.
type namedState struct{ state any }

func (n namedState) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(n.state)
	if err != nil {
		return nil, err
	}
	ss, ok := n.state.(sceneState)
	if !ok {
		return b, nil
	}
	x, err := json.Marshal(struct {
		Names map[string]string `json:"names,omitempty"`
	}{runNames(ss.LockSnapshots())})
	if err != nil {
		return nil, err
	}
	return mergeObjects(b, x), nil
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
