package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/zklockviz/zklockviz/etcd/etcdlock"
)

// etcdFlags are serve's --etcd* flags.
type etcdFlags struct {
	endpoints, user, password string
	ca, cert, key             string
}

func (f *etcdFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoints, "etcd", "", "")
	fs.StringVar(&f.user, "etcd-user", "", "")
	fs.StringVar(&f.password, "etcd-password", "", "")
	fs.StringVar(&f.ca, "etcd-tls-ca", "", "")
	fs.StringVar(&f.cert, "etcd-tls-cert", "", "")
	fs.StringVar(&f.key, "etcd-tls-key", "", "")
}

// etcdConfig is serve's etcd reader, nil without --etcd.
type etcdConfig struct {
	Endpoints          []string
	Username, Password string
	TLS                *tls.Config
	Prefixes, Under    []string
}

// config checks the flags and the etcd locks of --watch and --watch-under;
// nil without --etcd.
func (f etcdFlags) config(watch, under []string) (*etcdConfig, error) {
	if f.endpoints == "" {
		if f.user != "" || f.password != "" || f.ca != "" || f.cert != "" || f.key != "" {
			return nil, fmt.Errorf("--etcd-user, --etcd-password and --etcd-tls-* need --etcd URL")
		}
		return nil, nil
	}
	if (f.user == "") != (f.password == "") {
		return nil, fmt.Errorf("--etcd-user and --etcd-password go together (etcd logs in with both)")
	}
	tlsCfg, err := tlsFromFiles("--etcd-tls", f.ca, f.cert, f.key, false)
	if err != nil {
		return nil, err
	}
	c := &etcdConfig{Username: f.user, Password: f.password, TLS: tlsCfg, Prefixes: watch, Under: under}
	if c.Endpoints, err = parseEtcdEndpoints(f.endpoints, tlsCfg != nil); err != nil {
		return nil, err
	}
	for _, p := range append(append([]string{}, watch...), under...) {
		if err := etcdlock.CheckName(p); err != nil {
			return nil, fmt.Errorf("--watch etcd:%s: %w", p, err)
		}
	}
	return c, nil
}

// parseEtcdEndpoints reads --etcd URL[,URL...]. A bare HOST:PORT is
// http://, or https:// when a --etcd-tls-* flag is given; a missing port
// is 2379.
func parseEtcdEndpoints(s string, tlsOn bool) ([]string, error) {
	var out []string
	for e := range strings.SplitSeq(s, ",") {
		e = strings.TrimSpace(e)
		if !strings.Contains(e, "://") {
			scheme := "http://"
			if tlsOn {
				scheme = "https://"
			}
			e = scheme + e
		}
		u, err := url.Parse(e)
		bad := err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || (u.Path != "" && u.Path != "/")
		if !bad && u.Port() == "" {
			u.Host = net.JoinHostPort(u.Hostname(), "2379") // etcd's client port, as etcdctl assumes
		}
		if !bad {
			port, perr := strconv.Atoi(u.Port())
			bad = perr != nil || port < 1 || port > 65535
		}
		if bad {
			return nil, fmt.Errorf("--etcd %q: bad endpoint %q, want a client URL such as http://etcd1:2379 (comma-separated for several)", s, e)
		}
		out = append(out, u.Scheme+"://"+net.JoinHostPort(u.Hostname(), u.Port()))
	}
	return out, nil
}

// registerEtcd registers etcd, with its reader when --etcd was given, so
// that ?service=etcd says what to give when it is not.
func (m *Main) registerEtcd() error {
	c := m.Config.Etcd
	if c == nil {
		return m.registerService(etcdlock.Service(nil))
	}
	r, err := etcdlock.New(etcdlock.Config{
		Endpoints: c.Endpoints, Username: c.Username, Password: c.Password, TLS: c.TLS,
		Prefixes: c.Prefixes, Under: c.Under, Poll: m.Config.Poll,
		Publish: m.readerSink(""), Forget: m.hub.Remove, Logger: m.log,
	})
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	return m.registerService(etcdlock.Service(r))
}

// endpoints are c's endpoints for the log; none when c is nil.
func (c *etcdConfig) endpoints() []string {
	if c == nil {
		return nil
	}
	return c.Endpoints
}
