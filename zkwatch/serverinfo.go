package zkwatch

// What the server itself tells about watches and sessions: the four-letter
// words on the client port and the AdminServer's JSON. Fetching and parsing
// only; merging over members and joining with the queues is in watchtable.go.

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zklockviz/zklockviz/fourlw"
)

// memberInfo is what one ensemble member told in one poll.
type memberInfo struct {
	// Down: the member refused the connection or is not serving (no quorum):
	// it holds no client connections and no watches, so it adds nothing.
	Down bool
	// Watches maps a session to the paths it holds data watches on; nil when
	// the member would not tell.
	Watches map[int64][]string
	// Connected is the set of sessions connected to this member; nil unknown.
	Connected map[int64]bool
	// Expiry is when sessions expire; nil when the member does not tell
	// (followers, or no dump).
	Expiry map[int64]time.Time
	// WatchCount is mntr's zk_watch_count (data and children watches); -1 unknown.
	WatchCount int
	// State is mntr's zk_server_state: "leader", "follower", "observer" or
	// "standalone"; "" unknown.
	State string
	// Learners is, on a leader, the number of followers and observers
	// connected to it (mntr's zk_learners); -1 unknown.
	Learners int
	// Errs are what went wrong, for the log.
	Errs []error
}

// dataWatchTotal counts listed (session, path) pairs, before any filtering:
// it is what zk_watch_count counts for data watches.
func (m memberInfo) dataWatchTotal() int {
	n := 0
	for _, ps := range m.Watches {
		n += len(ps)
	}
	return n
}

// The four-letter words' refusals, as fourlw reports them.
var (
	errNotWhitelisted = fourlw.ErrNotWhitelisted
	errNotServing     = fourlw.ErrNotServing
)

// fourLetter sends cmd to the client port at addr and returns the reply,
// over TLS with a non-nil tlsCfg.
func fourLetter(ctx context.Context, addr, cmd string, tlsCfg ...*tls.Config) (string, error) {
	return fourLetterUntil(ctx, addr, cmd, nil, tlsCfg...)
}

// fourLetterUntil is fourLetter that stops reading at the first line for
// which until is true (see fourlw.AskUntil).
func fourLetterUntil(ctx context.Context, addr, cmd string, until func(line string) bool, tlsCfg ...*tls.Config) (string, error) {
	var cfg *tls.Config
	if len(tlsCfg) > 0 {
		cfg = tlsCfg[0]
	}
	return fourlw.AskUntil(ctx, addr, cmd, cfg, until)
}

// dumpEnd is where what parseDump reads of a dump ends.
func dumpEnd(line string) bool {
	return strings.HasPrefix(line, "ephemeral nodes dump") || strings.HasPrefix(line, "Connections dump")
}

// checkReply turns the server's refusals into errors.
var checkReply = fourlw.CheckReply

// memberDown reports whether err means the member holds no clients: nothing
// listens there, or it is not serving.
func memberDown(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, errNotServing)
}

// fetch4lw asks one member's client port with wchp (wchc when wchp is off),
// cons, dump and mntr.
func fetch4lw(ctx context.Context, addr string, tlsCfg *tls.Config) memberInfo {
	m := memberInfo{WatchCount: -1, Learners: -1}
	note := func(err error) bool {
		if err == nil {
			return false
		}
		if memberDown(err) {
			m.Down = true
		}
		m.Errs = append(m.Errs, err)
		return true
	}

	reply, err := fourLetter(ctx, addr, "wchp", tlsCfg)
	if errors.Is(err, errNotWhitelisted) {
		if reply, err = fourLetter(ctx, addr, "wchc", tlsCfg); err == nil {
			m.Watches, err = parseWchc(reply)
		}
	} else if err == nil {
		m.Watches, err = parseWchp(reply)
	}
	note(err)
	if m.Down {
		return memberInfo{Down: true, WatchCount: -1, Learners: -1, Errs: m.Errs}
	}
	if reply, err := fourLetter(ctx, addr, "cons", tlsCfg); !note(err) {
		m.Connected, err = parseCons(reply)
		note(err)
	}
	if reply, err := fourLetterUntil(ctx, addr, "dump", dumpEnd, tlsCfg); !note(err) {
		m.Expiry, err = parseDump(reply, time.Now())
		note(err)
	}
	if reply, err := fourLetter(ctx, addr, "mntr", tlsCfg); !note(err) {
		var kv map[string]string
		if kv, err = parseMntr(reply); !note(err) {
			if n, err := strconv.Atoi(kv["zk_watch_count"]); err == nil {
				m.WatchCount = n
			}
			m.State = kv["zk_server_state"]
			if n, err := strconv.Atoi(kv["zk_learners"]); err == nil {
				m.Learners = n
			}
		}
	}
	if m.Down {
		return memberInfo{Down: true, WatchCount: -1, Learners: -1, Errs: m.Errs}
	}
	return m
}

