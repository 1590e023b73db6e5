package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/zklockviz/zklockviz/third_party/zk"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
)

// readmeNotRun are the README's commands this test does not run, each with
// what covers it instead. Every other command the README shows is run.
var readmeNotRun = map[string]string{
	"make test": "what CI runs (.ci/run); run here it would run this test inside itself",
	"sudo apt-get install redis-server etcd-server postgresql":                                           "make deps installs the same packages (make test, CI); the classroom's tests need them",
	"zklockviz serve --postgres postgres://…/history --watch postgres:advisory/2054974582 --history=off": "TestTwoReplicasOneRecorder runs it against two replicas' history database",
	".ci/run":                   "CI's entry point: it runs make test",
	"go test ./...":             "make test runs it (CI)",
	"go vet ./...":              "make test runs it (CI)",
	"go tool templ generate":    "make test runs it and fails when the committed code drifted (CI)",
	"go generate ./lockqueue":   "make test runs it and fails when the committed fields_gen.go drifted (CI)",
	"make generate":             "the same templ commands make test runs (CI); make -n checked the target",
	"make deps":                 "make test depends on it (CI); make -n checked the target",
	"make bench":                "every benchmark, for many minutes; make -n checked the target, and each go test -bench line the README quotes is checked with go test -list",
	"docker compose up --build": "NOT run here: base images cannot be pulled on these machines; make image-check (CI) builds the Dockerfile with buildah and runs the image as compose.yaml does",
	"make image-check":          "CI runs it after make test (.ci/run); make -n checked the target",
	"make goinstall-check":      "CI runs it after make test (.ci/run); make -n checked the target",
	"make dist":                 "make dist-check (CI, after make test) builds every platform's binary into a temporary directory and checks them; make -n checked the target",
	"make dist-check":           "CI runs it after make test (.ci/run); make -n checked the target",
	"go tool pprof -diff_base":  "named in the Benchmarks' prose (how two CPU profiles were compared), not a command to run on its own: the profiles come from the go test -bench lines checked above",
	"zklockviz lab-client":      "started by zklockviz lab, never by hand: TestLab runs the lab, which runs it",
	"go install github.com/zklockviz/zklockviz/cmd/zklockviz@latest": "make goinstall-check (CI, after make test) installs it from a module proxy directory built from the checkout, @VERSION and @latest, in an empty GOPATH, and runs the binary",
}

// readmeCommandStarts tell a command in an inline code span from a flag,
// a path or a metric name.
var readmeCommandStarts = []string{"make ", "zklockviz ", "go ", "CI=true ", "docker ", "dpkg ", "sudo ", "/usr/share/zookeeper/bin/zkCli.sh ", ".ci/"}

type readmeCommand struct {
	line    string // the command, as the README shows it
	comment string // a trailing "# ..." comment, which may give the exit status
}

// readmeCommands are the lines of the README's sh blocks and its inline
// code spans that are commands, in order, each once.
func readmeCommands(readme string) []readmeCommand {
	var out []readmeCommand
	seen := map[string]bool{}
	add := func(line string) {
		line, comment, _ := strings.Cut(line, " #")
		line = strings.TrimSpace(line)
		if line != "" && !seen[line] {
			seen[line] = true
			out = append(out, readmeCommand{line: line, comment: comment})
		}
	}
	span := regexp.MustCompile("`([^`]+)`")
	inSh, inOther := false, false
	for line := range strings.SplitSeq(readme, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			switch {
			case inSh || inOther:
				inSh, inOther = false, false
			case line == "```sh":
				inSh = true
			default:
				inOther = true
			}
		case inSh:
			add(line)
		case !inOther:
			for _, m := range span.FindAllStringSubmatch(line, -1) {
				for _, p := range readmeCommandStarts {
					if strings.HasPrefix(m[1], p) {
						add(m[1])
						break
					}
				}
			}
		}
	}
	return out
}

