package views

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// Every phrase the scripts say is one of the server's: a key the scripts
// use that lanePhrases lacks would draw the key itself.
func TestLanePhrasesCoverTheScripts(t *testing.T) {
	files, err := filepath.Glob("../static/*.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	call := regexp.MustCompile(`say\('([a-zA-Z.]+)'[,)]`)
	literal := regexp.MustCompile(`'([a-zA-Z]+(?:\.[a-zA-Z]+)?)'`)
	used := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// A key picked by a condition is a literal beside say's call.
		for _, m := range literal.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			if _, ok := lanePhrases[m[1]]; !ok {
				t.Errorf("%s says %q, which views has no phrase for", filepath.Base(f), m[1])
			}
		}
	}
	// Keys picked at run time ('watch.' + an edge kind) are counted here.
	for _, k := range []string{"watch.dangling", "watch.unexpected", "watch.deadlock"} {
		used[k] = true
	}
	for k := range lanePhrases {
		if !used[k] {
			t.Errorf("phrase %q is said by no script", k)
		}
	}
}
