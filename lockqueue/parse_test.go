package lockqueue

import (
	"regexp"
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	const uuid = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	const hex32 = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name   string
		ok     bool
		recipe Recipe
		mode   Mode
		seq    int64
	}{
		{"R_0000000001", true, SeedRW, Read, 1},
		{"W_0000000002", true, SeedRW, Write, 2},
		{"_c_" + uuid + "-lock-0000000007", true, Curator, Exclusive, 7},
		{"_c_" + uuid + "-latch-0000000003", true, Curator, Exclusive, 3},
		{"_c_" + uuid + "-lease-0000000004", true, Curator, Lease, 4},
		{"_c_" + uuid + "-__READ__0000000010", true, Curator, Read, 10},
		{"_c_" + uuid + "-__WRIT__0000000011", true, Curator, Write, 11},
		{"_c_" + hex32 + "-lock-0000000005", true, GoZookeeper, Exclusive, 5},
		{hex32 + "__lock__0000000012", true, Kazoo, Exclusive, 12},
		{hex32 + "__rlock__0000000013", true, Kazoo, Read, 13},
		{hex32, true, Kazoo, Lease, -1},
		// A kazoo lease whose uuid ends in ten decimal digits: still a
		// lease, not a sequence 1234567890 after a 22-hex-digit prefix.
		{"0123456789abcdef0123451234567890", true, Kazoo, Lease, -1},
		{"00000000000000000000000000000000", true, Kazoo, Lease, -1},
		{"x-72057594037927936-0000000000", true, ZookeeperRecipe, Exclusive, 0},
		{"x-0123456789abcdef-0000000009", true, ZookeeperRecipe, Exclusive, 9},
		{"x--8070450532247928831-0000000003", true, ZookeeperRecipe, Exclusive, 3}, // session id with the top bit set
		{"x--1-0000000004", true, ZookeeperRecipe, Exclusive, 4},
		{"guid-read-0000000020", true, ZookeeperRecipe, Read, 20},
		{"guid-write-0000000021", true, ZookeeperRecipe, Write, 21},
		{"guid-lock-0000000022", true, ZookeeperRecipe, Exclusive, 22},
		{"member_0000000030", true, Generic, Exclusive, 30},
		{"0000000031", true, Generic, Exclusive, 31},
		{"W_-2147483648", true, SeedRW, Write, -2147483648},
		{"R_-000000005", true, SeedRW, Read, -5},
		{"W_2147483648", false, "", Unknown, -1}, // not an int32: not a ZooKeeper sequence
		{"config", false, "", Unknown, -1},
		{"", false, "", Unknown, -1},
		{"lock-12", false, "", Unknown, -1},
		{"_c_" + strings.ToUpper(hex32) + "-lock-0000000005", true, ZookeeperRecipe, Exclusive, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseName(tt.name)
			if ok != tt.ok || got.Recipe != tt.recipe || got.Mode != tt.mode || got.Seq != tt.seq {
				t.Fatalf("ParseName(%q) = %+v, %v; want recipe %q mode %q seq %d ok %v",
					tt.name, got, ok, tt.recipe, tt.mode, tt.seq, tt.ok)
			}
		})
	}
}

func TestSeqNameRoundTrip(t *testing.T) {
	for _, seq := range []int64{0, 1, 42, 2147483647, -1, -5, -999999999, -1000000000, -2147483648} {
		name := SeqName("W_", seq)
		nm, ok := ParseName(name)
		if !ok || nm.Seq != seq || nm.Prefix != "W_" || nm.Recipe != SeedRW {
			t.Errorf("SeqName(W_, %d) = %q, ParseName gives %+v %v", seq, name, nm, ok)
		}
	}
}

func FuzzParseName(f *testing.F) {
	for _, s := range []string{"R_0000000001", "W_-2147483648", "x-1-0000000001", "_c_0123456789abcdef0123456789abcdef-lock-0000000005", "", "-", "0000000000", "abc-999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		nm, ok := ParseName(name)
		if !ok {
			if nm.Mode != Unknown {
				t.Fatalf("foreign %q has mode %q", name, nm.Mode)
			}
			return
		}
		if nm.HasSeq {
			if nm.Seq < -2147483648 || nm.Seq > 2147483647 {
				t.Fatalf("%q: seq %d outside int32", name, nm.Seq)
			}
			if !strings.HasPrefix(name, nm.Prefix) {
				t.Fatalf("%q: prefix %q is not a prefix", name, nm.Prefix)
			}
			// The suffix must be what ZooKeeper would have written for that sequence.
			if SeqName(nm.Prefix, nm.Seq) != name {
				t.Fatalf("%q: SeqName(%q, %d) = %q", name, nm.Prefix, nm.Seq, SeqName(nm.Prefix, nm.Seq))
			}
		}
		// Build must accept anything ParseName sees without panicking.
		_ = Build("/p", []Child{{Name: name, EphemeralOwner: 1}}, Options{})
	})
}

