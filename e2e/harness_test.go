// Package e2e drives zklockviz the way a person does: the real binary against
// a real ZooKeeper, looked at through a real (headless) Chromium.
//
// One ZooKeeper and one Chromium serve the whole package; each test starts
// its own zklockviz server and opens its own tab. Without ZooKeeper or
// Chromium the tests skip, and fail when CI=true.
package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
)

const chromiumPath = "/usr/bin/chromium"

// waitFor bounds every wait for something to show on screen. It is a
// deadline for a stuck test, not a speed requirement.
const waitFor = 45 * time.Second

var env struct {
	once    sync.Once
	err     error // why the environment could not be set up
	missing bool  // err is about something not installed
	zk      *zklocal.Server
	bin     string
	browser context.Context
	close   []func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(env.close) - 1; i >= 0; i-- {
		env.close[i]()
	}
	os.Exit(code)
}

// need sets the environment up on first use and returns nothing: it fails or
// skips t when something is missing.
func need(t testing.TB) {
	t.Helper()
	env.once.Do(setup)
	if env.err == nil {
		return
	}
	if env.missing && os.Getenv("CI") != "true" {
		t.Skip(env.err)
	}
	t.Fatal(env.err)
}

func setup() {
	if _, err := os.Stat(chromiumPath); err != nil {
		env.err, env.missing = fmt.Errorf("e2e: chromium not found at %s (Debian/Ubuntu: apt-get install chromium): %w", chromiumPath, err), true
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	dir, err := os.MkdirTemp("", "zklockviz-e2e-")
	if err != nil {
		env.err = err
		return
	}
	env.close = append(env.close, func() { os.RemoveAll(dir) })

	// Build the binary while ZooKeeper starts.
	env.bin = filepath.Join(dir, "zklockviz")
	built := make(chan error, 1)
	go func() {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", env.bin, "./cmd/zklockviz")
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("e2e: go build ./cmd/zklockviz: %w\n%s", err, out)
		}
		built <- err
	}()

	s, err := zklocal.Start(ctx, zklocal.Options{})
	if err != nil {
		env.err, env.missing = fmt.Errorf("e2e: start ZooKeeper: %w", err), errors.Is(err, zklocal.ErrNotInstalled)
		<-built
		return
	}
	env.zk = s
	env.close = append(env.close, func() { s.Close() })
	if err := <-built; err != nil {
		env.err = err
		return
	}

	userData := filepath.Join(dir, "chromium")
	actx, acancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(userData),
		chromedp.WindowSize(1440, 900),
	)
	bctx, bcancel := chromedp.NewContext(actx)
	// Start the browser now, so a broken Chromium shows here and not as a
	// confusing failure in the first test.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		bcancel()
		acancel()
		env.err = fmt.Errorf("e2e: start chromium: %w", err)
		return
	}
	env.browser = bctx
	env.close = append(env.close, acancel, bcancel)
}

// server is one running zklockviz.
type server struct {
	URL string
	cmd *exec.Cmd
	out *logTail
}

type logTail struct {
	mu    sync.Mutex
	lines []string
	all   bool // keep every line from now on (a goroutine dump)
}

func (l *logTail) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
	if len(l.lines) > 200 && !l.all {
		l.lines = l.lines[len(l.lines)-200:]
	}
}

func (l *logTail) keepAll() {
	l.mu.Lock()
	l.all = true
	l.mu.Unlock()
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(compactDump(l.lines), "\n")
}

// compactDump keeps, of a goroutine dump (after "SIGQUIT: quit"), the
// goroutines with a frame in zklockviz's own code: the runtime's and the
// libraries' idle ones are most of a dump and would push a test's other
// failures out of a CI log that shows its beginning and end.
func compactDump(lines []string) []string {
	start := slices.Index(lines, "SIGQUIT: quit")
	if start < 0 {
		return lines
	}
	out := slices.Clone(lines[:start+1])
	left := 0
	for rest := lines[start+1:]; len(rest) > 0; {
		end := slices.Index(rest, "")
		if end < 0 {
			end = len(rest)
		}
		block := rest[:end]
		rest = rest[min(end+1, len(rest)):]
		if len(block) == 0 || !strings.HasPrefix(block[0], "goroutine ") {
			continue
		}
		if !slices.ContainsFunc(block, func(s string) bool { return strings.Contains(s, "zklockviz/zklockviz/") }) {
			left++
			continue
		}
		for _, l := range block {
			// The frame and stack pointers say nothing a reader can use.
			l, _, _ = strings.Cut(l, " fp=")
			out = append(out, l)
		}
		out = append(out, "")
	}
	return append(out, fmt.Sprintf("(%d goroutines with no frame in zklockviz left out)", left))
}

