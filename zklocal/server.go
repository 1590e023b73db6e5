// Package zklocal runs real, throwaway Apache ZooKeeper servers (standalone
// or small ensembles) on loopback for tests and demos.
//
// It launches the JVM of an installed distribution ($ZOOKEEPER_HOME, else
// Debian's `zookeeper` package) rather than faking the protocol, because the
// whole point of zklockviz is to show what a real server does with lock
// queues: sequence numbers, session expiry, leader elections.
//
// Every server gets its own temporary directory, free loopback ports and a
// configuration tuned for speed (small tickTime, no fsync). The JVM is bound
// to the Go process with PR_SET_PDEATHSIG so it cannot outlive a crashed test.
package zklocal

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
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
	if o.TickTime == 0 {
		o.TickTime = 200 * time.Millisecond
	}
	if o.TickTime < time.Millisecond {
		return o, fmt.Errorf("zklocal: TickTime %v is below 1ms", o.TickTime)
	}
	if o.MinSessionTimeout == 0 {
		o.MinSessionTimeout = 2 * o.TickTime
	}
	if o.MaxSessionTimeout == 0 {
		o.MaxSessionTimeout = 60 * time.Second
	}
	if o.MaxSessionTimeout < o.MinSessionTimeout {
		return o, fmt.Errorf("zklocal: MaxSessionTimeout %v is below MinSessionTimeout %v",
			o.MaxSessionTimeout, o.MinSessionTimeout)
	}
	if o.LogLevel == "" {
		o.LogLevel = "WARN"
	}
	if o.TLSClientAuth {
		o.TLS = true
	}
	return o, nil
}

func (o Options) logSink() *syncWriter {
	if o.Log == nil {
		return nil
	}
	return &syncWriter{w: o.Log}
}

const (
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace = 3 * time.Second
	// startAttempts bounds retries when a port we picked was taken by
	// someone else between picking and the JVM binding it.
	startAttempts = 3
	pollInterval  = 50 * time.Millisecond
	mainClass     = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
)

// errPortInUse marks startup failures caused by a port collision, which are
// worth retrying with fresh ports.
var errPortInUse = errors.New("zklocal: port already in use")

var errClosed = errors.New("zklocal: server is closed")

// Server is one ZooKeeper JVM: a standalone server or an ensemble member.
// Its ports and data directory stay the same across Stop/Start.
type Server struct {
	id           int // myid; 0 for a standalone server
	dir          string
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
	out          *output

	mu     sync.Mutex
	proc   *process
	closed bool
}

// Start launches a standalone ZooKeeper on free loopback ports and waits
// until it serves requests. ctx bounds the startup only, not the server's
// lifetime; call Close when done.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	dist, err := findDistribution()
	if err != nil {
		return nil, err
	}
	logw := opts.logSink()
	for attempt := 1; ; attempt++ {
		s, err := newStandalone(dist, opts, logw)
		if err != nil {
			return nil, err
		}
		err = s.Start(ctx)
		if err == nil {
			return s, nil
		}
		_ = s.Close()
		if !errors.Is(err, errPortInUse) || attempt == startAttempts || ctx.Err() != nil {
			return nil, err
		}
	}
}

func newStandalone(dist distribution, opts Options, logw *syncWriter) (*Server, error) {
	dir, err := os.MkdirTemp("", "zklocal-*")
	if err != nil {
		return nil, fmt.Errorf("zklocal: create temp dir: %w", err)
	}
	ports, err := freePorts(3)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{
		dir:        dir,
		clientPort: ports[0],
		adminPort:  ports[1],
		dist:       dist,
		opts:       opts,
		out:        &output{log: logw},
	}
	if opts.TLS {
		s.securePort = ports[2]
		if s.tls, err = writeTLSFiles(dir, opts.TLSClientAuth); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.writeFiles(nil); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Addr is the client address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.clientPort)) }

// AdminURL is the AdminServer base URL; commands live under /commands/.
func (s *Server) AdminURL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.adminPort))
}

// ID is the server's myid in an ensemble, 0 for a standalone server.
func (s *Server) ID() int { return s.id }

// DataDir is the server's dataDir (snapshots and transaction logs).
func (s *Server) DataDir() string { return s.dataDir }

