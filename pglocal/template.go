package pglocal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/zklockviz/zklockviz/localproc"
)

// clusters hands out server directories holding a fresh copy of this
// process's template cluster. Every directory, the template's included, has
// a reaper, so all of them go when the process exits, however it exits.
var clusters pool

type pool struct {
	mu       sync.Mutex
	template *localproc.Dir // initdb's result, made once
	spare    *localproc.Dir // a copy made ahead of need, or nil
	filling  chan struct{}  // non-nil while a spare is made; closed after
}

// take returns a new server directory with the cluster in data/, made by
// initdb on the first call, and starts making the next one.
func (p *pool) take(ctx context.Context, in install) (*localproc.Dir, error) {
	tmpl, err := p.templateData(ctx, in)
	if err != nil {
		return nil, err
	}
	var dir *localproc.Dir
	for dir == nil {
		p.mu.Lock()
		dir, p.spare = p.spare, nil
		filling := p.filling
		p.mu.Unlock()
		if dir != nil {
			break
		}
		if filling == nil {
			if dir, err = copyCluster(ctx, in, tmpl); err != nil {
				return nil, err
			}
			break
		}
		// Waiting for the copy under way is quicker than a second
		// copy competing with it for the disk.
		select {
		case <-filling:
		case <-ctx.Done():
			return nil, fmt.Errorf("pglocal: waiting for a copy of the template: %w", ctx.Err())
		}
	}
	p.refill(in, tmpl)
	return dir, nil
}

// refill makes a spare copy in the background unless there is one already.
func (p *pool) refill(in install, tmpl string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spare != nil || p.filling != nil {
		return
	}
	done := make(chan struct{})
	p.filling = done
	go func() {
		dir, err := copyCluster(context.Background(), in, tmpl)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.filling = nil
		// On failure a waiting take copies in the foreground and reports
		// the error itself.
		if err == nil {
			p.spare = dir
		}
		close(done)
	}()
}

// settle waits for a spare being made, if any.
func (p *pool) settle() {
	p.mu.Lock()
	filling := p.filling
	p.mu.Unlock()
	if filling != nil {
		<-filling
	}
}

func copyCluster(ctx context.Context, in install, tmpl string) (*localproc.Dir, error) {
	dir, err := localproc.NewDir("pglocal", reaperHook)
	if err != nil {
		return nil, err
	}
	err = in.chown(dir.Path())
	if err == nil {
		// As root, cp -a keeps the template's owner (postgres) and its
		// 0700 mode, which postgres insists on.
		err = localproc.Run(ctx, localproc.Command{Path: "cp", Args: []string{"-a", tmpl, filepath.Join(dir.Path(), "data")}})
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("pglocal: copy template: %w", err), dir.Remove())
	}
	return dir, nil
}

func (p *pool) templateData(ctx context.Context, in install) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.template != nil {
		return filepath.Join(p.template.Path(), "data"), nil
	}
	dir, err := localproc.NewDir("pglocal-template", "")
	if err != nil {
		return "", err
	}
	data := filepath.Join(dir.Path(), "data")
	err = in.chown(dir.Path())
	if err == nil {
		c := in.command("initdb", "-D", data, "-U", User, "-A", "trust",
			"--no-sync", "--no-instructions", "-E", "UTF8", "--no-locale",
			// 1 MB WAL segments instead of 16: less to copy per server.
			"--wal-segsize=1")
		c.Dir = dir.Path() // the postgres user may not be able to enter ours
		if err = localproc.Run(ctx, c); err != nil {
			err = fmt.Errorf("pglocal: initdb (the %s user must be able to enter every parent of %s): %w", User, dir.Path(), err)
		}
	}
	if err != nil {
		return "", errors.Join(err, dir.Remove())
	}
	p.template = dir
	return data, nil
}
