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

// TotalLink is one of the totals, a link to the locks it counts.
type TotalLink struct {
	State, Text, Href string
	Count             int
	Current           bool
}

// TotalsLinks are the totals, each a link that shows the locks it counts.
func (d Dashboard) TotalsLinks() []TotalLink {
	t := d.List.Totals
	links := []TotalLink{
		{State: "all", Text: plural(t.Locks, "lock watched", "locks watched"), Count: t.Locks},
		{State: "held", Text: "held", Count: t.Held},
		{State: "contended", Text: "with waiters", Count: t.Contended},
		{State: "alerting", Text: plural(t.Alerting, "with an alert", "with alerts"), Count: t.Alerting},
	}
	for i := range links {
		links[i].Href = d.listURL(links[i].State, "")
		links[i].Current = links[i].State == d.List.State || links[i].State == DashboardState && d.List.State == ""
	}
	return links
}

// attrs mark the total whose locks are listed.
func (t TotalLink) attrs() templ.Attributes {
	if t.Current {
		return templ.Attributes{"aria-current": "true"}
	}
	return nil
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