// TestREADMECommands runs every command README.md (and the measurements'
// page it points to, docs/performance.md) shows, so that none can
// rot: with the test's ZooKeeper in place of the hosts the examples name,
// --addr 127.0.0.1:0 for servers (stopped once they listen), and temporary
// directories for what make installs. Benchmark lines are checked with go
// test -list; what is not run is in readmeNotRun, with what covers it.
func TestREADMECommands(t *testing.T) {
	// The README's measurements live in docs/performance.md, with the
	// commands that took them: those are checked as the README's are.
	var docs []byte
	for _, f := range []string{"../../README.md", "../../docs/performance.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(append(docs, b...), '\n')
	}
	cmds := readmeCommands(string(docs))
	if len(cmds) < 20 {
		t.Fatalf("found %d commands in README.md and docs/performance.md; the extractor is broken", len(cmds))
	}
	zks := sharedZK(t)
	r := &readmeRunner{zks: zks, dir: t.TempDir(), ran: map[string]bool{}, lists: map[string]string{}}
	r.startOtherServices(t)
	admin := connect(t, zks.Addr()) // closed after the removal below (cleanups run last first)
	t.Cleanup(func() {
		for _, p := range slices.Backward(r.created) {
			if err := admin.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				t.Errorf("remove %s, made by the README's zkCli.sh: %v", p, err)
			}
		}
	})
	if err := os.WriteFile(filepath.Join(r.dir, "my-scenario.json"), docsScenario(t), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		t.Run(c.line, func(t *testing.T) {
			if why, ok := readmeNotRun[c.line]; ok {
				if strings.HasPrefix(c.line, "make ") {
					r.make(t, "-n", strings.Fields(c.line)[1])
				}
				t.Logf("not run: %s", why)
				return
			}
			r.run(t, c)
		})
	}
}

// docsScenario is the example scenario file of docs/simulator.md, which
// the README's my-scenario.json stands for.
func docsScenario(t *testing.T) []byte {
	b, err := os.ReadFile("../../docs/simulator.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "### Scenario files")
	_, rest, _ = strings.Cut(rest, "```json\n")
	example, _, ok := strings.Cut(rest, "```")
	if !ok || !json.Valid([]byte(example)) {
		t.Fatalf("docs/simulator.md has no JSON example under \"Scenario files\": %q", example)
	}
	return []byte(example)
}

type readmeRunner struct {
	zks *zklocal.Server
	dir string // the working directory of the commands run
	// ran: each make target that can run here runs once, however many
	// lines show it; the others get make -n.
	ran map[string]bool
	// lists: go test -list '.*' of each package.
	lists map[string]string
	// created: the persistent nodes the README's zkCli.sh commands made,
	// removed when the test ends so that a second run (-count=2) can make
	// them again on the package's one ZooKeeper.
	created []string
	// etcd and pg stand for the examples' etcd and PostgreSQL hosts; nil
	// where the server is not installed (the examples then name hosts
	// that do not answer, which serve survives).
	etcd *etcdlocal.Server
	pg   *pglocal.Server
}

// readmeDSN is the PostgreSQL of the README's examples.
const readmeDSN = "postgres://viz@db1:5432/app?sslmode=verify-full"

// startOtherServices starts an etcd and a PostgreSQL for the examples'
// hosts, with the pg_monitor role and the database the examples name.
func (r *readmeRunner) startOtherServices(t *testing.T) {
	ctx := t.Context()
	if e, err := etcdlocal.Start(ctx, etcdlocal.Options{}); err == nil {
		r.etcd = e
		t.Cleanup(func() { e.Close() })
	} else if !errors.Is(err, etcdlocal.ErrNotInstalled) || os.Getenv("CI") == "true" {
		t.Fatalf("etcd for the README's examples: %v", err)
	}
	if p, err := pglocal.Start(ctx, pglocal.Options{}); err == nil {
		r.pg = p
		t.Cleanup(func() { p.Close() })
		for _, sql := range []string{"CREATE ROLE viz LOGIN IN ROLE pg_monitor", "CREATE DATABASE app"} {
			if out, err := exec.Command("psql", "-X", "-q", "-d", p.DSN(), "-c", sql).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", sql, err, out)
			}
		}
	} else if !errors.Is(err, pglocal.ErrNotInstalled) || os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL for the README's examples: %v", err)
	}
}

// localize puts the test's ZooKeeper where the examples name hosts.
func (r *readmeRunner) localize(line string) string {
	line = regexp.MustCompile(`http://zk\d:8080`).ReplaceAllString(line, r.zks.AdminURL())
	line = regexp.MustCompile(`zk\d:2181`).ReplaceAllString(line, r.zks.Addr())
	if r.etcd != nil {
		line = regexp.MustCompile(`http://etcd\d:2379`).ReplaceAllString(line, r.etcd.Endpoint())
	}
	if r.pg != nil {
		// The same role and database; TLS (sslmode=verify-full) is
		// pglock's TestTLS's, against a server with a certificate.
		line = strings.ReplaceAll(line, readmeDSN, "postgres://viz@"+r.pg.Addr()+"/app?sslmode=disable")
	}
	return strings.ReplaceAll(line, "127.0.0.1:2181", r.zks.Addr())
}

