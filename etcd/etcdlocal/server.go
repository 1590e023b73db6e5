// Package etcdlocal runs real, throwaway single-member etcd servers on
// loopback for tests, demos and the classroom.
//
// It launches Debian's etcd-server binary rather than embedding
// go.etcd.io/etcd/server/v3/embed, which would add ~45 modules, ~16 MB to
// the binary and minutes to a cold compile for the same 0.1 s start. Each
// server has its own temporary directory and free ports, fast timing flags
// (heartbeat 10 ms, election 100 ms: ready in ~0.15 s instead of ~0.5 s),
// dies with this process (PR_SET_PDEATHSIG), and its directory is removed
// even after kill -9 (see package localproc). etcd persists: after Stop
// (SIGTERM) or Kill (a crash), Start brings the same data back.
package etcdlocal

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/localproc"
	"github.com/zklockviz/zklockviz/testca"
)

// ErrNotInstalled is returned (wrapped) by Start when the etcd binary cannot
// be found.
var ErrNotInstalled = errors.New("etcdlocal: etcd is not installed (on Debian/Ubuntu: apt-get install etcd-server; etcdctl is in etcd-client)")

// Options configure a server. The zero value is usable.
type Options struct {
	// HeartbeatInterval is etcd's --heartbeat-interval. Default 10ms.
	HeartbeatInterval time.Duration
	// ElectionTimeout is etcd's --election-timeout. Default 100ms. The
	// shortest lease etcd grants follows it (with 1s, a 1 s lease comes
	// back as 2 s), so keep it small for short leases.
	ElectionTimeout time.Duration
	// Log receives the server's output, line by line. Default: discarded.
	Log io.Writer
	// LogLevel is etcd's --log-level. Default "error".
	LogLevel string
	// Args are extra etcd arguments, e.g. {"--auth-token", "simple"}.
	Args []string
	// TLS serves clients over https only (Endpoint says https://), with a
	// server certificate from a throwaway CA: see Server.CAFile and
	// Server.ClientTLS. The peer URL stays plain: one member has no peers.
	TLS bool
	// TLSClientAuth makes etcd refuse clients without a certificate from
	// that CA (--client-cert-auth, --trusted-ca-file); one is in
	// Server.ClientCertFiles. It implies TLS.
	TLSClientAuth bool
}

func (o Options) withDefaults() (Options, error) {
	o.HeartbeatInterval = cmp.Or(o.HeartbeatInterval, 10*time.Millisecond)
	o.ElectionTimeout = cmp.Or(o.ElectionTimeout, 100*time.Millisecond)
	if o.HeartbeatInterval < time.Millisecond || o.ElectionTimeout < 5*o.HeartbeatInterval {
		return o, fmt.Errorf("etcdlocal: heartbeat %v and election timeout %v: want heartbeat ≥ 1ms and election timeout ≥ 5 heartbeats (etcd's own rule)",
			o.HeartbeatInterval, o.ElectionTimeout)
	}
	o.LogLevel = cmp.Or(o.LogLevel, "error")
	if o.TLSClientAuth {
		o.TLS = true
	}
	return o, nil
}

// Server is one etcd process, a single-member cluster. Its ports and data
// stay the same across Stop and Start.
type Server struct {
	*localproc.Server // Name, Dir, Pid, Running, Output, Start, Stop, Kill, Close
	clientPort        int
	tls               testca.Files // with Options.TLS
	health            *http.Client // trusts tls.CA, shows tls.ClientCert
}

// Start launches etcd on free loopback ports and waits until /health says
// it serves requests. ctx bounds the startup only; call Close when done.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	bin, err := localproc.LookPath("etcd", ErrNotInstalled)
	if err != nil {
		return nil, err
	}
	return localproc.Launch(ctx, func(ctx context.Context) (*Server, error) {
		return newServer(bin, opts)
	})
}

