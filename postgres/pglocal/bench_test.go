package pglocal

import (
	"context"
	"testing"

	"github.com/zklockviz/zklockviz/localproc/proctest"
)

// BenchmarkStart is start-to-ready of a server when the spare copy of the
// template is ready, as for every classroom run after the first: the
// postmaster's start and the first session.
func BenchmarkStart(b *testing.B) {
	benchStart(b, clusters.settle)
}

// BenchmarkStartBackToBack starts servers one after another with no pause,
// so each waits for the copy the previous one began: bound by the disk.
func BenchmarkStartBackToBack(b *testing.B) {
	benchStart(b, func() {})
}

func benchStart(b *testing.B, before func()) {
	// The first Start runs initdb; it is not what is measured.
	if s, err := Start(context.Background(), Options{}); err == nil {
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	proctest.BenchStartAfter(b, ErrNotInstalled, before, func(ctx context.Context) ([]*Server, error) {
		s, err := Start(ctx, Options{})
		return []*Server{s}, err
	})
}

// settle waits for the template and a spare being made, if any.
func (p *pool) settle() {
	p.mu.Lock()
	making := p.making
	p.mu.Unlock()
	if making != nil {
		<-making
	}
	p.mu.Lock()
	filling := p.filling
	p.mu.Unlock()
	if filling != nil {
		<-filling
	}
}
