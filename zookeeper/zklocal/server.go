// Package zklocal runs real, throwaway Apache ZooKeeper servers (standalone
// or small ensembles) on loopback for tests and demos.
//
// It launches the JVM of an installed distribution ($ZOOKEEPER_HOME, else
// Debian's `zookeeper` package) rather than faking the protocol, because the
// whole point of zklockviz is to show what a real server does with lock
// queues: sequence numbers, session expiry, leader elections.
//
// Every server gets its own temporary directory, free loopback ports and a
// configuration tuned for speed (small tickTime, no fsync). The process
// machinery is package localproc's: the JVM runs in its own process group (a
// terminal's Ctrl-C reaches the Go side first, which cleans up), dies with
// this process (PR_SET_PDEATHSIG), and its directory is removed even after
// kill -9.
package zklocal

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/localproc"
)

// Options configure a server or every member of an ensemble. The zero value
// is usable.
type Options struct {
	// TickTime is ZooKeeper's basic time unit. Default 200ms: small enough
	// that session expiry and elections happen quickly in tests.
	TickTime time.Duration
	// MinSessionTimeout is the smallest session timeout the server grants.
	// Default 2*TickTime (ZooKeeper's own default, spelled out).
	MinSessionTimeout time.Duration
	// MaxSessionTimeout is the largest session timeout the server grants.
	// Default 60s.
	MaxSessionTimeout time.Duration
	// Log receives the server's stdout and stderr, line by line (ensemble
	// members prefixed with "zkN: "). Default: discarded.
	Log io.Writer
	// LogLevel is the server's log threshold (log4j/logback level name).
	// Default "WARN".
	LogLevel string
	// ExtraConfig adds or overrides zoo.cfg entries.
	ExtraConfig map[string]string
	// JVMFlags are appended to the default JVM flags.
	JVMFlags []string
	// TLS adds a TLS client port (secureClientPort, Netty) beside the plain
	// one, with a throwaway CA: see Server.SecureAddr and Server.ClientTLS.
	// Standalone servers only.
	TLS bool
	// TLSClientAuth makes the TLS port refuse clients without a certificate
	// from the server's CA (ssl.clientAuth=need instead of want); see
	// Server.ClientCertFiles. It implies TLS.
	TLSClientAuth bool
}

func (o Options) withDefaults() (Options, error) {
	o.TickTime = cmp.Or(o.TickTime, 200*time.Millisecond)
	if o.TickTime < time.Millisecond {
		return o, fmt.Errorf("zklocal: TickTime %v is below 1ms", o.TickTime)
	}
	o.MinSessionTimeout = cmp.Or(o.MinSessionTimeout, 2*o.TickTime)
	o.MaxSessionTimeout = cmp.Or(o.MaxSessionTimeout, 60*time.Second)
	if o.MaxSessionTimeout < o.MinSessionTimeout {
		return o, fmt.Errorf("zklocal: MaxSessionTimeout %v is below MinSessionTimeout %v",
			o.MaxSessionTimeout, o.MinSessionTimeout)
	}
	o.LogLevel = cmp.Or(o.LogLevel, "WARN")
	if o.TLSClientAuth {
		o.TLS = true
	}
	return o, nil
}

// prepare is what Start and StartEnsemble need before their first attempt:
// the options with defaults, the installation, and a log writer several
// JVMs can share.
func (o Options) prepare() (Options, distribution, error) {
	o, err := o.withDefaults()
	if err != nil {
		return o, distribution{}, err
	}
	dist, err := findDistribution()
	if err != nil {
		return o, distribution{}, err
	}
	o.Log = localproc.NewSyncWriter(o.Log)
	return o, dist, nil
}

const (
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace    = 3 * time.Second
	pollInterval = 50 * time.Millisecond
	mainClass    = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
)

// Server is one ZooKeeper JVM: a standalone server or an ensemble member.
// Its ports and data directory stay the same across Stop/Start. Start waits
// until it serves requests (an ensemble member: until it has joined a quorum
// as leader or follower); Kill is a machine crash minus the page cache (with
// forceSync=no written data survives anyway); Close stops it and removes its
// directory.
type Server struct {
	*localproc.Server // Name, Dir, Pid, Running, Output, Start, Stop, Kill, Close

	id           int // myid; 0 for a standalone server
	dataDir      string
	cfgPath      string
	clientPort   int
	adminPort    int
	peerPort     int
	electionPort int
	securePort   int      // 0 without Options.TLS
	tls          tlsFiles // with Options.TLS
	dist         distribution
	opts         Options
}

