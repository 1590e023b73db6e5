package zklocal

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zklockviz/zklockviz/localproc"
)

// Ensemble is a ZooKeeper quorum of loopback members, each with its own
// temporary directory. zktest adds what tests ask of it (its addresses,
// its leader).
type Ensemble struct {
	members []*Server
}

// StartEnsemble launches n members (myid 1..n) and waits until every one of
// them has joined the quorum as leader or follower. ctx bounds the startup
// only.
func StartEnsemble(ctx context.Context, n int, opts Options) (*Ensemble, error) {
	if n < 1 {
		return nil, fmt.Errorf("zklocal: ensemble size %d, need at least 1", n)
	}
	opts, dist, err := opts.prepare()
	if err != nil {
		return nil, err
	}
	return localproc.Launch(ctx, func(context.Context) (*Ensemble, error) {
		return newEnsemble(dist, opts, n)
	})
}

func newEnsemble(dist distribution, opts Options, n int) (*Ensemble, error) {
	ports, err := localproc.FreePorts(4 * n)
	if err != nil {
		return nil, err
	}
	e := &Ensemble{}
	for i := range n {
		e.members = append(e.members, &Server{
			id:           i + 1,
			clientPort:   ports[4*i],
			adminPort:    ports[4*i+1],
			peerPort:     ports[4*i+2],
			electionPort: ports[4*i+3],
			dist:         dist,
			opts:         opts,
		})
	}
	for i, m := range e.members {
		// Each member's own directory, so each is reaped on its own.
		if err := m.init(fmt.Sprintf("zklocal-ensemble-zk%d", m.id), fmt.Sprintf("zk%d: ", m.id), e.members); err != nil {
			e.members = e.members[:i]
			return nil, errors.Join(err, e.Close())
		}
	}
	return e, nil
}

// Members returns the servers in myid order (index i has myid i+1).
func (e *Ensemble) Members() []*Server { return e.members }

// Start launches every stopped member and waits until all members serve.
// Restarting members one at a time with Server.Start only works while the
// others still form a quorum; this starts them together.
func (e *Ensemble) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for _, m := range e.members {
		wg.Go(func() {
			if err := m.Start(ctx); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
					// One member dying means the others may never
					// reach a quorum; stop waiting for them.
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// Close stops every member (in parallel) and removes their directories.
func (e *Ensemble) Close() error {
	errs := make([]error, len(e.members))
	var wg sync.WaitGroup
	for i, m := range e.members {
		wg.Go(func() { errs[i] = m.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