func newServer(bin string, opts Options) (*Server, error) {
	ports, err := localproc.FreePorts(1)
	if err != nil {
		return nil, err
	}
	dir, err := localproc.NewDir("etcdlocal", "")
	if err != nil {
		return nil, err
	}
	s := &Server{clientPort: ports[0], health: http.DefaultClient}
	if opts.TLS {
		if s.tls, err = testca.WriteFiles(dir.Path(), "etcdlocal test CA"); err != nil {
			return nil, errors.Join(fmt.Errorf("etcdlocal: TLS files: %w", err), dir.Remove())
		}
		// No keep-alive: a connection would outlive the readiness check.
		s.health = &http.Client{Transport: &http.Transport{TLSClientConfig: s.ClientTLS(), DisableKeepAlives: true}}
	}
	// A single member talks to no peer: its peer listener takes any free
	// port at each start. A fixed one could be taken while a test has the
	// server down (CI: "bind: address already in use" on a restart), and
	// only the client port must stay for clients to come back to.
	peer := "http://127.0.0.1:0"
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	args := []string{
		"--name", "etcdlocal",
		"--data-dir", filepath.Join(dir.Path(), "data"),
		"--listen-client-urls", s.Endpoint(),
		"--advertise-client-urls", s.Endpoint(),
		"--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "etcdlocal=" + peer,
		"--initial-cluster-state", "new",
		"--heartbeat-interval", ms(opts.HeartbeatInterval),
		"--election-timeout", ms(opts.ElectionTimeout),
		"--logger", "zap",
		"--log-outputs", "stderr",
		"--log-level", opts.LogLevel,
	}
	if opts.TLS {
		args = append(args, "--cert-file", s.tls.ServerCert, "--key-file", s.tls.ServerKey)
	}
	if opts.TLSClientAuth {
		args = append(args, "--client-cert-auth", "--trusted-ca-file", s.tls.CA)
	}
	args = append(args, opts.Args...)
	s.Server = localproc.NewServer(localproc.Spec{
		Name:   "etcd " + s.Addr(),
		Dir:    dir,
		Output: localproc.NewOutput(opts.Log, s.Addr()+": "),
		Command: func() localproc.Command {
			return localproc.Command{Path: bin, Args: args, Dir: dir.Path(), Env: cleanEnv()}
		},
		Ready: func(ctx context.Context) error { return HealthWith(ctx, s.health, s.Endpoint()) },
	})
	return s, nil
}

// cleanEnv drops ETCD_* variables: etcd reads every flag from them too, and
// one left in a developer's shell would silently change the server.
func cleanEnv() []string {
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") && !strings.HasPrefix(kv, "ETCDCTL_") {
			env = append(env, kv)
		}
	}
	return env
}

// Addr is the client address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.clientPort)) }

// Endpoint is the client URL, "http://127.0.0.1:PORT" ("https://" with
// Options.TLS), for clientv3's Endpoints, etcdctl's --endpoints, and the
// JSON gateway under /v3/.
func (s *Server) Endpoint() string {
	if s.tls.CA != "" {
		return "https://" + s.Addr()
	}
	return "http://" + s.Addr()
}

// CAFile is the PEM certificate of the CA that signed the server's TLS
// certificate (for --etcd-tls-ca and etcdctl's --cacert); "" without
// Options.TLS.
func (s *Server) CAFile() string { return s.tls.CA }

// ClientCertFiles are a client certificate and its key, PEM files signed by
// the server's CA (for --etcd-tls-cert and --etcd-tls-key); "" without
// Options.TLS.
func (s *Server) ClientCertFiles() (certFile, keyFile string) {
	return s.tls.ClientCert, s.tls.ClientKey
}

// ClientTLS is a client TLS configuration that trusts the server's CA and
// presents the client certificate of ClientCertFiles, so it works with
// Options.TLSClientAuth too; nil without Options.TLS.
func (s *Server) ClientTLS() *tls.Config {
	if s.tls.CA == "" {
		return nil
	}
	return s.tls.ClientTLS()
}

// HealthWith asks endpoint's /health through client and returns nil if etcd
// says it is healthy (it has a leader and serves reads). Plain HTTP, so the
// project needs no etcd client module just to know a server is up; for an
// https:// endpoint client trusts the server's CA and, if the server asks
// for one, shows a client certificate.
func HealthWith(ctx context.Context, client *http.Client, endpoint string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h); err != nil {
		return fmt.Errorf("/health: %s: %w", resp.Status, err)
	}
	if h.Health != "true" {
		return fmt.Errorf("/health: %s, health %q", resp.Status, h.Health)
	}
	return nil
}
