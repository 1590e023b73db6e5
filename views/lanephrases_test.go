package views

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Every phrase the scripts say is one of the server's: a key a script uses
// that its page's phrases (Phrases: the lane's and its page's own section)
// lack would draw the key itself, and a phrase no script says is dead.
// A service's own phrases are said by the run card's views (say), not the
// scripts: cmd/zklockviz's TestClassroomPhrasesCoverTheScripts checks those.
func TestLanePhrasesCoverTheScripts(t *testing.T) {
	files, err := filepath.Glob("../static/*.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	call := regexp.MustCompile(`\bsay\('([a-zA-Z.]+)'[,)]`)
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
		// The page a script runs on: the classroom's are sim*.js, the
		// dashboard's dashboard.js; the others draw the lane anywhere.
		base := filepath.Base(f)
		page := ""
		for _, p := range []string{"sim", "dashboard"} {
			if strings.HasPrefix(base, p) {
				page = p
			}
		}
		phrases := Phrases(page)
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			if _, ok := phrases[m[1]]; !ok {
				t.Errorf("%s says %q, which its page's phrases lack", base, m[1])
			}
		}
	}
	// Keys picked at run time ('watch.' + an edge kind, 'act.' + an
	// action, 'parent.' + what the server says of the parent) are counted
	// here.
	for _, k := range []string{"watch.dangling", "watch.unexpected", "watch.deadlock", "act.release", "act.crash", "act.pause", "act.write"} {
		used[k] = true
	}
	for _, is := range []string{lockqueue.ParentUnknown, lockqueue.ParentMissing, lockqueue.ParentInvisible, lockqueue.ParentLeases, lockqueue.ParentHerd} {
		used["parent."+is] = true
	}
	for _, section := range []map[string]string{lanePhrases, classPhrases, dashPhrases} {
		for k := range section {
			if !used[k] {
				t.Errorf("phrase %q is said by no script", k)
			}
		}
	}
}

// A page's own section adds to the lane's phrases and takes none of them
// over: a key means one sentence on every page.
func TestPageSectionsAddToTheLanes(t *testing.T) {
	for page, own := range pagePhrases {
		for k := range own {
			if _, ok := lanePhrases[k]; ok {
				t.Errorf("%s's phrase %q is the lane's too", page, k)
			}
		}
		if got := Phrases(page); len(got) != len(lanePhrases)+len(own) {
			t.Errorf("Phrases(%q) has %d phrases, want %d", page, len(got), len(lanePhrases)+len(own))
		}
	}
	if got := Phrases("lock"); len(got) != len(lanePhrases) {
		t.Errorf("a lock page says %d phrases, want the lane's %d", len(got), len(lanePhrases))
	}
}
