package web

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/views"
)

// The lane's words and name labels are the server's: every page carries
// the words (#lane-words), and POST /parts/lane-names answers
// views.ShortName of each node sent.
func TestLaneWordsAndNames(t *testing.T) {
	ts, _ := partsServer(t, hub.New())

	_, page := pageGet(t, ts.URL+"/sim", nil)
	m := regexp.MustCompile(`(?s)<script id="lane-words" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no #lane-words in the page:\n%s", page)
	}
	var words views.LaneWords
	if err := json.Unmarshal([]byte(m[1]), &words); err != nil {
		t.Fatalf("#lane-words %s: %v", m[1], err)
	}
	if len(words.Modes) != len(views.ModeLabels()) || words.Stalled != views.Stalled || words.Provenance[lockqueue.ByServer] != "confirmed" {
		t.Errorf("#lane-words %+v", words)
	}
	for _, w := range words.Modes {
		if w.Label != views.ModeLabel(w.Mode) {
			t.Errorf("mode %s: %q, want %q", w.Mode, w.Label, views.ModeLabel(w.Mode))
		}
	}

	for _, tc := range []struct {
		name   string
		body   string
		status int
		want   map[string]string
	}{
		{"curator and plain", `[{"name":"_c_8f3a1b2c-1111-2222-3333-444455556666-__READ__0000000003","seq":3},{"name":"W_0000000012","seq":12}]`, http.StatusOK,
			map[string]string{"_c_8f3a1b2c-1111-2222-3333-444455556666-__READ__0000000003": "8f3a…READ#3", "W_0000000012": "W_0000000012"}},
		{"no sequence", `[{"name":"some-foreign-child-with-a-long-name","seq":-1}]`, http.StatusOK,
			map[string]string{"some-foreign-child-with-a-long-name": views.ShortName("some-foreign-child-with-a-long-name", -1)}},
		{"empty", `[]`, http.StatusOK, map[string]string{}},
		{"not a list", `{"name":"x"}`, http.StatusBadRequest, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := http.Post(ts.URL+"/parts/lane-names", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != tc.status {
				t.Fatalf("status %s, want %d", res.Status, tc.status)
			}
			if tc.want == nil {
				return
			}
			var got map[string]string
			if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "names", got, tc.want)
		})
	}
}
