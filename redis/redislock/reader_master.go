package redislock

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Key types as TYPE names them.
const (
	typeNone   = "none"
	typeString = "string"
	typeHash   = "hash"
)

// liveMaster is one Redis server the reader reads, with what it last said.
type liveMaster struct {
	addr   string
	client *redis.Client
	// keyspace prefixes a key's keyspace-event channel in the database
	// read (Config.DB).
	keyspace string

	mu       sync.Mutex
	errs     map[string]error // by source (a lock's name, or health), described
	answered bool             // a command has come back, well or not
	logged   []string         // the problems logged since it last read well
	notify   bool             // keyspace events for the watched locks arrive
	pubsub   *redis.PubSub
	// runID is INFO's run_id, read again after the master failed to
	// answer: a new one means the server restarted, and without
	// persistence lost every key. Empty while unknown; infoRefused when
	// the ACL refuses INFO (a restart is then only suspected).
	runID       string
	runIDStale  bool
	infoRefused bool
}

// keyRead is one lock key as one master holds it.
type keyRead struct {
	addr string
	err  error
	typ  string
	// pttl is PTTL's answer: ms left, -1 no expiry, -2 no key.
	pttl int64
	// value: the string lock's token.
	value string
	// fields: the Redisson hash, "<client id>:<thread id>" → count.
	fields map[string]string
	// waiters: subscribers of the Redisson unlock channel.
	waiters int64
	// runID is the server's run id at the read; empty when not known.
	runID string
}

// redissonChannel is the channel Redisson publishes a lock's release on
// and its waiters subscribe to (RedissonLock.getChannelName, prefixName).
func redissonChannel(name string) string {
	if strings.Contains(name, "{") {
		return "redisson_lock__channel:" + name
	}
	return "redisson_lock__channel:{" + name + "}"
}

// read reads one lock key: TYPE, PTTL and its value in one pipeline,
// the value read as the type seen last time (guess); when the type has
// changed, a second pipeline reads the value as what it now is. Every
// command is a read: TYPE, PTTL, GET, HGETALL, PUBSUB NUMSUB.
func (m *liveMaster) read(ctx context.Context, name, guess string) (keyRead, error) {
	kr, err := m.readAs(ctx, name, guess)
	if err == nil && kr.typ != guess && (kr.typ == typeString || kr.typ == typeHash) {
		kr, err = m.readAs(ctx, name, kr.typ)
	}
	if err == nil {
		// After the key: a connection renewed by its reads (a restart)
		// asks the new server's.
		kr.runID, err = m.readRunID(ctx)
	}
	return kr, err
}

// readRunID is the server's run id: read with INFO server at the first
// read and at the first after a failure (a restart comes with one), else
// the one read then. INFO refused (an ACL without +info, a server that
// renamed it) leaves it unknown ("") for good.
func (m *liveMaster) readRunID(ctx context.Context) (string, error) {
	m.mu.Lock()
	id, ask := m.runID, (m.runID == "" || m.runIDStale) && !m.infoRefused
	m.mu.Unlock()
	if !ask {
		return id, nil
	}
	info, err := m.client.Info(ctx, "server").Result()
	m.mu.Lock()
	defer m.mu.Unlock()
	var refused redis.Error // the server's answer: NOPERM, or INFO renamed away
	switch {
	case errors.As(err, &refused):
		m.infoRefused, m.runID = true, ""
		return "", nil
	case err != nil:
		return "", err
	}
	m.runID, m.runIDStale = infoField(info, "run_id"), false
	return m.runID, nil
}

// runIDMayChange has the next read ask the run id again.
func (m *liveMaster) runIDMayChange() {
	m.mu.Lock()
	m.runIDStale = true
	m.mu.Unlock()
}

// infoField is one field of INFO's "name:value" lines.
func infoField(info, name string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

func (m *liveMaster) readAs(ctx context.Context, name, as string) (keyRead, error) {
	pipe := m.client.Pipeline()
	typ := pipe.Do(ctx, "TYPE", name)
	pttl := pipe.Do(ctx, "PTTL", name)
	var val, numsub *redis.Cmd
	switch as {
	case typeString:
		val = pipe.Do(ctx, "GET", name)
	case typeHash:
		val = pipe.Do(ctx, "HGETALL", name)
		numsub = pipe.Do(ctx, "PUBSUB", "NUMSUB", redissonChannel(name))
	}
	var kr keyRead
	// Exec's error is the first command's that failed, or the
	// connection's (which leaves no error on the commands); a missing
	// key or a type changed since TYPE is no failure.
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return kr, err
	}
	var err error
	if kr.typ, err = typ.Text(); err != nil {
		return kr, err
	}
	if kr.pttl, err = pttl.Int64(); err != nil {
		return kr, err
	}
	if kr.typ != as || val == nil {
		return kr, nil // the caller reads again as kr.typ, or it is no lock
	}
	if err := val.Err(); err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return kr, err
	}
	switch as {
	case typeString:
		kr.value, _ = val.Text()
	case typeHash:
		kr.fields = pairs(val.Val())
		if kr.waiters, err = numsubCount(numsub); err != nil {
			return kr, err
		}
	}
	return kr, nil
}