// Output returns the last lines the server process printed during its
// current or most recent run.
func (s *Server) Output() string { return s.out.String() }

func (s *Server) name() string {
	if s.id == 0 {
		return "zookeeper " + s.Addr()
	}
	return fmt.Sprintf("zookeeper member %d (%s)", s.id, s.Addr())
}

// Running reports whether the JVM is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.exited()
}

// Start launches the server again on the same ports and data directory and
// waits until it serves requests (for an ensemble member: until it has
// joined a quorum as leader or follower). It does nothing but wait if the
// server is already running.
func (s *Server) Start(ctx context.Context) error {
	p, fresh, err := s.launch()
	if err != nil {
		return err
	}
	if err := s.waitReady(ctx, p); err != nil {
		if fresh {
			// Don't leave a half-started JVM behind, but a server that
			// was already running is the caller's business.
			_ = s.stopProc(p, 0)
		}
		return err
	}
	return nil
}

// launch starts the JVM unless it is already running. fresh reports whether
// this call started it.
func (s *Server) launch() (p *process, fresh bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, errClosed
	}
	if s.proc != nil {
		if !s.proc.exited() {
			return s.proc, false, nil
		}
		s.proc = nil
	}
	s.out.reset()
	p, err = startProcess(s.dist.java, s.jvmArgs(), s.out)
	if err != nil {
		return nil, false, fmt.Errorf("zklocal: start %s: %w", s.name(), err)
	}
	s.proc = p
	return p, true, nil
}

// waitReady polls until ruok answers imok and srvr reports a serving mode,
// failing fast if the JVM exits.
func (s *Server) waitReady(ctx context.Context, p *process) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		if s.ready(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zklocal: %s not ready: %w; last output:\n%s", s.name(), ctx.Err(), s.out)
		case <-p.done:
			tail := s.out.String()
			if strings.Contains(tail, "Address already in use") {
				return fmt.Errorf("%w: %s exited during startup (%v); last output:\n%s", errPortInUse, s.name(), p.err, tail)
			}
			return fmt.Errorf("zklocal: %s exited during startup (%v); last output:\n%s", s.name(), p.err, tail)
		case <-t.C:
		}
	}
}

func (s *Server) ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	// ruok answers imok as soon as the client port is bound, long before
	// the database is loaded or a quorum exists, so it alone is not enough.
	if reply, err := FourLetter(ctx, s.Addr(), "ruok"); err != nil || reply != "imok" {
		return false
	}
	mode, err := Mode(ctx, s.Addr())
	if err != nil {
		return false
	}
	serving := mode == "leader" || mode == "follower" || mode == "observer"
	if s.id == 0 {
		serving = mode == "standalone"
	}
	if !serving {
		return false
	}
	if s.securePort != 0 {
		// The secure port is a second factory (Netty) that binds after the
		// plain one answers: wait until it accepts a TLS handshake too.
		d := tls.Dialer{Config: s.ClientTLS()}
		c, err := d.DialContext(ctx, "tcp", s.SecureAddr())
		if err != nil {
			return false
		}
		c.Close()
	}
	return true
}

// Stop terminates the JVM (SIGTERM, then SIGKILL after a grace period) and
// waits for it to exit. Stopping a stopped server is a no-op.
func (s *Server) Stop() error { return s.stop(stopGrace) }

// Kill terminates the JVM with SIGKILL at once, like a machine crash (minus
// the page cache: with forceSync=no written data survives anyway).
func (s *Server) Kill() error { return s.stop(0) }

func (s *Server) stop(grace time.Duration) error {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return s.stopProc(p, grace)
}

func (s *Server) stopProc(p *process, grace time.Duration) error {
	err := p.stop(grace)
	s.mu.Lock()
	if s.proc == p {
		s.proc = nil
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("zklocal: stop %s: %w", s.name(), err)
	}
	return nil
}

// Close stops the server and removes its temporary directory. The server
// cannot be started again.
func (s *Server) Close() error {
	err := s.Stop()
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if already {
		return err
	}
	if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
		err = fmt.Errorf("zklocal: remove %s: %w", s.dir, rerr)
	}
	return err
}

