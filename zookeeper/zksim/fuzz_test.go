package zksim

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator"
)

// FuzzParseScenario: the scenario parser never panics, every rejection is
// an ErrInvalid with a message that says it is about the scenario, and
// whatever it accepts plans (or is refused clearly), and survives a round
// trip through JSON.
//
//	go test ./zookeeper/zksim -run '^$' -fuzz FuzzParseScenario -fuzztime 60s
func FuzzParseScenario(f *testing.F) {
	for _, n := range Catalog.Names() {
		b, err := builtinFS.ReadFile("scenarios/" + n + ".json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `{}`, `[]`, `null`, `{"lock":"rw"}`, `{"lock":"rw","steps":[]}`,
		`{"lock":"rw","steps":[{"client":"A","action":"add-reader"}]} {}`,
		`{"lock":"lease","leases":2,"clients":3,"steps":[{"client":"*","action":"add"},{"client":"*","action":"release"}]}`,
		`{"lock":"exclusive","clients":1000,"steps":[{"client":"*","action":"add"}]}`,
		`{"lock":"exclusive","steps":[{"client":"A","action":"add"},{"client":"A","action":"pause"},{"client":"A","action":"write"}]}`,
		`{"lock":"rw","steps":[{"client":"A","action":"add-writer"},{"client":"B","action":"add-reader"},{"client":"B","action":"release"}]}`,
		"{\n\"lock\": \"rw\",\n\"steps\": [}", `{"lock":"rw","fencing":"yes","steps":[]}`, `{"lock":"rw","leases":-1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := simulator.ParseScenario(b)
		if err != nil {
			if !errors.Is(err, simulator.ErrInvalid) {
				t.Fatalf("rejection is not ErrInvalid: %v", err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "scenario: ") || len(msg) <= len("scenario: ") {
				t.Fatalf("unclear rejection %q", msg)
			}
			return
		}
		if sc.Lock == "" || len(sc.Steps) == 0 {
			t.Fatalf("accepted a scenario without lock or steps: %+v", sc)
		}
		for _, n := range []int{0, 3} {
			steps, err := plan(sc, n)
			if err != nil {
				if !errors.Is(err, simulator.ErrInvalid) || err.Error() == "" {
					t.Fatalf("Plan(%d): unclear error %v", n, err)
				}
				continue
			}
			if len(steps) == 0 || len(steps) > simulator.MaxSteps {
				t.Fatalf("Plan(%d): %d steps", n, len(steps))
			}
			for _, a := range steps {
				if a.Client == "*" {
					t.Fatalf("Plan(%d) left a \"*\" step", n)
				}
			}
		}
		again, err := json.Marshal(sc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := simulator.ParseScenario(again); err != nil {
			t.Fatalf("accepted %s but not its own encoding %s: %v", b, again, err)
		}
	})
}
