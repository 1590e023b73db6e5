package lockqueue

import (
	"math"
	"strconv"
	"strings"
)

// Name is what a child's name alone says about it.
type Name struct {
	Recipe Recipe
	Mode   Mode
	Seq    int64 // -1 when the name has no sequence suffix
	HasSeq bool
	Prefix string
	// Kind is the recipe's own marker ("lock", "rlock", "__READ__", "R", ...), kept
	// so rules can tell e.g. kazoo's __lock__ (exclusive or write) from __rlock__.
	Kind string
}

// The recipes' name prefixes (recipes.md §1), matched by hand: a big
// queue's listing parses every name, and a regular expression per name
// was most of the time to its first snapshot.
//
//	Curator:      _c_<uuid 8-4-4-4-12 lower hex>-(lock-|latch-|lease-|__READ__|__WRIT__)
//	go-zookeeper: _c_<32 lower hex>-lock-
//	kazoo:        <32 lower hex>__(lock|rlock)__, a lease <32 lower hex>
//	ZooKeeper's Java WriteLock writes "x-" + sessionId + "-": a Java long in
//	decimal, negative when the session id's top bit is set (server ids of
//	128 and up). The C recipe writes the id as 16 hex digits.
//	ZooKeeper's documented recipe: <anything>-(lock|read|write)-

// lowerHex reports whether s is all lowercase hex digits, and not empty.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return len(s) > 0
}

// isUUID: 8-4-4-4-12 lowercase hex digits.
func isUUID(s string) bool {
	return len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' &&
		lowerHex(s[:8]) && lowerHex(s[9:13]) && lowerHex(s[14:18]) && lowerHex(s[19:23]) && lowerHex(s[24:])
}

// isKazooLease: uuid4().hex, 32 lowercase hex digits.
func isKazooLease(name string) bool { return len(name) == 32 && lowerHex(name) }

// curatorKind is the marker after a Curator prefix's uuid, or "".
func curatorKind(prefix string) string {
	rest, ok := strings.CutPrefix(prefix, "_c_")
	if !ok || len(rest) < 37 || !isUUID(rest[:36]) || rest[36] != '-' {
		return ""
	}
	switch k := rest[37:]; k {
	case "lock-", "latch-", "lease-", "__READ__", "__WRIT__":
		return k
	}
	return ""
}

// isGoZkPrefix: _c_<32 lowercase hex>-lock-.
func isGoZkPrefix(prefix string) bool {
	rest, ok := strings.CutPrefix(prefix, "_c_")
	return ok && len(rest) == 38 && lowerHex(rest[:32]) && rest[32:] == "-lock-"
}

// kazooKind is "lock" or "rlock" for <32 lowercase hex>__(lock|rlock)__, or "".
func kazooKind(prefix string) string {
	if len(prefix) < 32 || !lowerHex(prefix[:32]) {
		return ""
	}
	switch prefix[32:] {
	case "__lock__":
		return "lock"
	case "__rlock__":
		return "rlock"
	}
	return ""
}

// isZkJavaPrefix: x-(-?<decimal>|<16 lowercase hex>)-.
func isZkJavaPrefix(prefix string) bool {
	id, ok := strings.CutPrefix(prefix, "x-")
	if !ok || len(id) < 2 || id[len(id)-1] != '-' {
		return false
	}
	id = id[:len(id)-1]
	if len(id) == 16 && lowerHex(id) {
		return true
	}
	return allDigits(strings.TrimPrefix(id, "-"))
}

// zkDocKind is "lock", "read" or "write" for <anything>-(lock|read|write)-
// with at least one character but no newline before, or "".
func zkDocKind(prefix string) string {
	for _, k := range [...]string{"lock", "read", "write"} {
		head, ok := strings.CutSuffix(prefix, "-"+k+"-")
		if ok && head != "" && !strings.Contains(head, "\n") {
			return k
		}
	}
	return ""
}

