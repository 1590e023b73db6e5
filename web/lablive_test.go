package web

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/lab/word"
)

// wordLab stands in for cmd's runner with zklockviz's word on: two clients
// take turns, and the word's hook tells what zklockviz's reader recorded
// of them: c1's hold released, c2's expired, a node no client told held
// over c2's (a second lane), a gap while the reader lost sight of the
// server, and one mismatch settled.
func wordLab(LabRequest) (func(context.Context, LabHooks) []lab.Outcome, error) {
	return func(ctx context.Context, h LabHooks) []lab.Outcome {
		o := lab.Outcome{Service: "zookeeper", Title: "ZooKeeper", Server: "127.0.0.1:1", Path: "/l"}
		h.Started(o, "zklockviz serve --zk 127.0.0.1:1, lock /l")
		t0 := time.Now().Add(-2 * time.Second)
		at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
		for _, e := range []lab.Event{
			{At: at(0), Client: "c1", Kind: lab.Requested}, {At: at(10), Client: "c1", Kind: lab.Acquired, Holder: "lock-0001"},
			{At: at(20), Client: "c2", Kind: lab.Requested}, {At: at(600), Client: "c1", Kind: lab.Released},
			{At: at(610), Client: "c2", Kind: lab.Acquired, Holder: "lock-0002"}, {At: at(1200), Client: "c2", Kind: lab.Lost},
		} {
			h.Event("zookeeper", e)
		}
		h.Word("zookeeper", word.LiveResult{
			Settled: at(900),
			Holds: []word.RecordedHold{
				{Node: "lock-0001", Start: at(12), End: at(605), How: history.Released},
				{Node: "lock-0002", Start: at(606), End: at(1300), How: history.Expired},
				{Node: "lock-0009", Start: at(700), End: at(800), How: history.Released},
			},
			Gaps: []history.Span{{From: at(1400), To: at(1700), Why: "reconnecting"}},
			Mismatches: []word.Mismatch{{Rule: word.NoGrant, Holder: "lock-0009", At: at(700),
				Message: "recorded holding from 03:00:00.700; no client held by that name then"}},
		})
		<-ctx.Done()
		o.Word = &lab.WordResult{Checked: 2, Mismatches: []lab.Mismatch{
			{Rule: word.NoGrant, Holder: "lock-0009", At: at(700), Message: "recorded holding from 03:00:00.700; no client held by that name then"},
			{Rule: word.End, Client: "c2", Holder: "lock-0002", At: at(1300), Message: "recorded the hold ending at 03:00:01.300"},
		}}
		return []lab.Outcome{o}
	}, nil
}

// The Lab page's live view draws zklockviz's own record under the belief
// lanes, as the server renders it: a lane named zklockviz's record, each
// recorded hold a stretch named by its holder and the client that told
// that name, its end's word in its class and its title; holds that overlap
// on a second lane; the reader's gaps as gaps; and the mismatches settled
// so far, with the first one's words.
func TestLabLiveRecord(t *testing.T) {
	env := newEnv(t, Config{Pages: true, Lab: wordLab})
	req, _ := http.NewRequest(http.MethodPost, env.ts.URL+"/api/v1/lab/runs", strings.NewReader(`{"service":"zookeeper","clients":2,"duration":"30s"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("POST: %v %v", res, err)
	}
	res.Body.Close()
	owner := res.Header.Get(RunOwnerHeader)
	stop := func() {
		req, _ := http.NewRequest(http.MethodPost, env.ts.URL+"/api/v1/lab/runs/1/stop", nil)
		req.Header.Set(RunOwnerHeader, owner)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}
	t.Cleanup(stop)
	live, err := http.Get(env.ts.URL + "/api/v1/lab/runs/1/live")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Body.Close()
	events := sseEvents(live.Body)
	view := until(t, events, func(ev sseEvent) bool { return strings.Contains(ev.data, "lab-record-lane") }).data

	for _, want := range []string{
		`class="lab-record-lane" data-lane="zklockviz&#39;s record"`,
		`class="lab-record-lane" data-lane="zklockviz&#39;s record, 2"`,
		`zklockviz recorded c1 (lock-0001) holding from `,
		`: released</title>`,
		`zklockviz recorded c2 (lock-0002) holding from `,
		`: expired</title>`,
		`zklockviz recorded lock-0009 holding`,
		`zklockviz&#39;s reader had no sight of the lock from `,
		`class="lab-word-mismatches">1</b>`,
		`first: `,
		`no client held by that name then`,
	} {
		if !strings.Contains(view, want) {
			t.Errorf("the live view lacks %q", want)
		}
	}
	rect := func(class, client, holder string) *regexp.Regexp {
		attrs := `class="` + class + `"[^>]*data-holder="` + holder + `"`
		if client != "" {
			attrs += `[^>]*data-client="` + client + `"`
		}
		return regexp.MustCompile(`<rect ` + attrs)
	}
	for _, re := range []*regexp.Regexp{
		rect("lab-record-released", "c1", "lock-0001"), rect("lab-record-expired", "c2", "lock-0002"), rect("lab-record-released", "", "lock-0009"),
		regexp.MustCompile(`<rect class="lab-record-gap"`),
	} {
		if !re.MatchString(view) {
			t.Errorf("the live view has no %s", re)
		}
	}
	// The record lanes are under the clients', the second under the first.
	c2, first, second := strings.Index(view, `data-client="c2" transform`), strings.Index(view, `data-lane="zklockviz&#39;s record"`), strings.Index(view, `data-lane="zklockviz&#39;s record, 2"`)
	if c2 < 0 || first < c2 || second < first {
		t.Errorf("the lanes' order: c2 at %d, the record at %d, its second lane at %d", c2, first, second)
	}
	// lock-0009 overlaps c2's hold: it is on the second lane, alone.
	if i := strings.Index(view, `data-holder="lock-0009"`); i < second {
		t.Errorf("lock-0009 is not on the second lane")
	}

	// Once the run has ended, the count is the check's after it: the
	// verdict, with its first mismatch; the record stays as the run went.
	stop()
	last := until(t, events, func(ev sseEvent) bool { return ev.name == "done" }).data
	for _, want := range []string{"checked after the run: <b class=\"lab-word-mismatches\">2</b>", "the verdict", `data-holder="lock-0001"`} {
		if !strings.Contains(last, want) {
			t.Errorf("the last view lacks %q", want)
		}
	}
}
