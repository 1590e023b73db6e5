package simulator_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/zklockviz/zklockviz/simulator"
)

func demoScenario(name string) string {
	return `{"service":"demo","name":"` + name + `","lock":"exclusive","steps":[{"client":"A","action":"add"}]}`
}

// demoCatalog is a service's catalog as a service package builds one: its
// own name, built-ins and a rule of its own (no client named Z).
func demoCatalog(t *testing.T) *simulator.Catalog {
	t.Helper()
	return simulator.NewCatalog(simulator.CatalogConfig{
		Service: "demo", Title: "Demo", Dir: "scenarios",
		FS: fstest.MapFS{
			"scenarios/c.json": {Data: []byte(demoScenario("c"))},
			"scenarios/a.json": {Data: []byte(demoScenario("a"))},
			"scenarios/b.json": {Data: []byte(demoScenario("b"))},
		},
		Order: []string{"b", "gone"},
		Validate: func(sc *simulator.Scenario) error {
			for _, a := range sc.Steps {
				if a.Client == "Z" {
					return errors.New("demo: no client Z")
				}
			}
			return nil
		},
	})
}

func TestCatalogNamesAndBuiltins(t *testing.T) {
	c := demoCatalog(t)
	if got, want := c.Names(), []string{"b", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v (the order given, then the rest sorted)", got, want)
	}
	sc, ok := c.Builtin("a")
	if !ok || sc.Name != "a" || sc.Service != "demo" {
		t.Fatalf("Builtin(a) = %+v, %v", sc, ok)
	}
	sc.Steps[0].Client = "changed"
	if again, _ := c.Builtin("a"); again.Steps[0].Client != "A" {
		t.Errorf("a caller's change to a built-in reached the catalog: %+v", again.Steps)
	}
	if _, ok := c.Builtin("gone"); ok {
		t.Error("Builtin(gone) found a scenario that has no file")
	}
}

func TestCatalogParseAndLoad(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unnamed := file("my-run.json", `{"service":"demo","lock":"exclusive","steps":[{"client":"A","action":"add"}]}`)
	tests := []struct {
		name, arg string
		cat       *simulator.Catalog
		want      string // the scenario's name, or the error's words
		ok        bool
	}{
		{"built-in", "c", demoCatalog(t), "c", true},
		{"file named after itself", unnamed, demoCatalog(t), "my-run", true},
		{"unknown name lists the built-ins", "nope", demoCatalog(t), `unknown Demo scenario "nope": built-ins are b, a, c, or give a .json file`, false},
		{"YAML", "x.yaml", demoCatalog(t), "scenario files are JSON", false},
		{"missing file", filepath.Join(dir, "none.json"), demoCatalog(t), "read scenario:", false},
		{"another service's file", file("z.json", strings.Replace(demoScenario("z"), `"demo"`, `"etcd"`, 1)), demoCatalog(t), `a Demo scenario says "service": "demo"`, false},
		{"the service's own rule", file("r.json", strings.Replace(demoScenario("r"), `"A"`, `"Z"`, 1)), demoCatalog(t), "demo: no client Z", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := tt.cat.Load(tt.arg)
			switch {
			case tt.ok && err != nil:
				t.Fatalf("Load(%s): %v", tt.arg, err)
			case tt.ok && sc.Name != tt.want:
				t.Errorf("Load(%s) named %q, want %q", tt.arg, sc.Name, tt.want)
			case !tt.ok && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Load(%s) error %v, want one saying %q", tt.arg, err, tt.want)
			case !tt.ok && !errors.Is(err, simulator.ErrInvalid):
				t.Errorf("Load(%s) error %v is not ErrInvalid (sim's exit 2)", tt.arg, err)
			}
		})
	}
}
