package localproc

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// reaperScript waits for end-of-file on stdin, which comes when the write end
// of the pipe closes: at Dir.Remove, or when the kernel closes this process's
// files because it died, however it died (a pipe's write end has no other
// holder: os.Pipe makes it close-on-exec). Then it runs the owner's hook and
// removes the directory, retrying for a few seconds because a dying child
// (PostgreSQL backends) may still be creating files in it.
//
// It ignores the signals a terminal sends so Ctrl-C or a hang-up cannot kill
// it before it has done its one job; it runs in its own process group anyway.
const reaperScript = `trap '' INT HUP QUIT
read -r _ || :
d=$1
eval "$2"
i=0
while [ -e "$d" ] && [ $i -lt 100 ]; do
	rm -rf -- "$d" 2>/dev/null
	[ -e "$d" ] && sleep 0.1
	i=$((i+1))
done
`

// Dir is a temporary directory that is removed by Remove, or by a reaper
// process if this process dies first.
type Dir struct {
	path string

	mu     sync.Mutex
	pipe   *os.File      // write end; nil once removed
	reaped chan struct{} // closed when the reaper has exited
}

// NewDir creates a directory under os.TempDir() named prefix-RANDOM and
// starts its reaper. onDeath is a shell snippet the reaper runs, with $d set
// to the directory, before removing it (for what a SIGKILLed server leaves
// outside its directory); "" for none.
func NewDir(prefix, onDeath string) (*Dir, error) { return NewDirIn("", prefix, onDeath) }

// NewDirIn is NewDir under parent instead of os.TempDir() ("" for
// os.TempDir()).
func NewDirIn(parent, prefix, onDeath string) (*Dir, error) {
	path, err := os.MkdirTemp(parent, prefix+"-*")
	if err != nil {
		return nil, fmt.Errorf("localproc: create temp dir: %w", err)
	}
	if strings.ContainsAny(path, "\n") {
		os.RemoveAll(path)
		return nil, fmt.Errorf("localproc: temp dir %q has a newline in its name", path)
	}
	d := &Dir{path: path, reaped: make(chan struct{})}
	if err := d.startReaper(onDeath); err != nil {
		os.RemoveAll(path)
		return nil, err
	}
	return d, nil
}

func (d *Dir) startReaper(onDeath string) error {
	r, w, err := os.Pipe() // both ends close-on-exec: no other child inherits w
	if err != nil {
		return fmt.Errorf("localproc: reaper pipe: %w", err)
	}
	defer r.Close()
	onDeath = cmp.Or(onDeath, ":")
	cmd := exec.Command("/bin/sh", "-c", reaperScript, "reaper", d.path, onDeath)
	cmd.Stdin = r
	// No Pdeathsig: the reaper must outlive us. Its own group keeps it out
	// of the terminal's foreground group, away from Ctrl-C.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("localproc: start reaper for %s: %w", d.path, err)
	}
	d.pipe = w
	go func() {
		_ = cmd.Wait()
		close(d.reaped)
	}()
	return nil
}

// Path is the directory's absolute path.
func (d *Dir) Path() string { return d.path }

// Remove has the reaper run its hook and remove the directory now, waits
// for it, and makes sure the directory is gone. The caller must have stopped
// every process that writes into it. Removing twice is a no-op.
func (d *Dir) Remove() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pipe == nil {
		return nil
	}
	// One path for both ends of a directory's life: the hook runs after a
	// crash of ours and after a Kill of the server alike.
	err := d.pipe.Close()
	d.pipe = nil
	<-d.reaped
	if rerr := os.RemoveAll(d.path); rerr != nil {
		err = errors.Join(err, fmt.Errorf("localproc: remove %s: %w", d.path, rerr))
	}
	return err
}
