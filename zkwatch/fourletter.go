package zkwatch

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/zkwatch/fourlw"
)

// dumpEnd is where what parseDump reads of a dump ends.
func dumpEnd(line string) bool {
	return strings.HasPrefix(line, "ephemeral nodes dump") || strings.HasPrefix(line, "Connections dump")
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

	reply, err := fourlw.Ask(ctx, addr, "wchp", tlsCfg)
	if errors.Is(err, errNotWhitelisted) {
		if reply, err = fourlw.Ask(ctx, addr, "wchc", tlsCfg); err == nil {
			m.Watches, err = parseWchc(reply)
		}
	} else if err == nil {
		m.Watches, err = parseWchp(reply)
	}
	if note(err); m.Down {
		return m.told()
	}
	if reply, err := fourlw.Ask(ctx, addr, "cons", tlsCfg); !note(err) {
		m.Connected, err = parseCons(reply)
		note(err)
	}
	if reply, err := fourlw.AskUntil(ctx, addr, "dump", tlsCfg, dumpEnd); !note(err) {
		m.Expiry, err = parseDump(reply, time.Now())
		note(err)
	}
	if reply, err := fourlw.Ask(ctx, addr, "mntr", tlsCfg); !note(err) {
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
	return m.told()
}

// parseWchp reads wchp: each watched path on its own line, then the sessions
// watching it, tab-indented.
func parseWchp(reply string) (map[int64][]string, error) {
	out := map[int64][]string{}
	path := ""
	bad, err := scanGroups(reply, "wchp: session line %q before any path",
		func(line string) error {
			if line[0] != '/' {
				return fmt.Errorf("wchp: unexpected line %q", line)
			}
			path = line
			return nil
		},
		func(line string) error {
			id, err := parseSession(line)
			if err != nil {
				return fmt.Errorf("wchp: %w", err)
			}
			out[id] = append(out[id], path)
			return nil
		})
	if bad != nil {
		return nil, bad
	}
	return out, err
}

// parseWchc reads wchc: each session, then its watched paths, tab-indented.
func parseWchc(reply string) (map[int64][]string, error) {
	out := map[int64][]string{}
	var id int64
	bad, err := scanGroups(reply, "wchc: path line %q before any session",
		func(line string) error {
			v, err := parseSession(line)
			if err != nil {
				return fmt.Errorf("wchc: %w", err)
			}
			id = v
			return nil
		},
		func(line string) error {
			out[id] = append(out[id], line[1:])
			return nil
		})
	if bad != nil {
		return nil, bad
	}
	return out, err
}

// scanGroups reads what wchp and wchc print: head lines, each followed by
// tab-indented item lines. orphan is the error format for an item line
// before any head. bad is what head or item refused; err the scanner's
// own error, after which what was read stands.
func scanGroups(reply, orphan string, head, item func(line string) error) (bad, err error) {
	have := false
	sc := scanLines(reply)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
		case line[0] == '\t':
			if !have {
				return fmt.Errorf(orphan, line), nil
			}
			if err := item(line); err != nil {
				return err, nil
			}
		default:
			if err := head(line); err != nil {
				return err, nil
			}
			have = true
		}
	}
	return nil, sc.Err()
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
	sets, err := scanSessionSets(reply)
	if err != nil {
		return nil, err
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

// expirySet is one "<n> expire at <date>:" group of dump.
type expirySet struct {
	at  time.Time // the expiry read as if the server's zone were UTC
	ids []int64
}

// scanSessionSets reads dump's "Session Sets" groups, in order.
func scanSessionSets(reply string) ([]expirySet, error) {
	var sets []expirySet
	inSets := false
	sc := scanLines(reply)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "Session Sets"):
			inSets = true
		case dumpEnd(line):
			return sets, nil
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
			sets = append(sets, expirySet{at: t})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dump: %w", err)
	}
	return sets, nil
}

// scanLines scans a reply by lines, however long a line (a path) is.
func scanLines(reply string) *bufio.Scanner {
	sc := bufio.NewScanner(strings.NewReader(reply))
	sc.Buffer(nil, 1<<20)
	return sc
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
