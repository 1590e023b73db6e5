package web

import (
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A queue published names first says over the socket how far its nodes'
// data is read, in every frame, deltas too, until it is all read: a page
// must never show a queue still being read as complete.
func TestSocketSaysFilling(t *testing.T) {
	e := newEnv(t, Config{})
	f := gozkFolder("/orders", 20)
	publish := func(filling *lockqueue.Filling) {
		s := f.snapshot()
		s.Filling = filling
		e.hub.Publish(s)
	}
	publish(&lockqueue.Filling{Read: 5, Of: 20})
	v := e.mustDial(t, "/orders")
	steps := []struct {
		name    string
		filling *lockqueue.Filling
		kind    string
	}{
		{"the listing, 5 of 20 read", &lockqueue.Filling{Read: 5, Of: 20}, FrameSnapshot},
		{"more read", &lockqueue.Filling{Read: 12, Of: 20}, FrameDelta},
		{"all read", nil, FrameDelta},
	}
	for i, st := range steps {
		if i > 0 {
			f.kids[i].Data = []byte("read now")
			f.rev++
			publish(st.filling)
		}
		v.next()
		if v.kind != st.kind {
			t.Errorf("%s: sent a %s frame, want %s", st.name, v.kind, st.kind)
		}
		want, _ := e.hub.Latest("/orders")
		sameJSON(t, st.name, v.snap, wireSnapshot(want))
		if (v.snap.Filling == nil) != (st.filling == nil) || st.filling != nil && *v.snap.Filling != *st.filling {
			t.Errorf("%s: the socket's copy says filling %+v, want %+v", st.name, v.snap.Filling, st.filling)
		}
	}
}
