package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// Whether the history records is said by GET /api/v1/history/status, on
// the lock page (data-history-off) and with every frame of its socket that
// brings the parts; a server without a recorder says it keeps none.
func TestHistoryStatusSaid(t *testing.T) {
	since := time.Date(2026, 11, 28, 22, 10, 26, 0, time.UTC)
	var st atomic.Pointer[history.Status]
	st.Store(&history.Status{Recording: false, Why: "disk full", Since: since})
	e := newEnv(t, Config{Pages: true, HistoryStatus: func() history.Status { return *st.Load() }})
	e.hub.Publish(pageSnapshot("/off", lockqueue.Connected, "W_0000000001"))

	code, _, body := do(t, http.MethodGet, e.ts.URL+"/api/v1/history/status", "", nil)
	var got history.Status
	if err := json.Unmarshal(body, &got); code != http.StatusOK || err != nil || got.Recording || got.Why != "disk full" || !got.Since.Equal(since) {
		t.Errorf("GET /api/v1/history/status = %d %s", code, body)
	}
	want := "since " + since.Local().Format("15:04:05") + ": disk full"
	if _, page := pageGet(t, e.ts.URL+"/lock?path=/off", nil); !strings.Contains(page, `data-history-off="`+want+`"`) {
		t.Errorf("the lock page does not say %q", want)
	}
	v := e.mustDial(t, "/off&window=0:100&parts=1")
	v.next()
	var x pageExtra
	if err := json.Unmarshal(v.last, &x); err != nil || x.HistoryOff != want {
		t.Errorf("the frame says the history is off %q (%v), want %q", x.HistoryOff, err, want)
	}

	st.Store(&history.Status{Recording: true})
	e.hub.Publish(pageSnapshot("/off", lockqueue.Connected, "W_0000000001", "W_0000000002"))
	v.next()
	x = pageExtra{}
	if err := json.Unmarshal(v.last, &x); err != nil || x.HistoryOff != "" || x.Parts == "" {
		t.Errorf("recording again, the frame says %q (%v)", x.HistoryOff, err)
	}

	plain := newEnv(t, Config{})
	if code, _, body := do(t, http.MethodGet, plain.ts.URL+"/api/v1/history/status", "", nil); code != http.StatusNotFound || !strings.Contains(string(body), "records no history") {
		t.Errorf("without a recorder: %d %s", code, body)
	}
}
