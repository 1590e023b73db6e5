package lab

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name     string
		events   []Event
		final    int64
		overlaps int
		lost     int
		refused  int
	}{
		{"one after the other", []Event{
			{At: at(0), Client: "c1", Kind: Acquired}, {At: at(5), Client: "c1", Kind: Wrote, From: 0, To: 1},
			{At: at(10), Client: "c1", Kind: Released}, {At: at(11), Client: "c2", Kind: Acquired},
			{At: at(15), Client: "c2", Kind: Wrote, From: 1, To: 2}, {At: at(20), Client: "c2", Kind: Released},
		}, 2, 0, 0, 0},
		{"a pause does not end a belief: two believers, one lost update", []Event{
			{At: at(0), Client: "c1", Kind: Acquired}, {At: at(1), Client: "c1", Kind: Paused},
			{At: at(50), Client: "c2", Kind: Acquired}, {At: at(55), Client: "c2", Kind: Wrote, From: 0, To: 1},
			{At: at(60), Client: "c1", Kind: Resumed}, {At: at(61), Client: "c1", Kind: Wrote, From: 0, To: 1},
			{At: at(62), Client: "c1", Kind: Lost}, {At: at(70), Client: "c2", Kind: Released},
		}, 1, 1, 1, 0},
		{"fencing refused the stale write", []Event{
			{At: at(0), Client: "c1", Kind: Acquired, Token: 1}, {At: at(50), Client: "c2", Kind: Acquired, Token: 2},
			{At: at(55), Client: "c2", Kind: Wrote, From: 0, To: 1, Token: 2}, {At: at(61), Client: "c1", Kind: Refused, Token: 1},
			{At: at(62), Client: "c1", Kind: Lost}, {At: at(70), Client: "c2", Kind: Released},
		}, 1, 1, 0, 1},
		{"a kill ends a belief", []Event{
			{At: at(0), Client: "c1", Kind: Acquired}, {At: at(5), Client: "c1", Kind: Killed},
			{At: at(50), Client: "c2", Kind: Acquired},
		}, 0, 0, 0, 0},
		{"a belief still open at the end", []Event{
			{At: at(0), Client: "c1", Kind: Acquired}, {At: at(50), Client: "c2", Kind: Acquired},
		}, 0, 1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.events, tc.final, at(100))
			if len(r.Overlaps) != tc.overlaps || r.LostUpdates != tc.lost || r.Refused != tc.refused {
				t.Errorf("overlaps %v, lost %d, refused %d; want %d, %d, %d", r.Overlaps, r.LostUpdates, r.Refused, tc.overlaps, tc.lost, tc.refused)
			}
			if len(r.Stretches) != min(1, tc.overlaps) {
				t.Errorf("stretches %+v for %d overlaps", r.Stretches, tc.overlaps)
			}
		})
	}
}

// With fencing the resource refuses a token older than one it took, and
// keeps its value; without, it takes every write.
func TestResourceFencing(t *testing.T) {
	for _, fencing := range []bool{true, false} {
		res := NewResource(fencing)
		srv := httptest.NewServer(res)
		post := func(body string) int {
			r, err := http.Post(srv.URL, "application/json", bytes.NewBufferString(body))
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			return r.StatusCode
		}
		post(`{"client":"c2","token":7,"From":0,"To":1}`)
		code := post(`{"client":"c1","token":3,"From":0,"To":1}`)
		if want := map[bool]int{true: 409, false: 200}[fencing]; code != want {
			t.Errorf("fencing %v: stale write answered %d, want %d", fencing, code, want)
		}
		if ws := res.Writes(); len(ws) != 2 || ws[1].Refused != fencing {
			t.Errorf("fencing %v: writes %+v", fencing, ws)
		}
		if code := post(`not json`); code != 400 {
			t.Errorf("junk answered %d, want 400", code)
		}
		srv.Close()
	}
}

// A paused holder's one belief, over which another client held three
// times, is one stretch naming it, with three overlaps.
func TestStretches(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	events := []Event{{At: at(0), Client: "c1", Kind: Acquired, Token: 5}, {At: at(1), Client: "c1", Kind: Paused}}
	for i := range 3 {
		events = append(events, Event{At: at(100 + 30*i), Client: "c2", Kind: Acquired}, Event{At: at(120 + 30*i), Client: "c2", Kind: Released})
	}
	events = append(events, Event{At: at(500), Client: "c1", Kind: Resumed}, Event{At: at(501), Client: "c1", Kind: Lost})
	r := Check(events, 0, at(600))
	if len(r.Stretches) != 1 {
		t.Fatalf("stretches %+v", r.Stretches)
	}
	if s := r.Stretches[0]; s.Client != "c1" || s.Token != 5 || s.Overlaps != 3 || len(s.Others) != 1 || s.To != at(501) {
		t.Errorf("stretch %+v", s)
	}
}

// A fault strikes a client that believes it holds when one does: the
// holders as the events tell them, every client when none holds.
func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []Event
		last   string // the last fault's client
		want   []string
	}{
		{"none held yet", nil, "", []string{"c1", "c2", "c3"}},
		{"c2 holds", []Event{{Client: "c2", Kind: Acquired}}, "", []string{"c2"}},
		{"c2 let go", []Event{{Client: "c2", Kind: Acquired}, {Client: "c2", Kind: Released}}, "", []string{"c1", "c2", "c3"}},
		{"two believers", []Event{{Client: "c3", Kind: Acquired}, {Client: "c1", Kind: Acquired}}, "", []string{"c1", "c3"}},
		{"two believers, c3 just resumed", []Event{{Client: "c3", Kind: Acquired}, {Client: "c1", Kind: Acquired}}, "c3", []string{"c1"}},
		{"c2 alone believes, struck last", []Event{{Client: "c2", Kind: Acquired}}, "c2", []string{"c2"}},
		{"one lost, one killed", []Event{
			{Client: "c3", Kind: Acquired}, {Client: "c1", Kind: Acquired}, {Client: "c2", Kind: Acquired},
			{Client: "c3", Kind: Lost}, {Client: "c1", Kind: Killed},
		}, "c1", []string{"c2"}},
	} {
		r := &runner{cfg: Config{Clients: 3}}
		for _, e := range tc.events {
			r.record(e)
		}
		if got := r.targets(tc.last); !slices.Equal(got, tc.want) {
			t.Errorf("%s: targets %v, want %v", tc.name, got, tc.want)
		}
	}
}