// The recipes' prefixes as regular expressions, as recipes.md §1 states
// them: the hand-written matchers (parse.go) must agree with them on
// every name.
var (
	curatorPrefixRE = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-(lock-|latch-|lease-|__READ__|__WRIT__)$`)
	goZkPrefixRE    = regexp.MustCompile(`^_c_[0-9a-f]{32}-lock-$`)
	kazooPrefixRE   = regexp.MustCompile(`^[0-9a-f]{32}__(lock|rlock)__$`)
	kazooLeaseRE    = regexp.MustCompile(`^[0-9a-f]{32}$`)
	zkJavaPrefixRE  = regexp.MustCompile(`^x-(?:-?[0-9]+|[0-9a-f]{16})-$`)
	zkDocPrefixRE   = regexp.MustCompile(`^.+-(lock|read|write)-$`)
)

func submatch(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); len(m) > 1 {
		return m[1]
	}
	return ""
}

func checkPrefixMatchers(t *testing.T, p string) {
	t.Helper()
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"curator", curatorKind(p), submatch(curatorPrefixRE, p)},
		{"go-zookeeper", isGoZkPrefix(p), goZkPrefixRE.MatchString(p)},
		{"kazoo", kazooKind(p), submatch(kazooPrefixRE, p)},
		{"kazoo lease", isKazooLease(p), kazooLeaseRE.MatchString(p)},
		{"zookeeper java", isZkJavaPrefix(p), zkJavaPrefixRE.MatchString(p)},
		{"zookeeper doc", zkDocKind(p), submatch(zkDocPrefixRE, p)},
	} {
		if c.got != c.want {
			t.Errorf("%s matcher on %q = %v, the regular expression says %v", c.what, p, c.got, c.want)
		}
	}
}

func TestPrefixMatchersAgreeWithRegexps(t *testing.T) {
	const uuid = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	const hex32 = "0123456789abcdef0123456789abcdef"
	for _, p := range []string{
		"", "-", "_c_", "x-", "x--", "x-1-", "x--1-", "x---1-", "x-0123456789abcdef-", "x-0123456789ABCDEF-",
		"x-0123456789abcde-", "x-12a-", "-lock-", "a-lock-", "a-read-", "a-write-", "a\n-lock-", "\xff-read-",
		"a-lock", "a-wri-", "guid-write-", "lock-", "a--lock-",
		"_c_" + uuid + "-lock-", "_c_" + uuid + "-latch-", "_c_" + uuid + "-lease-", "_c_" + uuid + "-__READ__",
		"_c_" + uuid + "-__WRIT__", "_c_" + uuid + "-lock", "_c_" + uuid + "-other-", "_c_" + strings.ToUpper(uuid) + "-lock-",
		"_c_" + strings.ReplaceAll(uuid, "-", "") + "-lock-", "_c_" + hex32 + "-lock-", "_c_" + hex32 + "-lease-",
		"_c_" + hex32[1:] + "-lock-", hex32, hex32[1:], hex32 + "0", strings.ToUpper(hex32),
		hex32 + "__lock__", hex32 + "__rlock__", hex32 + "__wlock__", hex32[1:] + "__lock__", "x" + hex32 + "__lock__",
	} {
		checkPrefixMatchers(t, p)
	}
}

func FuzzPrefixMatchers(f *testing.F) {
	for _, s := range []string{"x--1-", "a-lock-", "_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-lease-", "0123456789abcdef0123456789abcdef__rlock__"} {
		f.Add(s)
	}
	f.Fuzz(checkPrefixMatchers)
}

// BenchmarkParseName parses a 100,000-node kazoo queue's names, as a big
// queue's listing does.
//
//	go test ./lockqueue -run '^$' -bench BenchmarkParseName -benchmem
func BenchmarkParseName(b *testing.B) {
	names := make([]string, 100000)
	for i := range names {
		names[i] = SeqName("0123456789abcdef0123456789abcdef__lock__", int64(i))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range names {
			ParseName(n)
		}
	}
}
