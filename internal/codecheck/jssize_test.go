package codecheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// jsBlockOpener is a line that opens a block of code: a function, an arrow
// function or a method, or a statement (if, for, while, switch, try, else).
// Object literals and classes are not blocks of code: a class is read
// method by method, and a table of words is data.
var jsBlockOpener = regexp.MustCompile(`\bfunction\b|=>\s*\{$|^\s*(async\s+)?(get\s+|set\s+)?[A-Za-z_$][\w$]*\([^)]*\)\s*\{$|^\s*(\}\s*)?(if|for|while|switch|try|else)\b`)

// TestScriptBlockSize holds the browser's scripts to the bound Go's
// functions keep (maxLines): a function or a statement block longer than
// that is read in pieces anyway, so it should be written in named ones.
// The scripts have no build step and no parser here, so a block is found
// by the indentation every script keeps: it ends at the first line as
// indented as its opener that starts with "}".
func TestScriptBlockSize(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(moduleRoot(t), "static", "*.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts under static/ (%v)", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range longBlocks(string(src)) {
			t.Errorf("static/%s:%d: %s; split it into named functions", filepath.Base(f), b.line, b.why)
		}
	}
}

// A script with a long function, a long if block and a long object
// literal: the test of the check itself.
func TestLongBlocks(t *testing.T) {
	body := strings.Repeat("  x();\n", maxLines)
	src := "function long() {\n" + body + "}\nif (a) {\n" + body + "}\nconst words = {\n" + body + "};\n" +
		"function short() {\n  if (b) {\n    y();\n  }\n}\n"
	var got []int
	for _, b := range longBlocks(src) {
		got = append(got, b.line)
	}
	if want := fmt.Sprint([]int{1, maxLines + 3}); fmt.Sprint(got) != want {
		t.Errorf("longBlocks at lines %v, want %s", got, want)
	}
}

// longBlocks lists src's blocks of code over maxLines lines.
func longBlocks(src string) []problem {
	lines := strings.Split(src, "\n")
	var out []problem
	for i, l := range lines {
		open := strings.TrimRight(l, " \t")
		if !strings.HasSuffix(open, "{") || !jsBlockOpener.MatchString(open) {
			continue
		}
		end := blockEnd(lines, i)
		if n := end - i + 1; end > 0 && n > maxLines {
			out = append(out, problem{strings.TrimSpace(open), i + 1, fmt.Sprintf("%d lines (at most %d): %s", n, maxLines, strings.TrimSpace(open))})
		}
	}
	return out
}

// blockEnd is the index of the line closing the block lines[i] opens, or
// -1 when the indentation does not say.
func blockEnd(lines []string, i int) int {
	indent := indentOf(lines[i])
	for j := i + 1; j < len(lines); j++ {
		l := lines[j]
		if strings.TrimSpace(l) == "" {
			continue
		}
		switch in := indentOf(l); {
		case in == indent && strings.HasPrefix(strings.TrimSpace(l), "}"):
			return j
		case in <= indent:
			return -1
		}
	}
	return -1
}

func indentOf(l string) int {
	return len(l) - len(strings.TrimLeft(l, " \t"))
}