// parseSession reads "0x1000008971f0017" (Long.toHexString, so unsigned).
func parseSession(s string) (int64, error) {
	h, ok := strings.CutPrefix(strings.TrimSpace(s), "0x")
	if !ok {
		return 0, fmt.Errorf("session id %q: want 0x<hex>", s)
	}
	v, err := strconv.ParseUint(h, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("session id %q: %w", s, err)
	}
	return int64(v), nil
}

// parseWchp reads wchp: each watched path on its own line, then the sessions
// watching it, tab-indented.
func parseWchp(reply string) (map[int64][]string, error) {
	out := map[int64][]string{}
	path := ""
	sc := bufio.NewScanner(strings.NewReader(reply))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
		case line[0] == '\t':
			if path == "" {
				return nil, fmt.Errorf("wchp: session line %q before any path", line)
			}
			id, err := parseSession(line)
			if err != nil {
				return nil, fmt.Errorf("wchp: %w", err)
			}
			out[id] = append(out[id], path)
		case line[0] == '/':
			path = line
		default:
			return nil, fmt.Errorf("wchp: unexpected line %q", line)
		}
	}
	return out, sc.Err()
}

// parseWchc reads wchc: each session, then its watched paths, tab-indented.
func parseWchc(reply string) (map[int64][]string, error) {
	out := map[int64][]string{}
	var id int64
	have := false
	sc := bufio.NewScanner(strings.NewReader(reply))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
		case line[0] == '\t':
			if !have {
				return nil, fmt.Errorf("wchc: path line %q before any session", line)
			}
			out[id] = append(out[id], line[1:])
		default:
			v, err := parseSession(line)
			if err != nil {
				return nil, fmt.Errorf("wchc: %w", err)
			}
			id, have = v, true
		}
	}
	return out, sc.Err()
}

// parseCons reads cons: one line per connection; those with a session carry
// "sid=0x…". Connections still handshaking have none.
func parseCons(reply string) (map[int64]bool, error) {
	out := map[int64]bool{}
	lines := 0
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "/") || !strings.Contains(line, "(") {
			return nil, fmt.Errorf("cons: unexpected line %q", line)
		}
		lines++
		_, rest, ok := strings.Cut(line, "sid=")
		if !ok {
			continue
		}
		sid, _, _ := strings.Cut(rest, ",")
		sid, _, _ = strings.Cut(sid, ")")
		id, err := parseSession(sid)
		if err != nil {
			return nil, fmt.Errorf("cons: %w", err)
		}
		if id != 0 {
			out[id] = true
		}
	}
	if lines == 0 {
		// cons always lists the connection asking it.
		return nil, errors.New("cons: no connections listed, not even this one")
	}
	return out, sc.Err()
}

// dumpTime is java.util.Date.toString's layout.
const dumpTime = "Mon Jan 02 15:04:05 MST 2006"

// dumpTimeNoZone is dumpTime without the zone, which parseDump drops.
const dumpTimeNoZone = "Mon Jan 02 15:04:05 2006"

// zoneStep: every time zone's UTC offset in use is a multiple of 15 minutes.
const zoneStep = 15 * time.Minute