// Start launches a standalone ZooKeeper on free loopback ports and waits
// until it serves requests. ctx bounds the startup only, not the server's
// lifetime; call Close when done.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts, dist, err := opts.prepare()
	if err != nil {
		return nil, err
	}
	return localproc.Launch(ctx, func(context.Context) (*Server, error) {
		return newStandalone(dist, opts)
	})
}

func newStandalone(dist distribution, opts Options) (*Server, error) {
	ports, err := localproc.FreePorts(3)
	if err != nil {
		return nil, err
	}
	s := &Server{clientPort: ports[0], adminPort: ports[1], dist: dist, opts: opts}
	if opts.TLS {
		s.securePort = ports[2]
	}
	if err := s.init("zklocal", "", nil); err != nil {
		return nil, err
	}
	return s, nil
}

// init gives s its directory (prefix-RANDOM, reaped if this process dies),
// writes its files there and makes it a localproc.Server. peers is nil for
// a standalone server.
func (s *Server) init(prefix, logPrefix string, peers []*Server) error {
	dir, err := localproc.NewDir(prefix, "")
	if err != nil {
		return fmt.Errorf("zklocal: %w", err)
	}
	if s.securePort != 0 {
		s.tls, err = writeTLSFiles(dir.Path(), s.opts.TLSClientAuth)
	}
	if err == nil {
		err = s.writeFiles(dir.Path(), peers)
	}
	if err != nil {
		return errors.Join(err, dir.Remove())
	}
	s.Server = localproc.NewServer(localproc.Spec{
		Name:      s.name(),
		Dir:       dir,
		Output:    localproc.NewOutput(s.opts.Log, logPrefix),
		StopGrace: stopGrace,
		Command: func() localproc.Command {
			return localproc.Command{Path: s.dist.java, Args: s.jvmArgs(dir.Path())}
		},
		Ready: s.ready,
	})
	return nil
}

// Addr is the client address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.clientPort)) }

// AdminURL is the AdminServer base URL; commands live under /commands/.
func (s *Server) AdminURL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.adminPort))
}

func (s *Server) name() string {
	if s.id == 0 {
		return "zookeeper " + s.Addr()
	}
	return fmt.Sprintf("zookeeper member %d (%s)", s.id, s.Addr())
}

// ready reports nil once ruok answers imok and srvr reports a serving mode
// (and the TLS port, if any, completes a handshake).
func (s *Server) ready(ctx context.Context) error {
	// ruok answers imok as soon as the client port is bound, long before
	// the database is loaded or a quorum exists, so it alone is not enough.
	reply, err := FourLetter(ctx, s.Addr(), "ruok")
	if err != nil {
		return err
	}
	if reply != "imok" {
		return fmt.Errorf("ruok answered %q", reply)
	}
	mode, err := Mode(ctx, s.Addr())
	if err != nil {
		return err
	}
	serving := mode == "leader" || mode == "follower" || mode == "observer"
	if s.id == 0 {
		serving = mode == "standalone"
	}
	if !serving {
		return fmt.Errorf("mode %q", mode)
	}
	if s.securePort != 0 {
		// The secure port is a second factory (Netty) that binds after the
		// plain one answers: wait until it accepts a TLS handshake too.
		d := tls.Dialer{Config: s.ClientTLS()}
		c, err := d.DialContext(ctx, "tcp", s.SecureAddr())
		if err != nil {
			return err
		}
		c.Close()
	}
	return nil
}

func (s *Server) jvmArgs(dir string) []string {
	args := []string{
		// Tuned for many short-lived servers on a small shared box.
		"-Xms32m", "-Xmx256m",
		"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
		// Otherwise every JVM leaves an hsperfdata file behind when killed.
		"-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Djava.awt.headless=true",
		"-Dlog4j.configuration=file:" + filepath.Join(dir, "log4j.properties"),
		"-Dlogback.configurationFile=" + filepath.Join(dir, "logback.xml"),
		"-Dzookeeper.log.dir=" + dir,
		"-Dzookeeper.jmx.log4j.disable=true",
		// A JVM killed before its first snapshot leaves a txn log without
		// one; since 3.5 the server then refuses to start (ZOOKEEPER-3056).
		"-Dzookeeper.snapshot.trust.empty=true",
	}
	args = append(args, s.opts.JVMFlags...)
	return append(args,
		"-cp", strings.Join(s.dist.classpath, string(filepath.ListSeparator)),
		mainClass, s.cfgPath)
}

