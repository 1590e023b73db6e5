package zkwatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/third_party/zk"
)

// go-zookeeper's MultiRead, added in third_party/zk, against a real
// ZooKeeper: each op gets its own answer, a path that is gone fails its op
// alone, many ops go in one request, and none sets a watch.
func TestMultiRead(t *testing.T) {
	s := sharedServer(t)
	c := connect(t, []string{s.Addr()}, 10*time.Second)
	root := fresh("/multiread")
	mkdirs(t, c, root+"/a")
	if _, err := c.Set(root+"/a", []byte("parent data"), -1); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"c1", "c2"} {
		if _, err := c.Create(root+"/a/"+n, []byte("data of "+n), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	mkdirs(t, c, root+"/empty")
	_, aStat, err := c.Get(root + "/a")
	if err != nil {
		t.Fatal(err)
	}

	type want struct {
		children []string
		data     string
		version  int32 // of Stat; -1 for no Stat
		err      error
	}
	tests := []struct {
		name string
		op   zk.ReadOp
		want want
	}{
		{"children", zk.GetChildrenOp(root + "/a"), want{children: []string{"c1", "c2"}, version: -1}},
		{"no children", zk.GetChildrenOp(root + "/empty"), want{children: []string{}, version: -1}},
		{"children of a missing node", zk.GetChildrenOp(root + "/gone"), want{err: zk.ErrNoNode, version: -1}},
		{"data", zk.GetDataOp(root + "/a"), want{data: "parent data", version: aStat.Version}},
		{"data of a child", zk.GetDataOp(root + "/a/c2"), want{data: "data of c2", version: 0}},
		{"data of a missing node", zk.GetDataOp(root + "/a/c3"), want{err: zk.ErrNoNode, version: -1}},
	}
	ops := make([]zk.ReadOp, len(tests))
	for i, tc := range tests {
		ops[i] = tc.op
	}
	res, err := c.MultiRead(ops...)
	if err != nil {
		t.Fatalf("MultiRead: %v", err)
	}
	if len(res) != len(ops) {
		t.Fatalf("%d results for %d ops", len(res), len(ops))
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := res[i]
			if !errors.Is(got.Error, tc.want.err) || (tc.want.err == nil) != (got.Error == nil) {
				t.Fatalf("error %v, want %v", got.Error, tc.want.err)
			}
			slices.Sort(got.Children)
			if tc.want.children != nil && !slices.Equal(got.Children, tc.want.children) {
				t.Errorf("children %q, want %q", got.Children, tc.want.children)
			}
			if string(got.Data) != tc.want.data {
				t.Errorf("data %q, want %q", got.Data, tc.want.data)
			}
			switch {
			case tc.want.version < 0 && got.Stat != nil:
				t.Errorf("a Stat %+v, want none", got.Stat)
			case tc.want.version >= 0 && (got.Stat == nil || got.Stat.Version != tc.want.version || got.Stat.Czxid == 0):
				t.Errorf("Stat %+v, want version %d and a czxid", got.Stat, tc.want.version)
			}
		})
	}

	// Many reads in one request, in order.
	const many = 2000
	big := make([]zk.ReadOp, many)
	for i := range big {
		if i%2 == 0 {
			big[i] = zk.GetChildrenOp(root + "/a")
		} else {
			big[i] = zk.GetDataOp(fmt.Sprintf("%s/a/c%d", root, 1+i%3))
		}
	}
	res, err = c.MultiRead(big...)
	if err != nil {
		t.Fatalf("MultiRead of %d ops: %v", many, err)
	}
	for i, r := range res {
		switch {
		case i%2 == 0 && len(r.Children) != 2:
			t.Fatalf("op %d: children %q, want c1 and c2", i, r.Children)
		case i%2 == 1 && 1+i%3 == 3 && !errors.Is(r.Error, zk.ErrNoNode):
			t.Fatalf("op %d (c3): error %v, want no node", i, r.Error)
		case i%2 == 1 && 1+i%3 != 3 && string(r.Data) != fmt.Sprintf("data of c%d", 1+i%3):
			t.Fatalf("op %d: data %q", i, r.Data)
		}
	}

	// No watch was set: the server lists none for this session.
	reply, err := fourLetter(context.Background(), s.Addr(), "wchc")
	if err != nil {
		t.Fatal(err)
	}
	table, err := parseWchc(reply)
	if err != nil {
		t.Fatal(err)
	}
	if w := table[c.SessionID()]; len(w) > 0 {
		t.Errorf("MultiRead left watches %v", w)
	}

	// A bad path fails the call before anything is sent.
	if _, err := c.MultiRead(zk.GetChildrenOp(root+"/a"), zk.GetDataOp("no-slash")); err == nil {
		t.Errorf("MultiRead with a relative path: no error")
	}
}
