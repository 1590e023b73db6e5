package metrics_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/metrics"
)

// rulesDir holds the shipped Prometheus alerting rules and their unit tests.
var rulesDir = filepath.Join("..", "docs", "prometheus")

// The shipped rules are valid and their unit tests pass, by Prometheus's own
// promtool. Missing promtool skips, or fails under CI=true.
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool: %v", err)
		}
		t.Skipf("promtool is not installed (apt-get install prometheus): %v", err)
	}
	for _, args := range [][]string{
		{"check", "rules", "zklockviz-rules.yml"},
		{"test", "rules", "zklockviz-rules_test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = rulesDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Every metric the rules query is one /metrics exposes: a renamed metric
// would otherwise leave an alert that can never fire. (That every alert
// kind has a rule, and every kind a rule matches is raised, is
// internal/codecheck's TestEveryAlertKindHasARule, from the kinds'
// declarations.)
func TestRulesNameWhatIsExported(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(rulesDir, "zklockviz-rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	rules := string(b)

	now := time.Now()
	h := hub.New()
	h.Publish(lockqueue.Snapshot{
		Path: "/locks/orders", Connection: lockqueue.Connected,
		Nodes:  []lockqueue.Node{{Name: "W_0000000001", Holding: true, Ctime: now.Add(-time.Minute)}, {Name: "W_0000000002", Ctime: now}},
		Alerts: []lockqueue.Alert{{Kind: lockqueue.AlertStalled}},
	})
	got := scrape(t, metrics.Handler(metrics.Config{
		Hub: h, Services: services(t, [2]string{lockqueue.ZooKeeper, string(lockqueue.Connected)}),
	}))
	names := regexp.MustCompile(`\bzklockviz_[a-z_]+`).FindAllString(rules, -1)
	if len(names) == 0 {
		t.Fatal("the rules name no zklockviz metric")
	}
	for _, n := range names {
		if len(got[n]) == 0 {
			t.Errorf("the rules query %s, which /metrics does not expose", n)
		}
	}

}
