package views

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"github.com/a-h/templ"
)

// The dashboard's list: its search, its state and order choices, its pages
// and totals. The values are GET /api/v1/locks's parameters; the server
// checks them.

// Choice is one option of a select.
type Choice struct {
	Value, Text string
}

// The dashboard's defaults: the locks that need a look (alerts, then the
// longest waits), a page of DashboardLimit.
const (
	DashboardSort  = "alerts"
	DashboardState = "all"
	DashboardLimit = 50
)

// ListDefaults are the list's parameters and their defaults, which the
// dashboard's URL leaves out (its script reads them from the form, so it
// keeps no copy of them).
func (Dashboard) ListDefaults() string {
	b, _ := json.Marshal(map[string]string{"service": "", "q": "", "state": DashboardState, "sort": DashboardSort,
		"limit": strconv.Itoa(DashboardLimit)})
	return string(b)
}

// StateChoices are the dashboard's "show" choices.
var StateChoices = []Choice{
	{"all", "every lock"},
	{"held", "held"},
	{"contended", "with waiters"},
	{"alerting", "with alerts"},
}

// SortChoices are the dashboard's orders.
var SortChoices = []Choice{
	{"alerts", "needs a look: alerts, then longest wait"},
	{"oldest-wait", "longest wait first"},
	{"queue-length", "longest queue first"},
	{"path", "by path"},
}

// limitChoices are the page sizes offered.
var limitChoices = []int{25, DashboardLimit, 100, 200}

// LimitChoices are the page sizes offered, with the one asked for.
func (d Dashboard) LimitChoices() []int {
	if d.List.Limit <= 0 || slices.Contains(limitChoices, d.List.Limit) {
		return limitChoices
	}
	out := append(slices.Clone(limitChoices), d.List.Limit)
	slices.Sort(out)
	return out
}

// listURL is the dashboard's URL for the list with state and cursor, the
// rest as now; parameters at their default are left out.
func (d Dashboard) listURL(state, cursor string) string {
	v := url.Values{}
	if d.Filter != "" {
		v.Set("service", d.Filter)
	}
	if d.List.Q != "" {
		v.Set("q", d.List.Q)
	}
	if state != "" && state != DashboardState {
		v.Set("state", state)
	}
	if d.List.Sort != "" && d.List.Sort != DashboardSort {
		v.Set("sort", d.List.Sort)
	}
	if d.List.Limit > 0 && d.List.Limit != DashboardLimit {
		v.Set("limit", strconv.Itoa(d.List.Limit))
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	if len(v) == 0 {
		return "/"
	}
	return "/?" + v.Encode()
}

// PageHref is the URL of the list's page at cursor ("" for the first).
func (d Dashboard) PageHref(cursor string) string { return d.listURL(d.List.State, cursor) }

// TotalLink is one of the totals, a link that shows the locks it counts;
// a count with no Href is said, not linked (no list of its own).
type TotalLink struct {
	State, Text, Href string
	// Title says what is counted, for a reader who wonders.
	Title   string
	Count   int
	Current bool
}

// TotalsLinks are the totals, each a link that shows the locks it counts.
// When discovery found empty folders (places a lock may be taken, with
// nothing in them now), the lock parents found lead, and the locks
// watched read as the ones listed: "20,000 lock parents found · 2,001
// listed · 2,000 with lock nodes now · 2,000 held", where the list alone
// would say 2,001 of 20,000 and leave the rest to the docs.
func (d Dashboard) TotalsLinks() []TotalLink {
	t := d.List.Totals
	all := TotalLink{State: "all", Text: plural(t.Locks, "lock watched", "locks watched"), Count: t.Locks}
	var links []TotalLink
	if t.Found > t.Locks {
		links = append(links, TotalLink{State: "found", Text: plural(t.Found, "lock parent found", "lock parents found"), Count: t.Found,
			Title: "the locks watched and the empty folders found below the --watch-under prefixes, where a lock may be taken: " +
				"an empty folder is watched, and listed, once a lock node is made in it"})
		all.Text = "listed"
		all.Title = "the lock parents that have had lock nodes since they were found: one whose last node went stays listed"
	}
	links = append(links, all,
		TotalLink{State: "nodes", Text: "with lock nodes now", Count: t.WithNodes, Title: "a holder or a waiter now"},
		TotalLink{State: "held", Text: "held", Count: t.Held},
		TotalLink{State: "contended", Text: "with waiters", Count: t.Contended},
		TotalLink{State: "alerting", Text: plural(t.Alerting, "with an alert", "with alerts"), Count: t.Alerting},
	)
	for i := range links {
		if !slices.ContainsFunc(StateChoices, func(c Choice) bool { return c.Value == links[i].State }) {
			continue // no list of its own
		}
		links[i].Href = d.listURL(links[i].State, "")
		links[i].Current = links[i].State == d.List.State || links[i].State == DashboardState && d.List.State == ""
	}
	return links
}

// attrs mark the total whose locks are listed, and say what it counts.
func (t TotalLink) attrs() templ.Attributes {
	a := templ.Attributes{}
	if t.Current {
		a["aria-current"] = "true"
	}
	if t.Title != "" {
		a["title"] = t.Title
	}
	return a
}

// RangeText says which locks of how many the page shows.
func (d Dashboard) RangeText() string {
	l := d.List
	if len(d.Locks) == 0 {
		return fmt.Sprintf("%s matching", thousands(l.Matched))
	}
	return fmt.Sprintf("%s–%s of %s", thousands(l.Offset+1), thousands(l.Offset+len(d.Locks)), thousands(l.Matched))
}

// Caption says what the table lists, in the order it lists them.
func (d Dashboard) Caption() string {
	order := "by path"
	for _, c := range SortChoices {
		if c.Value == d.List.Sort {
			order = c.Text
		}
	}
	return "Watched locks, " + order + ": who holds each, how many wait and for how long, and what looks wrong. Only this page of them is shown; search or page for the others."
}