// parseDump reads the "Session Sets" part of dump: groups headed by
// "<n> expire at <date>:" followed by tab-indented session ids. It stops at
// the ephemeral-nodes part (whose "Connections dump" section has look-alike
// headers for connections, not sessions). Followers print no expiry sets;
// they yield an empty map. now is the watcher's clock when the dump was read.
//
// The dates are java.util.Date.toString in the server JVM's default zone,
// named by an abbreviation that is ambiguous (IST, CST, BST are each several
// zones) and that Go resolves only when it happens to be the watcher's own
// zone: any other was read as UTC, an error of the zone's whole offset in
// "expires in". So the zone is ignored, and its offset is inferred instead:
// the soonest expiry set is due within a session timeout (ZooKeeper's
// default maximum is 20 ticks, well under the 7.5 minutes that would make
// the rounding ambiguous), so the difference between its zone-less reading
// and now, rounded to a multiple of 15 minutes, is the server's UTC offset.
// What remains is the clock skew between the hosts, which no 4lw reading can
// remove (the AdminServer's dump is zone-free: see parseAdminDump).
func parseDump(reply string, now time.Time) (map[int64]time.Time, error) {
	type set struct {
		at  time.Time // the expiry read as if the server's zone were UTC
		ids []int64
	}
	var sets []set
	inSets := false
	sc := bufio.NewScanner(strings.NewReader(reply))
	sc.Buffer(nil, 1<<20)
scan:
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "Session Sets"):
			inSets = true
		case strings.HasPrefix(line, "ephemeral nodes dump"), strings.HasPrefix(line, "Connections dump"):
			break scan
		case !inSets || trimmed == "":
		case line[0] == '\t' || line[0] == ' ':
			if len(sets) == 0 {
				return nil, fmt.Errorf("dump: session %q before any expiry line", trimmed)
			}
			id, err := parseSession(trimmed)
			if err != nil {
				return nil, fmt.Errorf("dump: %w", err)
			}
			sets[len(sets)-1].ids = append(sets[len(sets)-1].ids, id)
		default:
			_, date, ok := strings.Cut(trimmed, " expire at ")
			if !ok {
				// Other trackers (followers' learner trackers) print
				// other things here; they tell no expiry.
				inSets = false
				continue
			}
			t, err := parseJavaDate(strings.TrimSuffix(date, ":"))
			if err != nil {
				return nil, fmt.Errorf("dump: expiry line %q: %w", line, err)
			}
			sets = append(sets, set{at: t})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dump: %w", err)
	}
	out := map[int64]time.Time{}
	var soonest time.Time
	for _, st := range sets {
		if len(st.ids) > 0 && (soonest.IsZero() || st.at.Before(soonest)) {
			soonest = st.at
		}
	}
	if soonest.IsZero() {
		return out, nil
	}
	offset := soonest.Sub(now).Round(zoneStep)
	for _, st := range sets {
		for _, id := range st.ids {
			out[id] = st.at.Add(-offset)
		}
	}
	return out, nil
}

// parseJavaDate reads Date.toString ("Sun Nov 22 09:32:54 UTC 2026") with
// the zone dropped, as if it were UTC.
func parseJavaDate(s string) (time.Time, error) {
	f := strings.Fields(s)
	if len(f) != 6 {
		return time.Time{}, fmt.Errorf("date %q: want %q", s, dumpTime)
	}
	return time.Parse(dumpTimeNoZone, strings.Join(append(f[:4:4], f[5]), " "))
}

// parseMntr reads mntr's "key<TAB>value" lines.
func parseMntr(reply string) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "\t")
		if !ok {
			return nil, fmt.Errorf("mntr: unexpected line %q", line)
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil, errors.New("mntr: empty reply")
	}
	return out, sc.Err()
}

// The AdminServer's JSON. Session ids exceed 2^53, so they are decoded as
// json.Number and parsed as int64; a float64 would corrupt them.

type adminWatches struct {
	SessionToPaths map[string][]string `json:"session_id_to_watched_paths"`
	Error          *string             `json:"error"`
}

