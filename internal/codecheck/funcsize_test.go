package codecheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The bounds every function outside tests and generated code keeps: past
// them a function is read in pieces anyway, so it should be written in
// named ones; and past maxParams its callers line up values by position,
// where a struct would name them.
const (
	maxLines      = 80
	maxComplexity = 25
	maxParams     = 7
)

// allowed are the functions over a bound that other work owns: each entry
// is "file:function" as the test names it. An entry for a function back
// within bounds fails the test, so the list only shrinks.
var allowed = map[string]bool{}

// TestFunctionSize fails naming each function of the module's own code
// (not tests, not generated code, not third_party/) longer than maxLines,
// with a cyclomatic complexity over maxComplexity or with more than
// maxParams parameters.
func TestFunctionSize(t *testing.T) {
	over := map[string]bool{}
	eachSourceFile(t, func(rel string, fset *token.FileSet, f *ast.File) {
		for _, p := range oversized(fset, f) {
			over[rel+":"+p.name] = true
			if allowed[rel+":"+p.name] {
				t.Logf("allowed for now: %s:%d: %s: %s", rel, p.line, p.name, p.why)
				continue
			}
			t.Errorf("%s:%d: %s: %s; split it into named functions (and name many parameters in a struct)", rel, p.line, p.name, p.why)
		}
	})
	for name := range allowed {
		if !over[name] {
			t.Errorf("%s is within bounds now: remove it from allowed", name)
		}
	}
}

// A function that fails the check; the test of the check itself.
func TestOversized(t *testing.T) {
	src := "package p\nfunc small() { if true {} }\nfunc long() {\n" + strings.Repeat("_ = 1\n", maxLines) + "}\n" +
		"func branchy(a int) {\n" + strings.Repeat("if a > 0 && a < 9 {}\n", maxComplexity/2+1) + "}\n" +
		"func wide(a, b, c, d int, e, f string, g bool) {}\nfunc wider(a, b, c, d int, e, f string, g, h bool) {}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range oversized(fset, f) {
		got = append(got, p.name)
	}
	if fmt.Sprint(got) != "[long branchy wider]" {
		t.Errorf("oversized = %v, want [long branchy wider]", got)
	}
}

type problem struct {
	name string
	line int
	why  string
}

// oversized lists f's functions over a bound.
func oversized(fset *token.FileSet, f *ast.File) []problem {
	var out []problem
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
		var why []string
		if n := end - start + 1; n > maxLines {
			why = append(why, fmt.Sprintf("%d lines (at most %d)", n, maxLines))
		}
		if c := complexity(fn); c > maxComplexity {
			why = append(why, fmt.Sprintf("cyclomatic complexity %d (at most %d)", c, maxComplexity))
		}
		if n := fn.Type.Params.NumFields(); n > maxParams {
			why = append(why, fmt.Sprintf("%d parameters (at most %d)", n, maxParams))
		}
		if len(why) > 0 {
			out = append(out, problem{funcName(fn), start, strings.Join(why, ", ")})
		}
	}
	return out
}

// funcName is fn's name, with its receiver's type for a method
// ("Recorder.Offer").
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// complexity is fn's cyclomatic complexity as gocyclo counts it: one, plus
// one for each if, for, range, non-default case or select clause, && and
// ||, function literals in it included.
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// eachSourceFile calls fn with each file of the module's own code: not
// tests, not generated code, not third_party/ or testdata.
func eachSourceFile(t *testing.T, fn func(rel string, fset *token.FileSet, f *ast.File)) {
	t.Helper()
	root := moduleRoot(t)
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(must(filepath.Rel(root, path)))
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "third_party") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || strings.HasSuffix(rel, "_templ.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if !ast.IsGenerated(f) {
			fn(rel, fset, f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// moduleRoot is the folder of the go.mod above this package.
func moduleRoot(t *testing.T) string {
	dir := must(os.Getwd())
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
