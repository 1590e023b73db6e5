// Command fieldgen writes lockqueue's fields_gen.go from the one list of a
// node's fields: the Node and Rare structs in types.go. Equality
// (NodesEqual), Rare's accessors and its zero test follow from the fields
// and their tags, so a field added there is compared and read like the
// others with no second edit. Run by go generate in lockqueue; `make check`
// fails when the committed output is stale.
//
// Tags it reads besides json's:
//
//	eq:"-"          the field is left out of equality (it follows from the
//	                fields compared, as what a node's name says does)
//	history:"..."   what the history keeps of it (see lockqueue's types.go);
//	                every field must say, so none is forgotten there
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// field is one struct field as the generator needs it.
type field struct {
	name string
	typ  string // the type as written
	kind kind
	tag  reflect.StructTag
}

type kind int

const (
	plain kind = iota // compared with ==
	timeKind
	sliceKind
	rareKind // Node's embedded *Rare
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("fieldgen: ")
	in, out := "types.go", "fields_gen.go"
	structs, err := parseStructs(in, "Node", "Rare", "Snapshot")
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{"Node", "Rare", "Snapshot"} {
		for _, f := range structs[name] {
			if f.tag.Get("history") == "" && f.kind != rareKind {
				log.Fatalf("%s: %s.%s has no history tag: say whether the history keeps it", in, name, f.name)
			}
		}
	}
	src, err := generate(structs["Node"], structs["Rare"])
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

// parseStructs reads the fields of the named structs in file.
func parseStructs(file string, names ...string) (map[string][]field, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", file, err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string][]field{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if !ok || !want[ts.Name.Name] {
				continue
			}
			for _, fl := range st.Fields.List {
				var tag reflect.StructTag
				if fl.Tag != nil {
					s, err := strconv.Unquote(fl.Tag.Value)
					if err != nil {
						return nil, fmt.Errorf("%s: %s's tag %s: %w", file, ts.Name.Name, fl.Tag.Value, err)
					}
					tag = reflect.StructTag(s)
				}
				typ := typeString(fset, fl.Type)
				k := kindOf(fl.Type)
				fnames := fl.Names
				if len(fnames) == 0 { // embedded: named by its type
					if k != rareKind {
						return nil, fmt.Errorf("%s: %s embeds %s: teach fieldgen about it", file, ts.Name.Name, typ)
					}
					fnames = []*ast.Ident{{Name: "Rare"}}
				}
				for _, id := range fnames {
					out[ts.Name.Name] = append(out[ts.Name.Name], field{name: id.Name, typ: typ, kind: k, tag: tag})
				}
			}
		}
	}
	for _, n := range names {
		if len(out[n]) == 0 {
			return nil, fmt.Errorf("%s: no struct %s", file, n)
		}
	}
	return out, nil
}

func typeString(fset *token.FileSet, e ast.Expr) string {
	var b bytes.Buffer
	if err := format.Node(&b, fset, e); err != nil {
		log.Fatal(err)
	}
	return b.String()
}

func kindOf(e ast.Expr) kind {
	switch t := e.(type) {
	case *ast.ArrayType:
		if t.Len == nil {
			return sliceKind
		}
	case *ast.SelectorExpr:
		if x, ok := t.X.(*ast.Ident); ok && x.Name == "time" && t.Sel.Name == "Time" {
			return timeKind
		}
	case *ast.StarExpr:
		if x, ok := t.X.(*ast.Ident); ok && x.Name == "Rare" {
			return rareKind
		}
	}
	return plain
}

// equal is the expression that is true when a's and b's field f are equal.
// A list whose JSON key is always there tells null from []: for Watching,
// "unknown" from "nothing".
func equal(a, b string, f field) (string, error) {
	x, y := a+"."+f.name, b+"."+f.name
	switch f.kind {
	case timeKind:
		return x + ".Equal(" + y + ")", nil
	case sliceKind:
		eq := "slices.Equal(" + x + ", " + y + ")"
		if !strings.Contains(f.tag.Get("json"), "omitempty") {
			eq += " && (" + x + " == nil) == (" + y + " == nil)"
		}
		return eq, nil
	case rareKind:
		return "rareEqual(" + x + ", " + y + ")", nil
	}
	if strings.HasPrefix(f.typ, "*") || strings.HasPrefix(f.typ, "map[") {
		return "", fmt.Errorf("field %s of type %s: teach fieldgen how to compare it", f.name, f.typ)
	}
	return x + " == " + y, nil
}