func (r *readmeRunner) run(t *testing.T, c readmeCommand) {
	args := shellWords(t, r.localize(os.ExpandEnv(c.line)))
	switch {
	case c.line == "zklockviz help serve" || c.line == "zklockviz version":
		t.Log("run")
		r.expect(t, 0, exec.Command(binary, args[1:]...))
	case strings.HasPrefix(c.line, "zklockviz serve "):
		t.Logf("run as %q --addr 127.0.0.1:0 until it listens and reads each etcd and PostgreSQL lock it watches, then SIGTERM: exit 0", args)
		r.untilReady(t, "listening on ", r.readsLocks(t, args), syscall.SIGTERM, append(args[1:], "--addr", "127.0.0.1:0")...)
	case strings.HasPrefix(c.line, "zklockviz sim "):
		want := 0
		if strings.Contains(c.comment, "exit status 1") {
			want = 1
		}
		t.Logf("run as %q: exit %d", args, want)
		r.expect(t, want, exec.Command(binary, args[1:]...))
	case c.line == "zklockviz lab" || strings.HasPrefix(c.line, "zklockviz lab "):
		t.Logf("run as %q --duration 2s --every 1s (a shorter run of the same lab): exit 0", args)
		r.expect(t, 0, exec.Command(binary, append(args[1:], "--duration", "2s", "--every", "1s")...))
	case strings.HasPrefix(c.line, "make "):
		t.Log("make -n checks the recipe; build and install run into temporary directories; demo runs bin/zklockviz demo --addr 127.0.0.1:0 until it prints its URL")
		r.runMake(t, args[1:])
	case strings.HasPrefix(c.line, "go test ") || strings.HasPrefix(c.line, "CI=true go test "):
		t.Log("not run (a benchmark or a test CI runs): go test -list checks that the package builds and the pattern names a function")
		r.goTestList(t, args)
	case strings.HasPrefix(c.line, "/usr/share/zookeeper/bin/zkCli.sh "):
		t.Logf("run as %q; the node it creates must exist", args)
		r.zkCli(t, args)
	case strings.HasPrefix(c.line, "dpkg "):
		t.Log("run; it must list " + zkCliPath)
		if _, err := exec.LookPath("dpkg"); err != nil {
			t.Skip("not a Debian system")
		}
		out := r.expect(t, 0, exec.Command("bash", "-c", c.line))
		if !strings.Contains(out, zkCliPath) {
			t.Errorf("%s does not list %s:\n%s", c.line, zkCliPath, out)
		}
	default:
		t.Errorf("README.md shows %q, and this test has no rule for it: run it here, or list it in readmeNotRun with what covers it", c.line)
	}
}

// expect runs cmd in r.dir and checks its exit status.
func (r *readmeRunner) expect(t *testing.T, want int, cmd *exec.Cmd) string {
	t.Helper()
	if cmd.Dir == "" {
		cmd.Dir = r.dir
	}
	cmd.Env = append(os.Environ(), "ZKLOCKVIZ_ZK=", "ZKLOCKVIZ_ADDR=", "ZKLOCKVIZ_TOKEN=", "ZKLOCKVIZ_ZK_AUTH=", "ZKLOCKVIZ_ZK_TIMEOUT=")
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", cmd.Args, err)
	}
	if code != want {
		t.Errorf("%v: exit %d, want %d\n%s", cmd.Args, code, want, out)
	}
	return string(out)
}

// readsLocks checks a serve example: each lock of a service the test stands
// a server in for (etcd:NAME, postgres:NAME) is read, live and without an
// error; nil when there is none.
func (r *readmeRunner) readsLocks(t *testing.T, args []string) func(line string) {
	var locks [][2]string
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "--watch" {
			continue
		}
		svc, name, _ := strings.Cut(args[i+1], ":")
		if (svc == "etcd" && r.etcd != nil) || (svc == "postgres" && r.pg != nil) {
			locks = append(locks, [2]string{svc, name})
		}
	}
	if len(locks) == 0 {
		return nil
	}
	return func(line string) {
		_, base, _ := strings.Cut(line, "listening on ")
		for _, l := range locks {
			var snap lockqueue.Snapshot
			waitFor(t, l[0]+":"+l[1]+" read", func() bool {
				return getJSON(t, strings.TrimSpace(base)+"/api/v1/lock?service="+l[0]+"&path="+url.QueryEscape(l[1]), &snap) == 200 &&
					snap.Live() && snap.Error == ""
			})
			t.Logf("%s:%s read live", l[0], l[1])
		}
	}
}

