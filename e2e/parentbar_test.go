package e2e

import (
	"testing"

	"github.com/zklockviz/zklockviz/third_party/zk"
)

// An N-holder lock's standbys each watch all the children: the parent bar
// says it is a herd and counts the whole queue's standbys, though the lane
// draws a window of it.
func TestParentBarCountsTheWholeHerd(t *testing.T) {
	need(t)
	const path = "/e2e/nheld"
	const n = 200
	admin := connect(t)
	ensurePath(t, admin, path)
	ops := make([]any, 0, n)
	for range n {
		ops = append(ops, &zk.CreateRequest{Path: path + "/guid-lock-", Flags: zk.FlagEphemeral | zk.FlagSequence, Acl: zk.WorldACL(zk.PermAll)})
	}
	if _, err := admin.Multi(ops...); err != nil {
		t.Fatalf("make %d lock nodes under %s: %v", n, path, err)
	}
	srv := startServer(t, "--watch", path, "--leases", path+"=2")
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	bar := `document.querySelector('#lane .parent')`
	tb.until("the bar counts the herd of 198 standbys", bar+` && `+bar+`.dataset.childrenWatchers === '198' && `+
		bar+`.classList.contains('herd') && `+bar+`.querySelector('text').textContent === '`+path+`  · herd: 198 watch all children'`)
	if drawn := eval[int](tb, `document.querySelectorAll('#lane [data-node]').length`); drawn >= n {
		t.Errorf("the lane draws %d of %d nodes: want a window of them", drawn, n)
	}

	// The lock goes: its nodes with their session, then the parent. The
	// bar says so, and no longer counts a herd.
	admin.Close()
	other := connect(t)
	if err := other.Delete(path, -1); err != nil {
		t.Fatalf("delete %s: %v", path, err)
	}
	tb.until("the bar says the lock does not exist", bar+`.dataset.childrenWatchers === '0' && `+
		bar+`.querySelector('text').textContent === '`+path+`  (does not exist)'`)
}
