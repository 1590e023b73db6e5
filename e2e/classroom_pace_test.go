package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
)

// A classroom step shows its key's time left as of the step, however long
// the viewer looks: the run holds a Redis key's expiry between steps, so a
// countdown in real time would show as expired a key the server still
// holds. Looked at longer than the key's 5 s, step 1 still says C1's key
// has its time left, and step 2 still finds it taken.
func TestClassroomLeaseHeldBetweenSteps(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=redis-px-pause")
	tb.until("redis-px-pause's run", settled(serviceRun, 0)+` && document.getElementById('scenario').value === 'redis-px-pause'`)
	tb.key(kb.ArrowRight)
	// The key's text is read in the same evaluation that finds it: the
	// lane is drawn again (morphed) as frames come, and a second query
	// could fall between two draws on a loaded machine.
	lease := `(window.leaseText = (document.querySelector('.run text.lease') || {}).textContent)`
	tb.until("step 1 shown", settled(serviceRun, 1)+` && !!`+lease)
	first := eval[string](tb, `window.leaseText`)
	if !strings.HasPrefix(first, "lease ") || !strings.HasSuffix(first, " left") {
		t.Fatalf("step 1's key reads %q, want its lease's time left", first)
	}
	time.Sleep(5500 * time.Millisecond) // longer than PX 5000
	tb.until("step 1's key still shown", `!!`+lease)
	if got := eval[string](tb, `window.leaseText`); got != first {
		t.Errorf("after 5.5 s on step 1 the key reads %q, want %q as at the step (the classroom holds it)", got, first)
	}
	tb.key(kb.ArrowRight)
	tb.until("step 2 shown", settled(serviceRun, 2))
	if got := narration(tb, serviceRun); !strings.Contains(got, "C2 finds the key taken") {
		t.Errorf("step 2 after a long look at step 1 narrates %q, want C2 finding C1's key taken", got)
	}
}