// SplitSeq splits a ZooKeeper sequential name into its prefix and sequence.
// ZooKeeper formats the signed 32-bit counter with %010d, so after it wraps
// past 2^31-1 the suffix is "-2147483648" (11 characters) and later "-999999999".
func SplitSeq(name string) (prefix string, seq int64, ok bool) {
	n := len(name)
	if n < 10 {
		return name, -1, false
	}
	last := name[n-10:]
	if allDigits(last) {
		v, _ := strconv.ParseInt(last, 10, 64)
		if v > math.MaxInt32 {
			if n >= 11 && name[n-11] == '-' && v <= -math.MinInt32 {
				return name[:n-11], -v, true
			}
			return name, -1, false
		}
		return name[:n-10], v, true
	}
	if last[0] == '-' && allDigits(last[1:]) {
		// "-000000000" is not something %010d writes.
		if v, _ := strconv.ParseInt(last[1:], 10, 64); v > 0 {
			return name[:n-10], -v, true
		}
	}
	return name, -1, false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

// ParseName recognises the conventions of recipes.md §1. ok is false for a
// foreign child: a name no lock recipe makes.
func ParseName(name string) (Name, bool) {
	// kazoo's Semaphore names a lease uuid4().hex. About one such name in
	// 500 ends in ten decimal digits that fit an int32, and would read as
	// a sequential node of no known recipe with a 22-hex-digit prefix
	// (which no recipe makes): the folder would turn mixed and the lease
	// limit in its data would go unused. 32 hex digits are a lease.
	if isKazooLease(name) {
		return Name{Recipe: Kazoo, Mode: Lease, Seq: -1, Prefix: name, Kind: "lease"}, true
	}
	prefix, seq, hasSeq := SplitSeq(name)
	if !hasSeq {
		return Name{Mode: Unknown, Seq: -1, Prefix: name}, false
	}
	nm := classifyPrefix(prefix, seq)
	if nm.Recipe == Generic && seq >= 1000000000 && strings.HasSuffix(prefix, "-") {
		// "W_-1000000000" reads as prefix "W_-" and a positive sequence, or as "W_" and a
		// wrapped negative one; a recognised recipe prefix settles it.
		if neg := classifyPrefix(prefix[:len(prefix)-1], -seq); neg.Recipe != Generic {
			return neg, true
		}
	}
	return nm, true
}

func classifyPrefix(prefix string, seq int64) Name {
	nm := Name{Seq: seq, HasSeq: true, Prefix: prefix}
	switch {
	case prefix == "R_":
		nm.Recipe, nm.Mode, nm.Kind = SeedRW, Read, "R"
	case prefix == "W_":
		nm.Recipe, nm.Mode, nm.Kind = SeedRW, Write, "W"
	case curatorKind(prefix) != "":
		nm.Recipe = Curator
		nm.Kind = curatorKind(prefix)
		switch nm.Kind {
		case "__READ__":
			nm.Mode = Read
		case "__WRIT__":
			nm.Mode = Write
		case "lease-":
			nm.Mode = Lease
		default:
			nm.Mode = Exclusive
		}
	case isGoZkPrefix(prefix):
		nm.Recipe, nm.Mode, nm.Kind = GoZookeeper, Exclusive, "lock"
	case kazooKind(prefix) != "":
		nm.Recipe = Kazoo
		nm.Kind = kazooKind(prefix)
		if nm.Kind == "rlock" {
			nm.Mode = Read
		} else {
			// Lock and WriteLock share "__lock__": exclusive either way, whatever
			// its siblings, since it excludes readers and writers alike; one
			// node keeps one mode (and one label) as readers come and go.
			nm.Mode = Exclusive
		}
	case isZkJavaPrefix(prefix):
		nm.Recipe, nm.Mode, nm.Kind = ZookeeperRecipe, Exclusive, "x"
	case zkDocKind(prefix) != "":
		nm.Recipe = ZookeeperRecipe
		nm.Kind = zkDocKind(prefix)
		switch nm.Kind {
		case "read":
			nm.Mode = Read
		case "write":
			nm.Mode = Write
		default:
			nm.Mode = Exclusive
		}
	default:
		nm.Recipe, nm.Mode, nm.Kind = Generic, Exclusive, "seq"
	}
	return nm
}

// SeqName formats a sequence the way ZooKeeper does (%010d), for clients that
// need to predict or print names.
func SeqName(prefix string, seq int64) string {
	s := strconv.FormatInt(seq, 10)
	if seq < 0 {
		for len(s) < 10 {
			s = "-0" + s[1:]
		}
		return prefix + s
	}
	for len(s) < 10 {
		s = "0" + s
	}
	return prefix + s
}