var listening = regexp.MustCompile(`listening on (http://[^\s"]+)`)

// startServer runs `zklockviz serve --zk <zk> --addr 127.0.0.1:0 args...`
// and waits for the address it prints.
func startServer(t testing.TB, args ...string) *server {
	t.Helper()
	return startServerOn(t, env.zk, args...)
}

// startServerOn is startServer against another ZooKeeper: a test that stops
// and restarts ZooKeeper does it to a server of its own, so the package's
// one server and the other tests' sessions on it are left alone.
func startServerOn(t testing.TB, zks *zklocal.Server, args ...string) *server {
	t.Helper()
	// Each server records its own history, not into the home directory.
	// A nil zks is a server started without ZooKeeper (no --zk).
	all := []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}
	if zks != nil {
		all = append(all, "--zk", zks.Addr())
	}
	all = append(all, args...)
	cmd := exec.Command(env.bin, all...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", env.bin, err)
	}
	s := &server{cmd: cmd, out: &logTail{}}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		pw.Close()
		close(exited)
	}()
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.out.add(line)
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case url <- strings.TrimSuffix(m[1], "/"):
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() {
		// A failed test gets the server's goroutines (SIGQUIT makes the Go
		// runtime print them and exit): what it was stuck on, if anything.
		sig := os.Interrupt
		if t.Failed() {
			s.out.keepAll()
			sig = syscall.SIGQUIT
		}
		cmd.Process.Signal(sig)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("zklockviz %s output:\n%s", strings.Join(all, " "), s.out)
		}
	})
	select {
	case s.URL = <-url:
	case <-exited:
		t.Fatalf("zklockviz %s exited before listening:\n%s", strings.Join(all, " "), s.out)
	case <-time.After(waitFor):
		t.Fatalf("zklockviz %s printed no 'listening on' line:\n%s", strings.Join(all, " "), s.out)
	}
	return s
}

// tab opens a fresh browser tab for t and collects its console.
type tab struct {
	t       testing.TB
	ctx     context.Context
	console *logTail

	mu       sync.Mutex
	noisy    []string         // errors, warnings and exceptions, with where they came from
	expected []*regexp.Regexp // messages the test provokes on purpose (expectConsole)
	flushed  chan struct{}    // closed when the end-of-test marker came through
	// done checks the console and closes the tab, once: at the test's end,
	// or before it (close).
	done func()
}

// close checks the tab's console and closes the tab before the test ends:
// a benchmark that opens a tab per load closes each once it is measured,
// so that the next load is a page opened alone, not one beside the tabs
// before it.
func (tb *tab) close() { tb.done() }

