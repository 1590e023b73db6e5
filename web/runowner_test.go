package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator"
)

// started is what POST /runs answers of a run's ownership.
type started struct {
	ID    string `json:"id"`
	Owner string `json:"owner"`
}

// listed is an open run as GET /runs lists it to one requester.
type listed struct {
	ID        string `json:"id"`
	Deletable bool   `json:"deletable"`
}

func deletable(api apiClient) map[string]bool {
	api.t.Helper()
	var runs []listed
	api.do("GET", "/runs", nil, 200, &runs)
	out := map[string]bool{}
	for _, r := range runs {
		out[r.ID] = r.Deletable
	}
	return out
}

// TestClassroomRunOwnership: only the one who started a run (its owner
// secret) may delete it; anyone else is refused with 403 and told why, and
// the run list tells each requester which runs it may delete.
func TestClassroomRunOwnership(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	e := newEnv(t, Config{Services: zkRegistry(nil, m)})
	url := e.ts.URL + "/api/v1/sim"
	alice := apiClient{t: t, url: url, owners: &ownerJar{}}
	bob := apiClient{t: t, url: url, owners: &ownerJar{}}

	var a, b started
	alice.do("POST", "/runs", map[string]any{"scenario": "lock1-5"}, 201, &a)
	bob.do("POST", "/runs", map[string]any{"scenario": "herd", "clients": 2}, 201, &b)
	if len(a.Owner) < 32 || a.Owner == b.Owner || alice.owners.header() != a.Owner {
		t.Fatalf("owner secrets: alice's answer %q (kept %q), bob's %q: want two different random secrets, answered in the body and the header", a.Owner, alice.owners.header(), b.Owner)
	}

	if got := deletable(alice); !got[a.ID] || got[b.ID] {
		t.Errorf("alice's run list: %v, want only her run %s deletable", got, a.ID)
	}
	if got := deletable(apiClient{t: t, url: url}); len(got) != 2 || got[a.ID] || got[b.ID] {
		t.Errorf("a stranger's run list: %v, want both runs listed, neither deletable", got)
	}

	tests := []struct {
		name   string
		header http.Header
	}{
		{"no secret", nil},
		{"another run's secret", http.Header{RunOwnerHeader: {b.Owner}}},
		{"a made-up secret", http.Header{RunOwnerHeader: {strings.Repeat("0", 32)}}},
		{"the server's token, which this server has none of", http.Header{"Authorization": {"Bearer " + a.Owner}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := apiClient{t: t, url: url, header: tt.header}
			msg := api.errorOf("DELETE", "/runs/"+a.ID, nil, http.StatusForbidden)
			if !strings.Contains(msg, "run "+a.ID+" was started by someone else") || !strings.Contains(msg, RunOwnerHeader) {
				t.Errorf("refusal: %q", msg)
			}
		})
	}
	alice.do("GET", "/runs/"+a.ID, nil, 200, nil)

	// The owner deletes with the secrets of all her runs in one header.
	alice.owners.add(strings.Repeat("f", 32))
	alice.do("DELETE", "/runs/"+a.ID, nil, 204, nil)
	alice.do("GET", "/runs/"+a.ID, nil, 404, nil)
	// A run gone is gone for its owner too.
	alice.do("DELETE", "/runs/"+a.ID, nil, 404, nil)
	bob.do("DELETE", "/runs/"+b.ID, nil, 204, nil)
}

// TestClassroomRunOwnershipToken: on a server with a token, whoever holds
// it may delete any run, as the server's operator.
func TestClassroomRunOwnershipToken(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	e := newEnv(t, Config{Services: zkRegistry(nil, m), AuthToken: "s3cret"})
	url := e.ts.URL + "/api/v1/sim"
	auth := http.Header{"Authorization": {"Bearer s3cret"}}
	starter := apiClient{t: t, url: url, header: auth, owners: &ownerJar{}}
	operator := apiClient{t: t, url: url, header: auth}

	var a started
	starter.do("POST", "/runs", map[string]any{"scenario": "lock1-5"}, 201, &a)
	if got := deletable(operator); !got[a.ID] {
		t.Errorf("the token holder's run list: %v, want %s deletable", got, a.ID)
	}
	apiClient{t: t, url: url, header: http.Header{RunOwnerHeader: {a.Owner}}}.do("DELETE", "/runs/"+a.ID, nil, http.StatusUnauthorized, nil)
	operator.do("DELETE", "/runs/"+a.ID, nil, 204, nil)
	operator.do("GET", "/runs/"+a.ID, nil, 404, nil)
}

// TestClassroomRunOwnershipConcurrentStarts: runs started at the same time
// as others are listed and deleted each keep their starter's secret. A
// request's list of runs, taken before another request started its run,
// once forgot that run's secret just after it was given, and its starter
// was refused its own step.
func TestClassroomRunOwnershipConcurrentStarts(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	e := newEnv(t, Config{Services: zkRegistry(nil, m)})
	url := e.ts.URL + "/api/v1/sim"
	t.Run("starters", func(t *testing.T) {
		for i := range 8 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				api := apiClient{t: t, url: url, owners: &ownerJar{}}
				for range 3 {
					var r started
					api.do("POST", "/runs", map[string]any{"scenario": "herd", "clients": 2}, 201, &r)
					api.do("GET", "/runs", nil, 200, nil)
					api.do("POST", "/runs/"+r.ID+"/step", nil, 200, nil)
					api.do("DELETE", "/runs/"+r.ID, nil, 204, nil)
				}
			})
		}
	})
}