func compared(fields []field) []field {
	var out []field
	for _, f := range fields {
		if f.tag.Get("eq") != "-" {
			out = append(out, f)
		}
	}
	return out
}

func conj(a, b string, fields []field) (string, error) {
	var terms, last []string
	for _, f := range compared(fields) {
		t, err := equal(a, b, f)
		if err != nil {
			return "", err
		}
		if f.kind == rareKind {
			// A call: after the fields compared in place.
			last = append(last, t)
			continue
		}
		terms = append(terms, t)
	}
	return strings.Join(append(terms, last...), " &&\n\t\t"), nil
}

func generate(node, rare []field) ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("// Code generated by fieldgen from types.go; DO NOT EDIT.\n\n")
	p("package lockqueue\n\nimport (\n")
	all := append(append([]field(nil), node...), rare...)
	if slices.ContainsFunc(all, func(f field) bool { return f.kind == sliceKind }) {
		p("\t\"slices\"\n")
	}
	if slices.ContainsFunc(rare, func(f field) bool { return strings.Contains(f.typ, "time.") }) {
		p("\t\"time\"\n") // the accessors' types
	}
	p(")\n\n")

	nodeEq, err := conj("n", "m", node)
	if err != nil {
		return nil, err
	}
	p("// NodesEqual is Equal without copying the nodes, for loops over big queues:\n")
	p("// every field of Node and Rare but those tagged eq:\"-\".\n")
	p("func NodesEqual(n, m *Node) bool {\n\treturn %s\n}\n\n", nodeEq)

	rareEq, err := conj("a", "b", rare)
	if err != nil {
		return nil, err
	}
	p("// rareEqual compares two nodes' Rare: the same one when the nodes were\n")
	p("// copied from one another, as most are.\n")
	p("func rareEqual(a, b *Rare) bool {\n\tif a == b {\n\t\treturn true\n\t}\n")
	p("\tvar zero Rare\n\tif a == nil {\n\t\ta = &zero\n\t}\n\tif b == nil {\n\t\tb = &zero\n\t}\n")
	p("\treturn %s\n}\n\n", rareEq)

	var zero []string
	for _, f := range rare {
		switch f.kind {
		case timeKind:
			zero = append(zero, "r."+f.name+".IsZero()")
		case sliceKind:
			zero = append(zero, "len(r."+f.name+") == 0")
		default:
			zero = append(zero, "r."+f.name+" == z."+f.name)
		}
	}
	p("// zero reports whether every field of r is zero.\n")
	p("func (r *Rare) zero() bool {\n\tvar z Rare\n\treturn %s\n}\n", strings.Join(zero, " &&\n\t\t"))

	// Pointer receivers: with value ones each call copied the whole Node,
	// and the getters a join calls per node were a third of a 1,000-node
	// queue's Build and join (lockqueue's BenchmarkBuildJoin).
	for _, f := range rare {
		p("\n// %s is Rare's %s.\n", f.name, f.name)
		p("func (n *Node) %s() (v %s) {\n\tif n.Rare != nil {\n\t\tv = n.Rare.%s\n\t}\n\treturn v\n}\n", f.name, f.typ, f.name)
		same := "v == n." + f.name + "()"
		if f.kind == sliceKind {
			same = "len(v) == 0 && len(n." + f.name + "()) == 0"
		}
		p("\n// Set%s sets %s on a copy of n's Rare.\n", f.name, f.name)
		p("func (n *Node) Set%s(v %s) {\n\tif %s {\n\t\treturn\n\t}\n\tn.rare().%s = v\n}\n", f.name, f.typ, same, f.name)
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format the output: %w\n%s", err, b.Bytes())
	}
	return src, nil
}
