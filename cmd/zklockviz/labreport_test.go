package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/simulator/timespacetest"
)

// labReports runs zklockviz lab --json --report FILE with args, and
// returns the JSON's runs (one service's outcome, or several's) and the
// HTML file. A service whose server is not installed skips the test, or
// fails it under CI=true.
func labReports(t *testing.T, args ...string) ([]lab.Outcome, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "report.html")
	code, stdout, stderr := runBinary(t, nil, append([]string{"lab", "--json", "--report", file}, args...)...)
	if code != 0 && strings.Contains(stderr, "is not installed") && os.Getenv("CI") != "true" {
		t.Skip(stderr)
	}
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var several struct {
		Runs []lab.Outcome `json:"runs"`
	}
	var one lab.Outcome
	if err := json.Unmarshal([]byte(stdout), &several); err != nil || len(several.Runs) == 0 {
		if err := json.Unmarshal([]byte(stdout), &one); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, stdout)
		}
		several.Runs = []lab.Outcome{one}
	}
	html, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the report: %v\n%s", err, stderr)
	}
	return several.Runs, string(html)
}

// checkSelfContained: the report fetches nothing when it is opened.
func checkSelfContained(t *testing.T, html string) {
	t.Helper()
	if m := regexp.MustCompile(`(?i)<(script|link|img|iframe)\b|\b(src|href)=["']?(https?:)?//`).FindString(html); m != "" {
		t.Errorf("the report would fetch something: %q", m)
	}
}

// The report of one run: the JSON says what ran (the service, the seed,
// the schedule the seed makes, the command that replays it) beside the
// findings; the HTML file shows the same command, a row per fault, the
// findings, and the time–space diagram with a lane per client, drawn by
// the classroom's drawing.
func TestLabReport(t *testing.T) {
	zks := sharedZK(t)
	runs, html := labReports(t, "--zk", zks.Addr(), "--path", "/lab-report/lock", "--seed", "7",
		"--clients", "2", "--duration", "3s", "--nemesis", "pause", "--every", "1s", "--session", "1s")
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	o := runs[0]
	if o.Service != "zookeeper" || o.Seed != 7 || len(o.Schedule) != 2 || o.Report.Acquisitions == 0 || len(o.Events) == 0 {
		t.Errorf("outcome %+v: want ZooKeeper, seed 7, 2 faults planned, and what ran", o)
	}
	for _, want := range []string{"--service zookeeper", "--seed 7", "--clients 2", "--nemesis pause", "--path /lab-report/lock", "--zk " + zks.Addr()} {
		if !strings.Contains(o.Replay, want) {
			t.Errorf("command %q lacks %q", o.Replay, want)
		}
	}
	checkSelfContained(t, html)
	for _, want := range []string{o.Replay, o.Report.Summary()} {
		if !strings.Contains(html, htmlEscape(want)) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if n := strings.Count(html, "<td>pause</td>"); n != len(o.Schedule) {
		t.Errorf("%d faults in the report's schedule, want %d", n, len(o.Schedule))
	}
	d := reportDiagrams(t, html)
	if len(d) != 1 || !slices.Equal(d[0].LanesOf("client"), []string{"c1", "c2"}) || d[0].Marks["grant"] == 0 {
		t.Errorf("diagrams %+v: want one, with lanes c1 and c2 and grants", d)
	}
}

// --service all: the four services side by side in one run, on the same
// seed, each with its own throwaway server, clients and resource; the
// JSON has a run per service, the report a section and a diagram each.
func TestLabAll(t *testing.T) {
	runs, html := labReports(t, "--service", "all", "--seed", "3", "--clients", "2", "--duration", "3s",
		"--nemesis", "pause", "--every", "1s", "--session", "1s")
	var services []string
	for _, o := range runs {
		services = append(services, o.Service)
		if o.Seed != 3 || o.Report.Acquisitions == 0 || o.Error != "" || !strings.Contains(o.Replay, "--service "+o.Service) {
			t.Errorf("%s: seed %d, %d acquisitions, error %q, command %q: want seed 3, acquisitions, no error, its own command",
				o.Service, o.Seed, o.Report.Acquisitions, o.Error, o.Replay)
		}
	}
	if !slices.Equal(services, []string{"zookeeper", "redis", "etcd", "postgres"}) {
		t.Fatalf("runs of %v, want the four services", services)
	}
	for _, o := range runs[1:] {
		if !slices.Equal(o.Schedule, runs[0].Schedule) || len(o.Schedule) == 0 {
			t.Errorf("%s's schedule %v, %s's %v: want the seed's, the same", o.Service, o.Schedule, runs[0].Service, runs[0].Schedule)
		}
	}
	checkSelfContained(t, html)
	for _, s := range services {
		if !strings.Contains(html, `data-service="`+s+`"`) {
			t.Errorf("the report has no section for %s", s)
		}
	}
	if d := reportDiagrams(t, html); len(d) != 4 {
		t.Errorf("%d diagrams, want 4", len(d))
	}
}

func TestLabServiceList(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--service", "redis,mongo"}, `--service "mongo": want zookeeper, redis, etcd or postgres, a comma-separated list of them, or all`},
		{[]string{"--service", "redis,redis"}, "--service redis,redis: redis twice"},
		{[]string{"--service", "redis,"}, `--service "redis,": name a service`},
		{[]string{"--service", ""}, `--service "": name a service`},
		{[]string{"--service", "redis,etcd", "--path", "x"}, "--path names one service's lock"},
		{[]string{"--service", "redis,etcd", "--zk", "127.0.0.1:1"}, "--zk is ZooKeeper's server, and zookeeper is not among --service redis,etcd"},
		{[]string{"--service", "all", "--session", "1500ms"}, "--session 1.5s: etcd lease TTL 1.5s: want whole seconds"},
	} {
		code, _, stderr := runBinary(t, nil, append([]string{"lab"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("lab %v: exit %d, stderr %q; want exit 2 and an error saying %q", tc.args, code, stderr, tc.want)
		}
	}
}

// reportDiagrams are the time–space diagrams in a report.
func reportDiagrams(t *testing.T, html string) []timespacetest.Diagram {
	t.Helper()
	var out []timespacetest.Diagram
	for _, m := range regexp.MustCompile(`(?s)<svg xmlns.*?</svg>`).FindAllString(html, -1) {
		d, err := timespacetest.Parse([]byte(m))
		if err != nil {
			t.Fatalf("a diagram: %v", err)
		}
		out = append(out, d)
	}
	return out
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// Ctrl-C stops a run before its duration, and the report of what ran is
// still written, saying it was stopped.
func TestLabReportAfterInterrupt(t *testing.T) {
	zks := sharedZK(t)
	file := filepath.Join(t.TempDir(), "report.html")
	cmd := exec.Command(binary, "lab", "--zk", zks.Addr(), "--path", "/lab-interrupt/lock", "--clients", "2",
		"--duration", "60s", "--nemesis", "none", "--report", file)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupted once a client has written: the run is under way.
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), " wrote ") {
	}
	start := time.Now()
	cmd.Process.Signal(os.Interrupt)
	go io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Errorf("lab after Ctrl-C: %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("lab took %v to stop after Ctrl-C", took)
	}
	html, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no report after Ctrl-C: %v", err)
	}
	if !strings.Contains(string(html), "Stopped before its duration") || len(reportDiagrams(t, string(html))) != 1 {
		t.Errorf("the report after Ctrl-C does not say it stopped early, or has no diagram")
	}
}
