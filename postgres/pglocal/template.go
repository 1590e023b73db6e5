package pglocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/zklockviz/zklockviz/localproc"
)

// clusters hands out server directories holding a fresh copy of this
// process's template cluster. Every directory, the template's included, has
// a reaper, so all of them go when the process exits, however it exits.
var clusters pool

type pool struct {
	mu       sync.Mutex
	template *localproc.Dir // initdb's result, made once
	making   chan struct{}  // non-nil while the template is made; closed after
	spare    *localproc.Dir // a copy made ahead of need, or nil
	filling  chan struct{}  // non-nil while a spare is made; closed after
}

// take returns a new server directory with a fresh cluster in data/ and
// starts making the next one. The first call runs initdb straight into the
// server's directory: copying a template made first would add a quarter of
// a second to the first server's start. The template is made after it, in
// the background, by a second initdb; running both at once would make them
// compete for the CPU and slow the first.
func (p *pool) take(ctx context.Context, in install) (*localproc.Dir, error) {
	var tmpl string
	for tmpl == "" {
		p.mu.Lock()
		template, making := p.template, p.making
		if template == nil && making == nil {
			// Takes that come meanwhile wait for the template.
			p.making = make(chan struct{})
		}
		p.mu.Unlock()
		switch {
		case template != nil:
			tmpl = filepath.Join(template.Path(), "data")
		case making == nil:
			return p.first(ctx, in)
		default:
			select {
			case <-making:
			case <-ctx.Done():
				return nil, fmt.Errorf("pglocal: waiting for the template cluster: %w", ctx.Err())
			}
		}
	}
	var dir *localproc.Dir
	var err error
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

// first makes the first server's directory with initdb (p.making is set
// by the caller), and then, in the background, the template and a spare
// copy of it. When either initdb fails, the next take starts over and
// reports its own error.
func (p *pool) first(ctx context.Context, in install) (*localproc.Dir, error) {
	dir, err := initCluster(ctx, in, "pglocal", reaperHook)
	if err != nil {
		p.made(nil)
		return nil, err
	}
	go func() {
		template, err := initCluster(context.Background(), in, "pglocal-template", "")
		p.made(template)
		if err == nil {
			p.refill(in, filepath.Join(template.Path(), "data"))
		}
	}()
	return dir, nil
}

// made ends the making of the template: template is nil when it failed.
func (p *pool) made(template *localproc.Dir) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.template = template
	close(p.making)
	p.making = nil
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

func copyCluster(ctx context.Context, in install, tmpl string) (*localproc.Dir, error) {
	dir, err := localproc.NewDirIn(parentDir(), "pglocal", reaperHook)
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

// initCluster runs initdb into the data/ of a new directory.
func initCluster(ctx context.Context, in install, prefix, onDeath string) (*localproc.Dir, error) {
	dir, err := localproc.NewDirIn(parentDir(), prefix, onDeath)
	if err != nil {
		return nil, err
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
		return nil, errors.Join(err, dir.Remove())
	}
	return dir, nil
}

// memParent is the RAM-backed directory server directories go to when
// parentDir picks it.
const memParent = "/dev/shm"

// memRoom is the free space memParent must have: a cluster is 28 MB, and
// the classroom holds three (server, template, spare); tests hold more.
const memRoom = 1 << 30

// tmpfsMagic is statfs's f_type of a tmpfs (TMPFS_MAGIC in linux/magic.h).
const tmpfsMagic = 0x01021994

// parentDir is where server directories are made: /dev/shm when $TMPDIR
// is not set and /dev/shm is a tmpfs with room, else os.TempDir() ("").
// initdb creates and opens some 5,000 files: on this project's ext4 disks
// that costs about 0.45 s of system time, on a tmpfs 0.12 s, and initdb is
// most of the first server's start. A $TMPDIR that is set wins: the caller
// chose where temporary files go (the tests that look for leftovers do).
// The reapers remove these directories as they do any other. It looks
// again for every directory (two system calls), so a /dev/shm that has
// filled up since is passed over.
func parentDir() string { return chooseParent(os.Getenv("TMPDIR"), memParent) }

// chooseParent is parentDir with $TMPDIR's value and the tmpfs's path given.
func chooseParent(tmpdir, mem string) string {
	if tmpdir != "" {
		return ""
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(mem, &st); err != nil || st.Type != tmpfsMagic ||
		st.Bavail*uint64(st.Bsize) < memRoom {
		return ""
	}
	// Every user may make directories there, as in /tmp.
	if fi, err := os.Stat(mem); err != nil || fi.Mode()&(os.ModeSticky|0o777) != os.ModeSticky|0o777 {
		return ""
	}
	return mem
}