func (s *Server) jvmArgs() []string {
	args := []string{
		// Tuned for many short-lived servers on a small shared box.
		"-Xms32m", "-Xmx256m",
		"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
		// Otherwise every JVM leaves an hsperfdata file behind when killed.
		"-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Djava.awt.headless=true",
		"-Dlog4j.configuration=file:" + filepath.Join(s.dir, "log4j.properties"),
		"-Dlogback.configurationFile=" + filepath.Join(s.dir, "logback.xml"),
		"-Dzookeeper.log.dir=" + s.dir,
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

// writeFiles writes zoo.cfg, myid and logging configs. peers is nil for a
// standalone server.
func (s *Server) writeFiles(peers []*Server) error {
	s.dataDir = filepath.Join(s.dir, "data")
	s.cfgPath = filepath.Join(s.dir, "zoo.cfg")
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		return fmt.Errorf("zklocal: create data dir: %w", err)
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	cfg := [][2]string{
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
	if s.securePort != 0 {
		cfg = append(cfg, s.tls.config(s.securePort)...)
	}
	if peers != nil {
		cfg = append(cfg,
			[2]string{"standaloneEnabled", "false"},
			[2]string{"reconfigEnabled", "false"},
		)
		for _, p := range peers {
			cfg = append(cfg, [2]string{
				"server." + strconv.Itoa(p.id),
				fmt.Sprintf("127.0.0.1:%d:%d", p.peerPort, p.electionPort),
			})
		}
		if err := os.WriteFile(filepath.Join(s.dataDir, "myid"), []byte(strconv.Itoa(s.id)+"\n"), 0o644); err != nil {
			return fmt.Errorf("zklocal: write myid: %w", err)
		}
	}
	extraKeys := make([]string, 0, len(s.opts.ExtraConfig))
	for k := range s.opts.ExtraConfig {
		extraKeys = append(extraKeys, k)
	}
	slices.Sort(extraKeys)
	for _, k := range extraKeys {
		i := slices.IndexFunc(cfg, func(kv [2]string) bool { return kv[0] == k })
		if i >= 0 {
			cfg[i][1] = s.opts.ExtraConfig[k]
		} else {
			cfg = append(cfg, [2]string{k, s.opts.ExtraConfig[k]})
		}
	}
	var b strings.Builder
	for _, kv := range cfg {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	if err := os.WriteFile(s.cfgPath, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("zklocal: write zoo.cfg: %w", err)
	}

	// Both backends get a config: Debian's 3.8 uses log4j 1.2, upstream
	// 3.8+ binary distributions use logback. Logs go to stdout, never to
	// files.
	level := strings.ToUpper(s.opts.LogLevel)
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
	if err := os.WriteFile(filepath.Join(s.dir, "log4j.properties"), []byte(log4j), 0o644); err != nil {
		return fmt.Errorf("zklocal: write log4j.properties: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "logback.xml"), []byte(logback), 0o644); err != nil {
		return fmt.Errorf("zklocal: write logback.xml: %w", err)
	}
	return nil
}

// freePorts returns n distinct free loopback ports. They are only free at
// the moment of the call; callers retry on collision.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("zklocal: find free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// process is one run of a JVM.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been reaped
	err  error         // Wait's result, valid after done is closed
}

func startProcess(java string, args []string, out io.Writer) (*process, error) {
	p := &process{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		defer close(p.done)
		// Pdeathsig fires when the *thread* that forked the child exits,
		// not the process (golang/go#27505). Pin this goroutine to its
		// thread for the JVM's whole life; it is deliberately never
		// unlocked, so the thread only goes away after the JVM is reaped.
		runtime.LockOSThread()
		cmd := exec.Command(java, args...)
		cmd.Stdout = out
		cmd.Stderr = out
		// Its own process group: a Ctrl-C in the terminal goes to the
		// foreground group, and the JVM must outlive it until the Go side
		// has cleaned up (the simulator deletes its sandbox on the way out).
		// Pdeathsig still takes it down if the Go side dies first.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		// Don't hang in Wait if something inherited the output pipe.
		cmd.WaitDelay = time.Second
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.cmd = cmd
		started <- nil
		p.err = cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs and waits for exit.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	if grace > 0 {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("send SIGTERM: %w", err)
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.done:
			return nil
		case <-t.C:
		}
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("send SIGKILL: %w", err)
	}
	<-p.done
	return nil
}
