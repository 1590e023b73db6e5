package zksim

import (
	"strings"
	"sync"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

type published struct {
	mu    sync.Mutex
	last  map[string]lockqueue.Snapshot
	gone  []string
	count int
}

func (p *published) publish(s lockqueue.Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[s.Path] = s
	p.count++
}

func (p *published) remove(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gone = append(p.gone, path)
}

func (p *published) get(path string) (lockqueue.Snapshot, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.last[path]
	return s, ok
}

func clientNamed(s simulator.State, name string) simulator.ClientInfo {
	for _, c := range s.Clients {
		if c.Name == name {
			return c
		}
	}
	return simulator.ClientInfo{}
}

// plan expands sc's steps for n clients and dry-runs them with ZooKeeper's
// rules, as a Manager does with the backend's DryRun.
func plan(sc *simulator.Scenario, n int) ([]simulator.Action, error) {
	return sc.PlanWith(n, func(p []simulator.Action) error { return (&Backend{}).DryRun(sc, p) })
}

// parseSteps reads "A add-reader, B release".
func parseSteps(s string) []simulator.Action {
	var out []simulator.Action
	for _, part := range strings.Split(s, ",") {
		f := strings.Fields(part)
		out = append(out, simulator.Action{Client: f[0], Action: f[1]})
	}
	return out
}
