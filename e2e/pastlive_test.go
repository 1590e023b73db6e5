package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
)

// notKept are the fields of a lock's JSON that a moment of the history
// does not give as the live answer did, by design (README, "the history"):
// the reader's own revision, clock and notes, where it read from, zxids
// and etcd revisions, lease times.
var notKept = map[string]bool{
	"revision": true, "updatedAt": true, "watchSource": true, "note": true, "czxid": true, "order": true,
	"expiresInMs": true, "leaseTtlMs": true, "leaseLeftMs": true,
}

// pastDiffs lists where the lock's answer at a moment (?at=) differs from
// its live answer, field by field, past the fields notKept and those
// named in also.
func pastDiffs(live, past map[string]any, also map[string]bool) []string {
	var out []string
	keys := func(a, b map[string]any) []string {
		var ks []string
		for k := range a {
			ks = append(ks, k)
		}
		for k := range b {
			if _, ok := a[k]; !ok {
				ks = append(ks, k)
			}
		}
		slices.Sort(ks)
		return ks
	}
	for _, k := range keys(live, past) {
		if notKept[k] || also[k] || k == "nodes" {
			continue
		}
		if !same(live[k], past[k]) {
			out = append(out, fmt.Sprintf("%s: live %v, past %v", k, live[k], past[k]))
		}
	}
	ln, _ := live["nodes"].([]any)
	pn, _ := past["nodes"].([]any)
	if len(ln) != len(pn) {
		return append(out, fmt.Sprintf("nodes: live %d, past %d", len(ln), len(pn)))
	}
	for i := range ln {
		a, _ := ln[i].(map[string]any)
		b, _ := pn[i].(map[string]any)
		for _, k := range keys(a, b) {
			if !notKept[k] && !also[k] && !same(a[k], b[k]) {
				out = append(out, fmt.Sprintf("node %v %s: live %v, past %v", a["name"], k, a[k], b[k]))
			}
		}
	}
	return out
}

// same reports whether a and b are equal JSON values, times (at any
// depth) to the millisecond the history keeps.
func same(a, b any) bool { return reflect.DeepEqual(toMs(a), toMs(b)) }

// toMs is v with every RFC 3339 time in it made its Unix milliseconds.
func toMs(v any) any {
	switch v := v.(type) {
	case string:
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t.UnixMilli()
		}
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = toMs(x)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = toMs(x)
		}
		return out
	}
	return v
}

// checkPastIsLive holds the lock's answer at this moment, rebuilt from the
// history, to its live answer: a past moment shows what the live page did,
// but for the fields notKept and those its service's reader changes at
// every read (also; README, "the history").
func checkPastIsLive(t *testing.T, srv *server, service, path string, also ...string) {
	t.Helper()
	skip := map[string]bool{}
	for _, k := range also {
		skip[k] = true
	}
	q := url.Values{"path": {path}}
	if service != "zookeeper" {
		q.Set("service", service)
	}
	read := func(extra string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(get(t, srv.URL+"/api/v1/lock?"+q.Encode()+extra)), &m); err != nil {
			t.Fatalf("%s %s: %v", service, path, err)
		}
		return m
	}
	var diffs []string
	deadline := time.Now().Add(waitFor)
	for {
		live := read("")
		// The history writes what it recorded every 200 ms.
		time.Sleep(500 * time.Millisecond)
		updated, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(live["updatedAt"]))
		past := read("&at=" + strconv.FormatInt(max(updated.UnixMilli(), time.Now().Add(-300*time.Millisecond).UnixMilli()), 10))
		if diffs = pastDiffs(live, past, skip); len(diffs) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, d := range diffs {
		t.Errorf("%s %s at a past moment: %s", service, path, d)
	}
}
