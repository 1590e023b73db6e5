package views

import (
	"strings"
	"testing"
)

// The totals say what they count in words: with empty folders found, the
// lock parents found lead and the locks watched read as those listed; a
// count with no list of its own is said, not linked.
func TestTotalsWords(t *testing.T) {
	for _, tc := range []struct {
		name   string
		totals Totals
		want   string // each total as "count text", a * after a link
	}{
		{"a fleet, mostly empty", Totals{Locks: 2001, Found: 20000, WithNodes: 2000, Held: 2000, Contended: 1999, Alerting: 1},
			"20,000 lock parents found · 2,001 listed* · 2,000 with lock nodes now · 2,000 held* · 1,999 with waiters* · 1 with an alert*"},
		{"locks named, no empty folder", Totals{Locks: 38, Found: 38, WithNodes: 38, Held: 38, Contended: 3, Alerting: 2},
			"38 locks watched* · 38 with lock nodes now · 38 held* · 3 with waiters* · 2 with alerts*"},
		{"one lock, let go", Totals{Locks: 1, Found: 1},
			"1 lock watched* · 0 with lock nodes now · 0 held* · 0 with waiters* · 0 with alerts*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDashboard(Page{}, nil, DashboardList{Totals: tc.totals}, Service{}, nil)
			var said []string
			for _, l := range d.TotalsLinks() {
				s := thousands(l.Count) + " " + l.Text
				if l.Href != "" {
					s += "*"
				}
				said = append(said, s)
			}
			if got := strings.Join(said, " · "); got != tc.want {
				t.Errorf("the totals say\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
