package codecheck

import (
	"go/ast"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// alertKinds are the alert kinds zklockviz raises, read from where they are
// declared: every untyped string constant named Alert… in the module's own code
// (lockqueue's and each service's package), so a new kind is one edit and
// this list follows it.
func alertKinds(t *testing.T) map[string]string {
	kinds := map[string]string{}
	eachSourceFile(t, func(rel string, fset *token.FileSet, f *ast.File) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if vs.Type != nil {
					continue // typed: the history's event kinds, not alerts
				}
				for i, name := range vs.Names {
					if !regexp.MustCompile(`^Alert[A-Z]`).MatchString(name.Name) || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						kinds[must(strconv.Unquote(lit.Value))] = rel + ":" + name.Name
					}
				}
			}
		}
	})
	if len(kinds) < 10 {
		t.Fatalf("found only %d alert kinds (%v): is the Alert… naming gone?", len(kinds), kinds)
	}
	return kinds
}

// Every alert kind zklockviz raises has a Prometheus rule in the shipped
// rules, every kind a rule matches is one zklockviz raises, and every rule
// and every kind is exercised by the rules' promtool unit tests (which the
// metrics package runs): an alert nobody is paged for, or a rule that can
// never fire, fails here.
func TestEveryAlertKindHasARule(t *testing.T) {
	dir := filepath.Join(moduleRoot(t), "docs", "prometheus")
	rules := string(must(os.ReadFile(filepath.Join(dir, "zklockviz-rules.yml"))))
	tests := string(must(os.ReadFile(filepath.Join(dir, "zklockviz-rules_test.yml"))))
	kinds := alertKinds(t)

	matched := map[string]bool{}
	for _, m := range regexp.MustCompile(`kind=~?"([^"]+)"`).FindAllStringSubmatch(rules, -1) {
		for _, k := range strings.Split(m[1], "|") {
			matched[k] = true
			if kinds[k] == "" {
				t.Errorf("the rules match kind %q, which zklockviz never raises", k)
			}
		}
	}
	tested := map[string]bool{}
	for _, m := range regexp.MustCompile(`kind="([^"]+)"`).FindAllStringSubmatch(tests, -1) {
		tested[m[1]] = true
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		if !matched[k] {
			t.Errorf("alert kind %q (%s) has no rule in docs/prometheus/zklockviz-rules.yml", k, kinds[k])
		}
		if !tested[k] {
			t.Errorf("alert kind %q has no series in docs/prometheus/zklockviz-rules_test.yml", k)
		}
	}

	// Each alert has a test case that expects it to fire.
	firing := map[string]bool{}
	cases := regexp.MustCompile(`alertname: (\S+)\n\s+exp_alerts:\n\s+- `).FindAllStringSubmatch(tests, -1)
	for _, m := range cases {
		firing[m[1]] = true
	}
	names := regexp.MustCompile(`(?m)^\s+- alert: (\S+)`).FindAllStringSubmatch(rules, -1)
	if len(names) == 0 {
		t.Fatal("the rules name no alert")
	}
	for _, m := range names {
		if !firing[m[1]] {
			t.Errorf("alert %s has no promtool test case in which it fires", m[1])
		}
	}
}
