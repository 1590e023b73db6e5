package labsvg

import (
	"bytes"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/simulator/timespacetest"
)

// TestTimeSpace: a lab run is drawn by the classroom's drawing, one lane
// per client (c2 before c10), its grants with their tokens, the pause, the
// expiry the server's grant to another implies, the writes taken and
// refused, the kill, and the two believers shaded.
func TestTimeSpace(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	events := []lab.Event{
		{At: at(0), Client: "c10", Kind: lab.Started}, {At: at(0), Client: "c2", Kind: lab.Started},
		{At: at(1), Client: "c2", Kind: lab.Requested}, {At: at(2), Client: "c2", Kind: lab.Acquired, Token: 11},
		{At: at(3), Client: "c10", Kind: lab.Requested},
		{At: at(10), Client: "c2", Kind: lab.Paused},
		{At: at(1500), Client: "c10", Kind: lab.Acquired, Token: 12},
		{At: at(1510), Client: "c10", Kind: lab.Wrote, From: 0, To: 1, Token: 12},
		{At: at(2600), Client: "c2", Kind: lab.Resumed},
		{At: at(2610), Client: "c2", Kind: lab.Refused, From: 0, To: 1, Token: 11},
		{At: at(2620), Client: "c2", Kind: lab.Lost},
		{At: at(2700), Client: "c10", Kind: lab.Killed},
		{At: at(2800), Client: lab.Server, Kind: lab.ServerDown},
	}
	rep := lab.Check(events, 1, at(3000))
	if len(rep.Overlaps) != 1 {
		t.Fatalf("the checker found %d overlaps, want 1: %+v", len(rep.Overlaps), rep.Overlaps)
	}
	var b bytes.Buffer
	if err := WriteTimeSpace(&b, events, rep, Drawn{Service: "zookeeper", Title: "lab on ZooKeeper, seed 1", Fencing: true}); err != nil {
		t.Fatal(err)
	}
	d, err := timespacetest.Parse(b.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if got := d.LanesOf("client"); !slices.Equal(got, []string{"c2", "c10"}) {
		t.Errorf("client lanes %v, want [c2 c10]", got)
	}
	if len(d.LanesOf("server")) != 1 || len(d.LanesOf("resource")) != 1 {
		t.Errorf("lanes %+v: want one server and one resource lane", d.Lanes)
	}
	// A pause and a write count twice: the event's group and its span or
	// label share the class.
	for _, tc := range []struct {
		mark string
		want int
	}{{"grant", 2}, {"pause", 2}, {"expiry", 1}, {"believed", 1}, {"refused", 1}, {"write", 2}, {"violation", 1}, {"crash", 1}, {"lost", 1}} {
		if got := d.Marks[tc.mark]; got != tc.want {
			t.Errorf("%d marks %q, want %d", got, tc.mark, tc.want)
		}
	}
	for _, re := range []string{`^granted, token 11$`, `^granted, token 12$`, `^write, token 11: refused$`, `^c2's session expired$`, `^server down$`, `^verdict: 1 two-believer moments`} {
		if len(d.Matching(regexp.MustCompile(re))) == 0 {
			t.Errorf("no label matches %s in %q", re, d.Texts)
		}
	}
}