// writeFiles writes zoo.cfg, myid and logging configs into dir. peers is nil for a
// standalone server.
func (s *Server) writeFiles(dir string, peers []*Server) error {
	s.dataDir = filepath.Join(dir, "data")
	s.cfgPath = filepath.Join(dir, "zoo.cfg")
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		return fmt.Errorf("zklocal: create data dir: %w", err)
	}
	cfg := s.baseConfig()
	if s.securePort != 0 {
		cfg = append(cfg, s.tls.config(s.securePort)...)
	}
	if peers != nil {
		cfg = append(cfg, ensembleConfig(peers)...)
		if err := writeFile(filepath.Join(s.dataDir, "myid"), strconv.Itoa(s.id)+"\n"); err != nil {
			return err
		}
	}
	cfg = withExtraConfig(cfg, s.opts.ExtraConfig)
	var b strings.Builder
	for _, kv := range cfg {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	if err := writeFile(s.cfgPath, b.String()); err != nil {
		return err
	}
	return writeLogConfigs(dir, s.opts.LogLevel)
}

// baseConfig is zoo.cfg's key=value pairs common to every server, in file
// order.
func (s *Server) baseConfig() [][2]string {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	return [][2]string{
		{"tickTime", ms(s.opts.TickTime)},
		// Loopback peers sync in milliseconds; keep limits short so a dead
		// leader is noticed quickly, but not so short that a loaded 2-core
		// box trips them.
		{"initLimit", "10"},
		{"syncLimit", "5"},
		{"dataDir", s.dataDir},
		{"clientPort", strconv.Itoa(s.clientPort)},
		{"clientPortAddress", "127.0.0.1"},
		{"minSessionTimeout", ms(s.opts.MinSessionTimeout)},
		{"maxSessionTimeout", ms(s.opts.MaxSessionTimeout)},
		{"maxClientCnxns", "0"},
		{"forceSync", "no"},
		{"preAllocSize", "1024"},
		{"snapCount", "1000"},
		{"autopurge.purgeInterval", "0"},
		{"4lw.commands.whitelist", "*"},
		{"admin.enableServer", "true"},
		{"admin.serverAddress", "127.0.0.1"},
		{"admin.serverPort", strconv.Itoa(s.adminPort)},
	}
}

// ensembleConfig is the quorum part of an ensemble member's zoo.cfg: every
// peer's quorum and election ports.
func ensembleConfig(peers []*Server) [][2]string {
	cfg := [][2]string{
		{"standaloneEnabled", "false"},
		{"reconfigEnabled", "false"},
	}
	for _, p := range peers {
		cfg = append(cfg, [2]string{
			"server." + strconv.Itoa(p.id),
			fmt.Sprintf("127.0.0.1:%d:%d", p.peerPort, p.electionPort),
		})
	}
	return cfg
}

// withExtraConfig overrides keys of cfg in place and appends new ones, in
// key order so that zoo.cfg is the same from run to run.
func withExtraConfig(cfg [][2]string, extra map[string]string) [][2]string {
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		i := slices.IndexFunc(cfg, func(kv [2]string) bool { return kv[0] == k })
		if i >= 0 {
			cfg[i][1] = extra[k]
		} else {
			cfg = append(cfg, [2]string{k, extra[k]})
		}
	}
	return cfg
}

// writeLogConfigs writes both backends' configs: Debian's 3.8 uses log4j
// 1.2, upstream 3.8+ binary distributions use logback. Logs go to stdout,
// never to files.
func writeLogConfigs(dir, logLevel string) error {
	level := strings.ToUpper(logLevel)
	log4j := fmt.Sprintf(`log4j.rootLogger=%s, CONSOLE
log4j.logger.org.eclipse.jetty=ERROR
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%%d{ISO8601} %%-5p [%%t:%%C{1}@%%L] - %%m%%n
`, level)
	logback := fmt.Sprintf(`<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%%d{ISO8601} %%-5level [%%thread:%%logger{0}] - %%msg%%n</pattern></encoder>
  </appender>
  <logger name="org.eclipse.jetty" level="ERROR"/>
  <root level="%s"><appender-ref ref="CONSOLE"/></root>
</configuration>
`, level)
	if err := writeFile(filepath.Join(dir, "log4j.properties"), log4j); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "logback.xml"), logback)
}

// writeFile writes a small config file, naming it in the error.
func writeFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return fmt.Errorf("zklocal: write %s: %w", filepath.Base(path), err)
	}
	return nil
}
