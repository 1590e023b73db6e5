package zkwatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The AdminServer's JSON. Session ids exceed 2^53, so they are decoded as
// json.Number and parsed as int64; a float64 would corrupt them.

// adminReply is the error every command's answer may carry.
type adminReply struct {
	Error *string `json:"error"`
}

func (a adminReply) err() error {
	if a.Error != nil && *a.Error != "" {
		if strings.Contains(*a.Error, "not currently serving requests") {
			return errNotServing
		}
		return fmt.Errorf("server error: %s", *a.Error)
	}
	return nil
}

type adminWatches struct {
	SessionToPaths map[string][]string `json:"session_id_to_watched_paths"`
	adminReply
}

type adminConnections struct {
	Connections       []adminConnection `json:"connections"`
	SecureConnections []adminConnection `json:"secure_connections"`
	adminReply
}

type adminConnection struct {
	SessionID json.Number `json:"session_id"`
	// LastResponseTime is on the server's elapsed-time clock, the same clock
	// as dump's expiry times.
	LastResponseTime json.Number `json:"last_response_time"`
}

type adminDump struct {
	ExpiryToSessions map[string][]json.Number `json:"expiry_time_to_session_ids"`
	adminReply
}

type adminMonitor struct {
	WatchCount  *json.Number `json:"watch_count"`
	ServerState string       `json:"server_state"`
	Learners    *json.Number `json:"learners"`
	adminReply
}

// decodeAdmin decodes the answer to cmd into v, and fails with the error
// the answer carries.
func decodeAdmin(r io.Reader, cmd string, v interface{ err() error }) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: decode: %w", cmd, err)
	}
	if err := v.err(); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return nil
}

func parseAdminWatches(r io.Reader) (map[int64][]string, error) {
	var v adminWatches
	if err := decodeAdmin(r, "watches", &v); err != nil {
		return nil, err
	}
	if v.SessionToPaths == nil {
		return nil, errors.New("watches: no session_id_to_watched_paths")
	}
	out := make(map[int64][]string, len(v.SessionToPaths))
	for k, paths := range v.SessionToPaths {
		id, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("watches: session id %q: %w", k, err)
		}
		out[id] = paths
	}
	return out, nil
}

// parseAdminConnections returns the connected sessions and the newest
// last_response_time, the best reading of the server's elapsed-time clock
// the AdminServer offers (-1 when there is none).
func parseAdminConnections(r io.Reader) (map[int64]bool, int64, error) {
	var v adminConnections
	if err := decodeAdmin(r, "connections", &v); err != nil {
		return nil, -1, err
	}
	if v.Connections == nil {
		return nil, -1, errors.New("connections: no connections list")
	}
	out := map[int64]bool{}
	clock := int64(-1)
	for _, c := range append(v.Connections, v.SecureConnections...) {
		if c.SessionID != "" {
			id, err := strconv.ParseInt(c.SessionID.String(), 10, 64)
			if err != nil {
				return nil, -1, fmt.Errorf("connections: session id %q: %w", c.SessionID, err)
			}
			if id != 0 {
				out[id] = true
			}
		}
		if t, err := c.LastResponseTime.Int64(); err == nil && t > clock {
			clock = t
		}
	}
	return out, clock, nil
}

// parseAdminDump returns session expiry times. The AdminServer gives them on
// the server's elapsed-time clock (not wall time); serverNow is a reading of
// that clock taken at now, or -1 when unknown, in which case the expiry is
// unknown too.
func parseAdminDump(r io.Reader, serverNow int64, now time.Time) (map[int64]time.Time, error) {
	var v adminDump
	if err := decodeAdmin(r, "dump", &v); err != nil {
		return nil, err
	}
	if serverNow < 0 || v.ExpiryToSessions == nil {
		return nil, nil
	}
	out := map[int64]time.Time{}
	for k, ids := range v.ExpiryToSessions {
		at, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("dump: expiry %q: %w", k, err)
		}
		when := now.Add(time.Duration(at-serverNow) * time.Millisecond)
		for _, n := range ids {
			id, err := strconv.ParseInt(n.String(), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("dump: session id %q: %w", n, err)
			}
			out[id] = when
		}
	}
	return out, nil
}

func parseAdminMonitor(r io.Reader) (watchCount int, state string, learners int, err error) {
	var v adminMonitor
	if err := decodeAdmin(r, "monitor", &v); err != nil {
		return -1, "", -1, err
	}
	learners = -1
	if v.Learners != nil {
		if n, err := v.Learners.Int64(); err == nil {
			learners = int(n)
		}
	}
	if v.WatchCount == nil {
		return -1, v.ServerState, learners, errors.New("monitor: no watch_count")
	}
	n, err := v.WatchCount.Int64()
	if err != nil {
		return -1, v.ServerState, learners, fmt.Errorf("monitor: watch_count: %w", err)
	}
	return int(n), v.ServerState, learners, nil
}

// fetchAdmin asks one member's AdminServer at base ("http://host:port").
func fetchAdmin(ctx context.Context, client *http.Client, base string) memberInfo {
	a := adminAsk{ctx: ctx, client: client, base: base, m: memberInfo{WatchCount: -1, Learners: -1}}
	m := &a.m
	var clock int64 = -1
	var clockAt time.Time
	a.get("watches", func(r io.Reader) (err error) { m.Watches, err = parseAdminWatches(r); return err })
	a.get("connections", func(r io.Reader) (err error) {
		m.Connected, clock, err = parseAdminConnections(r)
		clockAt = time.Now()
		return err
	})
	a.get("dump", func(r io.Reader) (err error) { m.Expiry, err = parseAdminDump(r, clock, clockAt); return err })
	a.get("monitor", func(r io.Reader) (err error) {
		m.WatchCount, m.State, m.Learners, err = parseAdminMonitor(r)
		return err
	})
	return m.told()
}

// adminAsk is one poll of one member's AdminServer; m collects what it told.
type adminAsk struct {
	ctx    context.Context
	client *http.Client
	base   string
	m      memberInfo
}

// get fetches one command and hands its body to parse, unless the member
// is known to be down already. Failures go to m.Errs.
func (a *adminAsk) get(cmd string, parse func(io.Reader) error) {
	if a.m.Down {
		return
	}
	fail := func(err error) { a.m.Errs = append(a.m.Errs, fmt.Errorf("admin %s at %s: %w", cmd, a.base, err)) }
	req, err := http.NewRequestWithContext(a.ctx, http.MethodGet, strings.TrimSuffix(a.base, "/")+"/commands/"+cmd, nil)
	if err != nil {
		a.m.Errs = append(a.m.Errs, fmt.Errorf("admin %s: %w", cmd, err))
		return
	}
	resp, err := a.client.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			a.m.Down = true
		}
		fail(err)
		return
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, 64<<20)
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(body, 512))
		// A member without quorum answers commands that need the
		// database with 500 and this text.
		if strings.Contains(string(msg), "not currently serving requests") {
			a.m.Down = true
		}
		fail(fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg))))
		return
	}
	if err := parse(body); err != nil {
		if errors.Is(err, errNotServing) {
			a.m.Down = true
		}
		fail(err)
	}
}