type adminConnections struct {
	Connections       []adminConnection `json:"connections"`
	SecureConnections []adminConnection `json:"secure_connections"`
	Error             *string           `json:"error"`
}

type adminConnection struct {
	SessionID json.Number `json:"session_id"`
	// LastResponseTime is on the server's elapsed-time clock, the same clock
	// as dump's expiry times.
	LastResponseTime json.Number `json:"last_response_time"`
}

type adminDump struct {
	ExpiryToSessions map[string][]json.Number `json:"expiry_time_to_session_ids"`
	Error            *string                  `json:"error"`
}

type adminMonitor struct {
	WatchCount  *json.Number `json:"watch_count"`
	ServerState string       `json:"server_state"`
	Learners    *json.Number `json:"learners"`
	Error       *string      `json:"error"`
}

func decodeAdmin(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}

func adminError(e *string) error {
	if e != nil && *e != "" {
		if strings.Contains(*e, "not currently serving requests") {
			return errNotServing
		}
		return fmt.Errorf("server error: %s", *e)
	}
	return nil
}

func parseAdminWatches(r io.Reader) (map[int64][]string, error) {
	var v adminWatches
	if err := decodeAdmin(r, &v); err != nil {
		return nil, fmt.Errorf("watches: %w", err)
	}
	if err := adminError(v.Error); err != nil {
		return nil, fmt.Errorf("watches: %w", err)
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
	if err := decodeAdmin(r, &v); err != nil {
		return nil, -1, fmt.Errorf("connections: %w", err)
	}
	if err := adminError(v.Error); err != nil {
		return nil, -1, fmt.Errorf("connections: %w", err)
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
	if err := decodeAdmin(r, &v); err != nil {
		return nil, fmt.Errorf("dump: %w", err)
	}
	if err := adminError(v.Error); err != nil {
		return nil, fmt.Errorf("dump: %w", err)
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
	if err := decodeAdmin(r, &v); err != nil {
		return -1, "", -1, fmt.Errorf("monitor: %w", err)
	}
	if err := adminError(v.Error); err != nil {
		return -1, "", -1, fmt.Errorf("monitor: %w", err)
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
	m := memberInfo{WatchCount: -1, Learners: -1}
	get := func(cmd string, parse func(io.Reader) error) {
		if m.Down {
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/commands/"+cmd, nil)
		if err != nil {
			m.Errs = append(m.Errs, fmt.Errorf("admin %s: %w", cmd, err))
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				m.Down = true
			}
			m.Errs = append(m.Errs, fmt.Errorf("admin %s at %s: %w", cmd, base, err))
			return
		}
		defer resp.Body.Close()
		body := io.LimitReader(resp.Body, 64<<20)
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(io.LimitReader(body, 512))
			// A member without quorum answers commands that need the
			// database with 500 and this text.
			if strings.Contains(string(msg), "not currently serving requests") {
				m.Down = true
			}
			m.Errs = append(m.Errs, fmt.Errorf("admin %s at %s: HTTP %d: %s", cmd, base, resp.StatusCode, strings.TrimSpace(string(msg))))
			return
		}
		if err := parse(body); err != nil {
			if errors.Is(err, errNotServing) {
				m.Down = true
			}
			m.Errs = append(m.Errs, fmt.Errorf("admin %s at %s: %w", cmd, base, err))
		}
	}
	var clock int64 = -1
	var clockAt time.Time
	get("watches", func(r io.Reader) (err error) { m.Watches, err = parseAdminWatches(r); return err })
	get("connections", func(r io.Reader) (err error) {
		m.Connected, clock, err = parseAdminConnections(r)
		clockAt = time.Now()
		return err
	})
	get("dump", func(r io.Reader) (err error) { m.Expiry, err = parseAdminDump(r, clock, clockAt); return err })
	get("monitor", func(r io.Reader) (err error) {
		m.WatchCount, m.State, m.Learners, err = parseAdminMonitor(r)
		return err
	})
	if m.Down {
		return memberInfo{Down: true, WatchCount: -1, Learners: -1, Errs: m.Errs}
	}
	return m
}
