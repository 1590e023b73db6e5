package zkwatch

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// RemovePath stops a configured or added lock parent, after which it is
// forgotten and publishes nothing more; a discovered one stays, and a path
// not watched is an error.
func TestRemovePath(t *testing.T) {
	s := sharedServer(t)
	c := connect(t, []string{s.Addr()}, 10*time.Second)
	root := fresh("/remove")
	configured, added, apps := root+"/configured", root+"/added", root+"/apps"
	found := apps + "/svc/lock"
	for _, p := range []string{configured, added, found} {
		mkdirs(t, c, p)
		if _, err := c.Create(p+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
			t.Fatal(err)
		}
	}
	w, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{configured}, Prefixes: []string{apps}})
	if err := w.AddPath(added); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{configured, added, found} {
		rec.wait(t, p, 0, "read, 1 node", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 1 })
	}

	tests := []struct {
		path string
		want error // nil: removed
	}{
		{configured, nil},
		{added, nil},
		{added, ErrNotWatched},
		{root + "/never", ErrNotWatched},
		{found, ErrDiscovered},
	}
	for _, tc := range tests {
		err := w.RemovePath(tc.path)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("RemovePath(%s) = %v, want %v", tc.path, err, tc.want)
		}
	}
	if err := w.RemovePath("no-slash"); err == nil {
		t.Error("RemovePath of an invalid path: no error")
	}
	if got, want := w.Paths(), []string{found}; !slices.Equal(got, want) {
		t.Errorf("Paths() = %v, want %v", got, want)
	}
	for _, p := range []string{configured, added} {
		n := rec.forgotten(t, p)
		if _, ok := w.Snapshot(p); ok {
			t.Errorf("%s: a snapshot after RemovePath", p)
		}
		// Its children change; the server's old watch fires unanswered. A
		// change to the discovered lock after it, on the same session,
		// shows when that event has come and gone.
		if _, err := c.Create(p+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
			t.Fatal(err)
		}
		mark := rec.mark(found)
		if _, err := c.Create(found+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
			t.Fatal(err)
		}
		rec.wait(t, found, mark, "one more node", func(s lockqueue.Snapshot) bool { return len(s.Nodes) > 1 })
		if got := len(rec.all(p)); got != n {
			t.Errorf("%s: %d snapshots published after RemovePath", p, got-n)
		}
	}
}