func isWrongType(err error) bool { return strings.HasPrefix(err.Error(), "WRONGTYPE") }

// pairs reads HGETALL's RESP2 answer, a flat field, value list.
func pairs(v any) map[string]string {
	list, _ := v.([]any)
	out := make(map[string]string, len(list)/2)
	for i := 0; i+1 < len(list); i += 2 {
		out[fmt.Sprint(list[i])] = fmt.Sprint(list[i+1])
	}
	return out
}

// numsubCount reads PUBSUB NUMSUB's answer for one channel.
func numsubCount(c *redis.Cmd) (int64, error) {
	list, err := c.Slice()
	if err != nil {
		return 0, err
	}
	if len(list) != 2 {
		return 0, fmt.Errorf("PUBSUB NUMSUB answered %v", list)
	}
	switch n := list[1].(type) {
	case int64:
		return n, nil
	case string:
		return strconv.ParseInt(n, 10, 64)
	}
	return 0, fmt.Errorf("PUBSUB NUMSUB answered %v", list)
}

// note records the outcome of a source's commands (a lock's reads, or the
// health ping) and returns the described error. The master's error is
// every source's: a NOPERM on one lock's PUBSUB NUMSUB does not come and
// go as another lock's reads succeed. It logs each problem once until the
// master reads well again, and then that it does.
func (m *liveMaster) note(ctx context.Context, log *slog.Logger, source string, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		err = describe(m.addr, err)
	}
	m.mu.Lock()
	if err == nil {
		delete(m.errs, source)
	} else {
		m.errs[source] = err
		m.runIDStale = true // a restart may follow
	}
	first := !m.answered
	m.answered = true
	var logErr, logBack bool
	switch {
	case err != nil && !slices.Contains(m.logged, err.Error()):
		m.logged, logErr = append(m.logged, err.Error()), true
	case len(m.errs) == 0 && (len(m.logged) > 0 || first):
		m.logged, logBack = nil, true
	}
	m.mu.Unlock()
	if logErr {
		log.Error("redis master not readable", "addr", m.addr, "err", err)
	}
	if logBack {
		log.Info("redis master readable", "addr", m.addr)
	}
	return err
}

// forget drops a source that reads no more (an unwatched lock).
func (m *liveMaster) forget(source string) {
	m.mu.Lock()
	delete(m.errs, source)
	m.mu.Unlock()
}

// error is the master's problem now, nil when every source reads.
func (m *liveMaster) error() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.errorLocked()
}

// errorLocked is one source's error, the same one each time (the first
// source by name), so Err does not flicker between them.
func (m *liveMaster) errorLocked() error {
	var err error
	first := ""
	for s, e := range m.errs {
		if err == nil || s < first {
			first, err = s, e
		}
	}
	return err
}

func (m *liveMaster) checked() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.answered
}

// describe says what went wrong reaching addr and what to check, naming
// the service and the address, as Reader.Err promises.
func describe(addr string, err error) error {
	msg := err.Error()
	var check string
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recErr tls.RecordHeaderError
	switch {
	case strings.HasPrefix(msg, "WRONGPASS"), strings.HasPrefix(msg, "NOAUTH"),
		strings.Contains(msg, "invalid password"), strings.Contains(msg, "without any password configured"):
		check = "check --redis-user and --redis-password (env ZKLOCKVIZ_REDIS_USER, ZKLOCKVIZ_REDIS_PASSWORD)"
	case strings.HasPrefix(msg, "NOPERM"):
		check = "the user lacks a read command zklockviz needs: grant it the read-only ACL in docs/services.md " +
			"(+type +pttl +get +hgetall +pubsub|numsub +ping +info, and +select with --redis-db)"
	case strings.Contains(msg, "DB index is out of range"):
		check = "--redis-db is past the server's databases (its databases setting, 16 by default; Redis Cluster has database 0 only)"
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr):
		check = "the server's TLS certificate is not trusted: check --redis-tls-ca and the name in --redis"
	case errors.As(err, &recErr), strings.Contains(msg, "tls: "):
		check = "TLS handshake failed: check --redis-tls (is the port a TLS port?) and --redis-tls-cert/--redis-tls-key"
	case strings.Contains(msg, "connection reset by peer"), strings.HasSuffix(msg, "EOF"):
		check = "the server closed the connection: a TLS port without --redis-tls, or a full maxclients?"
	case errors.As(err, &netErr):
		check = "check that the server is up and that --redis names it (HOST:PORT)"
	default:
		check = "check the server's log"
	}
	return fmt.Errorf("redis %s: %s: %s", addr, msg, check)
}