// untilReady runs zklockviz args until a line of its output contains
// ready, runs check on that line (when given), then stops it with sig and
// expects exit status 0.
func (r *readmeRunner) untilReady(t *testing.T, ready string, check func(line string), sig os.Signal, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "ZKLOCKVIZ_TOKEN=", "ZKLOCKVIZ_ZK_AUTH=", "ZKLOCKVIZ_ZK_TIMEOUT=")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	var out strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), ready) {
			if check != nil {
				// The output must keep draining while check waits.
				go io.Copy(io.Discard, pr)
				check(sc.Text())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if err := <-done; err != nil || !strings.Contains(out.String(), ready) {
		t.Errorf("%v: %v, want it to print %q and exit 0 on %v:\n%s", args, err, ready, sig, out.String())
	}
}

// runMake checks the target with make -n, then runs what can run here,
// once: build and install into temporary directories, and the demo's
// command.
func (r *readmeRunner) runMake(t *testing.T, args []string) {
	target := args[0]
	plan := r.make(t, append([]string{"-n"}, args...)...)
	switch target {
	case "install":
		if len(args) == 1 && !strings.Contains(plan, "/usr/local/bin/zklockviz") {
			t.Errorf("make install does not install to /usr/local/bin, as the README says:\n%s", plan)
		}
	case "demo":
		addr := "127.0.0.1:8080"
		for _, a := range args[1:] {
			addr = strings.TrimPrefix(a, "ADDR=")
		}
		if want := "bin/zklockviz demo --addr " + addr; !strings.Contains(plan, want) {
			t.Errorf("make demo does not run %q:\n%s", want, plan)
		}
	case "build":
	default:
		t.Fatalf("make %s: no rule to run it here; list it in readmeNotRun with what covers it", target)
	}
	if r.ran[target] {
		return
	}
	r.ran[target] = true
	switch target {
	case "demo":
		r.untilReady(t, "  open ", nil, os.Interrupt, "demo", "--addr", "127.0.0.1:0")
	case "build", "install":
		dir, err := os.MkdirTemp(r.dir, "make-")
		if err != nil {
			t.Fatal(err)
		}
		bin, bindir := filepath.Join(dir, "zklockviz"), filepath.Join(dir, "bin")
		r.make(t, target, "BIN="+bin, "BINDIR="+bindir)
		if target == "install" {
			bin = filepath.Join(bindir, "zklockviz")
		}
		if out := r.expect(t, 0, exec.Command(bin, "version")); !strings.HasPrefix(out, "zklockviz ") {
			t.Errorf("%s version: %q", bin, out)
		}
	}
}

// make runs make in the repository and returns its output.
func (r *readmeRunner) make(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-s"}, args...)...)
	cmd.Dir = "../.."
	return r.expect(t, 0, cmd)
}

// goTestList checks that the packages of a go test line build and that its
// -bench (or -run) pattern names at least one function in each.
func (r *readmeRunner) goTestList(t *testing.T, args []string) {
	for len(args) > 0 && strings.Contains(args[0], "=") {
		args = args[1:] // CI=true
	}
	pattern, kind, pkgs := "", "Test", []string(nil)
	for i := 2; i < len(args); i++ {
		switch {
		case args[i] == "-run" && pattern == "":
			pattern = args[i+1]
			i++
		case args[i] == "-bench":
			pattern, kind = args[i+1], "Benchmark"
			i++
		case strings.HasPrefix(args[i], "./"):
			pkgs = append(pkgs, strings.TrimSuffix(args[i], "/"))
		}
	}
	if pattern == "" || len(pkgs) == 0 {
		t.Fatalf("%v: no pattern or package to check", args)
	}
	// go test matches a pattern's parts, split at '/', against the levels
	// of (sub)benchmark names; -list knows only the top level.
	pattern, _, _ = strings.Cut(pattern, "/")
	re, err := regexp.Compile(pattern)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	for _, pkg := range pkgs {
		if _, ok := r.lists[pkg]; !ok {
			cmd := exec.Command("go", "test", "-list", ".", pkg)
			cmd.Dir = "../.."
			r.lists[pkg] = r.expect(t, 0, cmd)
		}
		found := false
		for name := range strings.FieldsSeq(r.lists[pkg]) {
			found = found || (strings.HasPrefix(name, kind) && re.MatchString(name))
		}
		if !found {
			t.Errorf("%v: no %s function in %s matches %q", args, kind, pkg, pattern)
		}
	}
}

// zkCli runs Debian's zkCli.sh and checks that the node it creates exists.
func (r *readmeRunner) zkCli(t *testing.T, args []string) {
	if _, err := os.Stat(args[0]); err != nil {
		t.Skipf("%s: %v (Debian's zookeeper package)", args[0], err)
	}
	out := r.expect(t, 0, exec.Command(args[0], args[1:]...))
	if len(args) < 5 || args[3] != "create" {
		return
	}
	path := args[len(args)-1]
	if ok, _, err := connect(t, r.zks.Addr()).Exists(path); err != nil || !ok {
		t.Errorf("after %v, %s exists=%v (%v)\n%s", args, path, ok, err, out)
		return
	}
	r.created = append(r.created, path)
}

// shellWords splits a command line as sh would, for the quoting the README
// uses: '...' and "...".
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, c := range line {
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(c)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
