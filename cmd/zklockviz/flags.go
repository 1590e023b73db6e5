package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// envDefaults are the flags whose default comes from the environment, in
// every subcommand that has the flag. A variable set to "" counts as unset.
var envDefaults = []struct{ flag, env string }{
	{"zk", "ZKLOCKVIZ_ZK"},
	{"zk-timeout", "ZKLOCKVIZ_ZK_TIMEOUT"},
	{"zk-auth", "ZKLOCKVIZ_ZK_AUTH"},
	{"addr", "ZKLOCKVIZ_ADDR"},
	{"auth-token", "ZKLOCKVIZ_TOKEN"},
	{"stall-grace", "ZKLOCKVIZ_STALL_GRACE"},
	{"postgres", "ZKLOCKVIZ_POSTGRES"},
	{"postgres-password", "ZKLOCKVIZ_POSTGRES_PASSWORD"},
	{"etcd", "ZKLOCKVIZ_ETCD"},
	{"etcd-user", "ZKLOCKVIZ_ETCD_USER"},
	{"etcd-password", "ZKLOCKVIZ_ETCD_PASSWORD"},
	{"etcd-tls-ca", "ZKLOCKVIZ_ETCD_TLS_CA"},
	{"etcd-tls-cert", "ZKLOCKVIZ_ETCD_TLS_CERT"},
	{"etcd-tls-key", "ZKLOCKVIZ_ETCD_TLS_KEY"},
	{"redis", "ZKLOCKVIZ_REDIS"},
	{"redis-user", "ZKLOCKVIZ_REDIS_USER"},
	{"redis-password", "ZKLOCKVIZ_REDIS_PASSWORD"},
	{"redis-db", "ZKLOCKVIZ_REDIS_DB"},
	{"redis-tls-ca", "ZKLOCKVIZ_REDIS_TLS_CA"},
	{"redis-tls-cert", "ZKLOCKVIZ_REDIS_TLS_CERT"},
	{"redis-tls-key", "ZKLOCKVIZ_REDIS_TLS_KEY"},
	{"data-dir", "ZKLOCKVIZ_DATA_DIR"},
	{"history", "ZKLOCKVIZ_HISTORY"},
	{"history-retention", "ZKLOCKVIZ_HISTORY_RETENTION"},
	{"history-max-size", "ZKLOCKVIZ_HISTORY_MAX_SIZE"},
	{"history-db", "ZKLOCKVIZ_HISTORY_DB"},
	{"history-replica", "ZKLOCKVIZ_HISTORY_REPLICA"},
	{"cluster", "ZKLOCKVIZ_CLUSTER"},
}

// errHelp is returned when --help was asked for and answered.
var errHelp = errors.New("help shown")

// parseFlags reads args into fs, whose flags hold their built-in defaults,
// after applying the environment's defaults. --help prints usage to stdout
// and returns errHelp; every other mistake is a *usageError.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string, usage string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	for _, d := range envDefaults {
		v := getenv(d.env)
		if v == "" || fs.Lookup(d.flag) == nil {
			continue
		}
		if err := fs.Set(d.flag, v); err != nil {
			return usagef("%s=%q (the default of --%s): %v", d.env, v, d.flag, err)
		}
		// A repeatable flag's default is replaced by the command line's
		// values, not added to.
		if l, ok := fs.Lookup(d.flag).Value.(interface{ setByEnvironment() }); ok {
			l.setByEnvironment()
		}
	}
	once := onceFlags()
	sets := countSets(fs, once)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return errHelp
		}
		return usagef("%v", err)
	}
	for _, name := range once {
		if n := sets[name]; n != nil && *n > 1 {
			return usagef("--%s given %d times: name one server (a cluster's members in one value, comma-separated)", name, *n)
		}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	return nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// zkConnFlags are the connection flags serve and sim share.
type zkConnFlags struct {
	zk      string
	timeout time.Duration
}

func (f *zkConnFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.zk, "zk", "", "")
	fs.DurationVar(&f.timeout, "zk-timeout", defaultZKTimeout, "")
}

// parse checks the flags: the servers and chroot of --zk, and a positive
// --zk-timeout.
func (f zkConnFlags) parse() (servers []string, chroot string, err error) {
	if f.timeout <= 0 {
		return nil, "", fmt.Errorf("--zk-timeout %v: must be positive", f.timeout)
	}
	return parseZK(f.zk)
}

// positive checks that a duration flag is above zero.
func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("--%s %v: must be positive", name, d)
	}
	return nil
}

// optDuration is a duration flag that knows whether it was given, for
// flags whose default is computed from others.
type optDuration struct {
	d   time.Duration
	set bool
}

func (o *optDuration) String() string {
	if !o.set {
		return ""
	}
	return o.d.String()
}

func (o *optDuration) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("want a duration such as 2s")
	}
	o.d, o.set = d, true
	return nil
}

// onceFlags name one server each (classServices' onceFlag), in order:
// given twice on the command line, one would silently win over the other.
func onceFlags() []string {
	var out []string
	for _, s := range classServices {
		if s.onceFlag != "" {
			out = append(out, s.onceFlag)
		}
	}
	slices.Sort(out)
	return out
}

// countingValue counts its Sets.
type countingValue struct {
	flag.Value
	n *int
}

func (c countingValue) Set(v string) error {
	*c.n++
	return c.Value.Set(v)
}

// countSets makes fs count how often each named flag is set from now on
// (the command line, after the environment's defaults).
func countSets(fs *flag.FlagSet, names []string) map[string]*int {
	out := map[string]*int{}
	for _, name := range names {
		if f := fs.Lookup(name); f != nil {
			n := new(int)
			f.Value = countingValue{Value: f.Value, n: n}
			out[name] = n
		}
	}
	return out
}
