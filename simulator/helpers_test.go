package simulator

import (
	"sync"

	"github.com/zklockviz/zklockviz/lockqueue"
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

func clientNamed(s State, name string) ClientInfo {
	for _, c := range s.Clients {
		if c.Name == name {
			return c
		}
	}
	return ClientInfo{}
}