// expectConsole declares that the test provokes a console message matching
// pattern on purpose, and why. It is not an allow-list: the test then fails
// if no such message appears. Use it only for what a page cannot keep out of
// the console, such as Chromium's "Failed to load resource" for a fetch()
// that the server rightly answers with an error status.
func (tb *tab) expectConsole(pattern, why string) {
	tb.t.Helper()
	if why == "" {
		tb.t.Fatalf("expectConsole(%q): say why the page cannot avoid it", pattern)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.expected = append(tb.expected, regexp.MustCompile(pattern))
}

// consoleEnd is logged at the end of each test: console messages arrive in
// order, so once it is seen every earlier message has been too.
const consoleEnd = "zklockviz-e2e: end of the test's console"

// newTab opens a tab and fails t at its end if the page logged any error or
// warning, or threw: a page that works has a quiet console, whatever a test
// looks at. Messages come from the console API, the browser's own log (failed
// requests and sockets, deprecations) and uncaught exceptions. Open the tab
// after starting the server it looks at: cleanups run last-first, so the
// console is then checked while the server still runs.
// opts may give the tab a browser context of its own
// (chromedp.WithNewBrowserContext): another browser, with its own storage.
func newTab(t testing.TB, opts ...chromedp.ContextOption) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(env.browser, opts...)
	ctx, tcancel := context.WithTimeout(ctx, 5*time.Minute)
	tb := &tab{t: t, ctx: ctx, console: &logTail{}, flushed: make(chan struct{})}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleDebug && m.Text == consoleEnd {
				close(tb.flushed)
				continue
			}
			tb.console.add(m.String())
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException, "assert":
				where := m.URL
				if where != "" {
					where = fmt.Sprintf(" (%s:%d)", where, m.Line+1)
				}
				tb.mu.Lock()
				tb.noisy = append(tb.noisy, m.String()+where)
				tb.mu.Unlock()
			}
		}
	}()
	tb.done = sync.OnceFunc(func() {
		tb.checkConsole()
		if t.Failed() {
			t.Logf("browser console:\n%s", tb.console)
			if txt, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 3000) : ''`)); err == nil {
				t.Logf("page text:\n%s", txt)
			}
		}
		tcancel()
		cancel()
	})
	t.Cleanup(tb.done)
	return tb
}

// checkConsole fails the test if the tab's console had an error, a warning
// or an exception.
func (tb *tab) checkConsole() {
	tb.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		// The page may be between two documents (a click on a link): retry.
		_, err := chromedp.Run(tb.ctx, chromedp.Evaluate[chromedp.Void](`console.debug(`+jsString(consoleEnd)+`)`))
		if err == nil {
			break
		}
		if time.Now().After(deadline) || tb.ctx.Err() != nil {
			tb.t.Errorf("browser console: could not mark the end of the test: %v", err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-tb.flushed:
	case <-time.After(waitFor):
		tb.t.Errorf("browser console: the end-of-test marker never came through")
		return
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var unexpected []string
	seen := make([]bool, len(tb.expected))
	for _, m := range tb.noisy {
		i := slices.IndexFunc(tb.expected, func(re *regexp.Regexp) bool { return re.MatchString(m) })
		if i < 0 {
			unexpected = append(unexpected, m)
			continue
		}
		seen[i] = true
	}
	for i, re := range tb.expected {
		if !seen[i] {
			tb.t.Errorf("browser console: no message matched %q, which the test provokes on purpose", re)
		}
	}
	if len(unexpected) > 0 {
		tb.t.Errorf("browser console: %d errors or warnings, want none:\n\t%s", len(unexpected), strings.Join(unexpected, "\n\t"))
	}
}

func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, steps...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

func (tb *tab) open(url string) {
	tb.t.Helper()
	tb.do("open "+url, chromedp.Navigate(url))
}

// eval runs expr in the page and decodes its value into T.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// evalAwait is eval for an expression that yields a promise.
func evalAwait[T any](tb *tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// run runs a statement in the page.
func (tb *tab) run(js string) {
	tb.t.Helper()
	tb.do(js, chromedp.Evaluate[chromedp.Void](js))
}

// click clicks the first element css selects, found and clicked in one
// evaluation, waiting until there is one: a live frame may redraw the part
// of the page it is in between a lookup and a click (chromedp's Click then
// fails with "Could not find node with given id"). SVG elements have no
// click(); they are sent the event.
func (tb *tab) click(what, css string) {
	tb.t.Helper()
	tb.until(what, `((el) => {
		if (!el) return false;
		if (el.click) el.click(); else el.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: window}));
		return true;
	})(document.querySelector(`+jsString(css)+`))`)
}

// until waits for expr to be truthy in the page. It polls with plain
// evaluations, so a navigation in between (a click on a link) only costs a
// retry.
func (tb *tab) until(what, expr string) {
	tb.t.Helper()
	deadline := time.Now().Add(waitFor)
	var last error
	for {
		ok, err := chromedp.Run(tb.ctx, chromedp.Evaluate[bool](`!!(`+expr+`)`))
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) || tb.ctx.Err() != nil {
			tb.t.Fatalf("waiting for %s (%s): gave up after %s (last error: %v)", what, expr, waitFor, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// key types one key (a character, or kb.ArrowRight and friends) into the
// page, as a person would.
func (tb *tab) key(k string) {
	tb.t.Helper()
	tb.do("press "+k, chromedp.KeyEvent(k))
}

func (tb *tab) screenshot(file string) {
	tb.t.Helper()
	if os.Getenv("ZKLOCKVIZ_SCREENSHOTS") != "1" {
		return
	}
	buf, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join("..", "docs", file)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		tb.t.Fatalf("write %s: %v", path, err)
	}
	tb.t.Logf("wrote %s", path)
}

// connect opens a ZooKeeper session for an outside client.
func connect(t testing.TB) *zk.Conn {
	t.Helper()
	return connectTo(t, env.zk)
}

// connectTo is connect to another ZooKeeper.
func connectTo(t testing.TB, zks *zklocal.Server) *zk.Conn {
	t.Helper()
	return connectFor(t, zks, 4*time.Second)
}

// connectFor is connectTo with a session timeout of the test's choosing.
func connectFor(t testing.TB, zks *zklocal.Server, session time.Duration) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{zks.Addr()}, session, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatalf("connect to ZooKeeper: %v", err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(waitFor)
	for c.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline:
			t.Fatalf("no ZooKeeper session after %s", waitFor)
		}
	}
	return c
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// ensurePath creates path and its parents as persistent nodes.
func ensurePath(t testing.TB, c *zk.Conn, path string) {
	t.Helper()
	p := ""
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		p += "/" + seg
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
