package views

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/a-h/templ"
	"github.com/zklockviz/zklockviz/lockservice"
)

// render is c as HTML.
func render(t *testing.T, c templ.Component) string {
	t.Helper()
	var b strings.Builder
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A run's meters are drawn from its counts in its service's words: each
// bar's end is its own (N(N−1)/2 for the herd's pairs scale), with its
// title for a larger peer's figure left to fill; a service's servers
// (Redlock's masters, the key's time to live) follow in its phrases.
func TestRunHerd(t *testing.T) {
	herd := lockservice.ClassroomWords{PairsScale: true, Meters: []lockservice.Meter{
		{Key: "notifications", Label: "notifications", Help: "watch events delivered"},
		{Key: "exists", Sum: []string{"exists", "getData"}, Label: "exists / getData", Help: "one node", Good: true},
		{Key: "wastedWakeups", Label: "wasted", Help: "woken", GoodAtZero: true},
	}}
	redis := lockservice.ClassroomWords{
		Meters: []lockservice.Meter{{Key: "retries", Label: "failed tries", Help: "polling"}},
		Say: map[string]string{
			"masters.aria": "the key on each of the {n} masters", "master.down": "down", "master.held": "{client} · {left}",
			"master.heldTitle": "{client} has {n} of {of} copies ({majority}), {leftMs} ms left", "master.majority": "a majority", "master.minority": "no majority",
			"ttl.aria": "over {span}: {rises} renewals; held by {holders}", "ttl.caption": "the key's time to live{lease}: ", "ttl.lease": "; lease {lease}",
			"ttl.left": "{holder}'s key, {left} left", "ttl.renewals": " · {n} {n|renewal|renewals}", "ttl.heldBy": " · held by {holders}",
		},
	}
	state := func(js string) RunState {
		var s RunState
		if err := json.Unmarshal([]byte(js), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	five := `"clients":[{"name":"A"},{"name":"B"},{"name":"C"},{"name":"D"},{"name":"E"}]`
	for _, tc := range []struct {
		name      string
		s         RunState
		w         lockservice.ClassroomWords
		want, not []string
	}{
		{"pairs", state(`{"stats":{"notifications":4,"exists":1,"getData":2},"lastRelease":{"notifications":3},` + five + `}`), herd, []string{
			`<div class="meter" data-meter="notifications" data-value="4"><small>notifications</small><b>4</b><small class="last">last release: 3 · watch events delivered</small>`,
			`<div class="bar" data-max="10" data-end="10" title="4 of 10: the bar&#39;s end is N(N−1)/2 = 10: the waiters&#39; wake-ups when each of 5 clients&#39; releases wakes every remaining waiter" data-wider="4 of {max}: the bar&#39;s end is the larger run&#39;s figure, {max}"><i style="width:40%;"></i>`,
			`<div class="meter good" data-meter="exists" data-value="3">`, `<i style="width:30%;">`,
			`<div class="meter good" data-meter="wastedWakeups" data-value="0">`,
		}, []string{"servers"}},
		{"over pairs", state(`{"stats":{"notifications":13},` + five + `}`), herd, []string{
			`<small class="last">watch events delivered</small>`, `data-max="13" data-end="13" title="13 of 13: the bar&#39;s end is the larger run&#39;s figure, 13"`, `width:100%`,
		}, nil},
		{"servers", state(`{"clockMs":2000,"stats":{"retries":1},"servers":{"ttlMs":1000,
			"masters":[{"name":"M1","up":true,"client":"C1","token":"t","leftMs":250},{"name":"M2","up":true,"client":"C1","leftMs":1250},{"name":"M3"}],
			"ttl":[{"atMs":0,"leftMs":1000,"holder":"C1"},{"atMs":500,"leftMs":500,"holder":"C1"},{"atMs":1000,"leftMs":1000,"holder":"C1"},{"atMs":1500}]}}`), redis, []string{
			`<div class="meter" data-meter="retries" data-value="1"><small>failed tries</small><b>1</b><small class="last">polling</small><div class="bar" data-max="1" data-end="1" title="1 of 1, the largest run&#39;s figure" data-wider="1 of {max}, the largest run&#39;s figure"><i style="width:100%;">`,
			`<div class="masters" data-masters="3" role="list" aria-label="the key on each of the 3 masters">`,
			`data-master="M1" data-up="true" data-client="C1" class="master held majority" title="C1 has 2 of 3 copies (a majority), 250 ms left"><strong>M1</strong><span class="who">C1 · 0.3s</span><div class="bar"><i style="width:25%;">`,
			`<span class="who">C1 · 1.3s</span><div class="bar"><i style="width:100%;">`,
			`data-master="M3" data-up="false" data-client="" class="master down" title="master.downTitle"><strong>M3</strong><span class="who">down</span><div class="bar"><i></i>`,
			`<svg viewBox="0 0 600 64" preserveAspectRatio="none" role="img" aria-label="over 2.0s: 1 renewals; held by C1" data-points="4" data-rises="1">`,
			`<line class="floor" x1="0" x2="600" y1="60.0" y2="60.0"></line>`,
			`<polyline class="held" points="0.0,4.0 150.0,32.0 300.0,4.0" data-holder="C1"></polyline> <circle class="renewal" cx="300.0" cy="4.0" r="2.5"></circle>`,
			`<polyline class="none" points="450.0,60.0" data-holder="">`,
			`<figcaption>the key&#39;s time to live; lease 1.0s: ttl.noKey · 1 renewal · held by C1</figcaption>`,
		}, nil},
	} {
		got := render(t, runHerd(tc.s, tc.w))
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: no %s in\n%s", tc.name, w, got)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: %s in\n%s", tc.name, w, got)
			}
		}
	}
}

// A side-by-side pane's verdict and meters are drawn from the run's: the
// badge with its data, the requests per second and who counted them, and
// no hand-off before the first.
func TestRunSide(t *testing.T) {
	var s RunState
	s.Verdict.Exclusion, s.Verdict.StaleWrite, s.Verdict.Summary = "broken", "accepted", "two held"
	s.Meters.Requests, s.Meters.RequestsFrom, s.Meters.PerSec, s.Meters.Notifications, s.Meters.HandoffMs = 9, "the clients", 1.5, 3, -1
	got := render(t, runSide(s, lockservice.ClassroomWords{}))
	for _, w := range []string{
		`<div class="side-verdict" data-exclusion="broken" data-stale="accepted">✗ two held</div>`,
		`<dd data-meter="server requests/s" title="requests: the clients; per second of the run&#39;s real time">1.5 (9 in all)</dd>`,
		`<dd data-meter="notifications" title="watch events or messages that woke a waiter">3</dd>`, `>–</dd></dl>`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("no %s in\n%s", w, got)
		}
	}
	s.Verdict.Exclusion, s.Meters.HandoffMs = "held", 40
	if got := render(t, runSide(s, lockservice.ClassroomWords{})); !strings.Contains(got, `data-exclusion="held" data-stale="accepted">✓ two held</div>`) || !strings.Contains(got, `>40 ms</dd>`) {
		t.Errorf("held, a hand-off of 40 ms:\n%s", got)
	}
}
