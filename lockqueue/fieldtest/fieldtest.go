// Package fieldtest walks lockqueue's one list of a lock's fields (Node,
// Rare and Snapshot in types.go) for tests: each field with its tags, and a
// change of it, so a test of a place that must follow the list (equality,
// the socket's frames, the history) fails when a field added there is
// missing from that place. Only tests import it.
package fieldtest

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Field is one exported field of a Node (Rare's among them) or of a
// Snapshot.
type Field struct {
	Name string
	Tag  reflect.StructTag
	rare bool // a field of the node's Rare
	i    int
}

// JSON is the field's key in the JSON scripts and the browser read.
func (f Field) JSON() string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// History is what the history keeps of the field (see lockqueue.Node).
func (f Field) History() string { return f.Tag.Get("history") }

func (f Field) String() string { return f.Name }

// NodeFields are Node's exported fields, then Rare's.
func NodeFields() []Field {
	out := fields(reflect.TypeFor[lockqueue.Node](), false)
	return append(out, fields(reflect.TypeFor[lockqueue.Rare](), true)...)
}

// SnapshotFields are Snapshot's exported fields but its nodes.
func SnapshotFields() []Field {
	var out []Field
	for _, f := range fields(reflect.TypeFor[lockqueue.Snapshot](), false) {
		if f.Name != "Nodes" {
			out = append(out, f)
		}
	}
	return out
}

func fields(t reflect.Type, rare bool) []Field {
	var out []Field
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Anonymous {
			continue // the unexported never show; Rare is walked on its own
		}
		out = append(out, Field{Name: sf.Name, Tag: sf.Tag, rare: rare, i: i})
	}
	return out
}

// ChangeNode is n with f set to a value it did not have. n's Rare is
// copied, never written: nodes copied from one another share it.
func (f Field) ChangeNode(n lockqueue.Node) lockqueue.Node {
	if !f.rare {
		change(reflect.ValueOf(&n).Elem().Field(f.i), f.Name)
		return n
	}
	var r lockqueue.Rare
	if n.Rare != nil {
		r = *n.Rare
	}
	change(reflect.ValueOf(&r).Elem().Field(f.i), f.Name)
	n.SetRare(r)
	return n
}

// ChangeSnapshot is s with f set to a value it did not have.
func (f Field) ChangeSnapshot(s lockqueue.Snapshot) lockqueue.Snapshot {
	change(reflect.ValueOf(&s).Elem().Field(f.i), f.Name)
	return s
}

// someTime is the time a zero time field is changed to.
var someTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// change sets v, field name's value, to another value of its type. A
// field of a type it does not know stops the test's run: teach it.
func change(v reflect.Value, name string) {
	switch t := v.Type(); {
	case t == reflect.TypeFor[time.Time]():
		old := v.Interface().(time.Time)
		if old.IsZero() {
			v.Set(reflect.ValueOf(someTime))
		} else {
			v.Set(reflect.ValueOf(old.Add(time.Second)))
		}
	case t == reflect.TypeFor[[]string]():
		v.Set(reflect.ValueOf(append(v.Interface().([]string)[:v.Len():v.Len()], "/changed")))
	case t == reflect.TypeFor[[]lockqueue.WaitEdge]():
		v.Set(reflect.ValueOf([]lockqueue.WaitEdge{{To: "changed", Provenance: lockqueue.ByServer}}))
	case t == reflect.TypeFor[lockqueue.Parent]():
		p := v.Interface().(lockqueue.Parent)
		p.ChildWatchers++
		v.Set(reflect.ValueOf(p))
	case t == reflect.TypeFor[[]lockqueue.Watch]():
		v.Set(reflect.ValueOf([]lockqueue.Watch{{To: "changed", Kind: lockqueue.EdgeUnexpected}}))
	case t == reflect.TypeFor[[]lockqueue.Alert]():
		a := lockqueue.Alert{Kind: "changed", Nodes: []string{"changed"}, Message: "changed"}
		v.Set(reflect.ValueOf(append(v.Interface().([]lockqueue.Alert)[:v.Len():v.Len()], a)))
	case t == reflect.TypeFor[*lockqueue.Lane]():
		v.Set(reflect.ValueOf(&lockqueue.Lane{Lines: []string{"changed"}}))
	case t == reflect.TypeFor[*lockqueue.Filling]():
		if v.IsNil() {
			v.Set(reflect.ValueOf(&lockqueue.Filling{Read: 1, Of: 2}))
		} else {
			v.SetZero()
		}
	case t.Kind() == reflect.String:
		v.SetString(v.String() + "x")
	case t.Kind() == reflect.Int64 || t.Kind() == reflect.Int:
		v.SetInt(v.Int() + 1)
	case t.Kind() == reflect.Bool:
		v.SetBool(!v.Bool())
	default:
		panic(fmt.Sprintf("fieldtest: field %s of type %s: teach change how to change it", name, t))
	}
}

// OfNode is f's value in n (a Rare field's zero when n has no Rare).
func (f Field) OfNode(n lockqueue.Node) any {
	if !f.rare {
		return reflect.ValueOf(n).Field(f.i).Interface()
	}
	var r lockqueue.Rare
	if n.Rare != nil {
		r = *n.Rare
	}
	return reflect.ValueOf(r).Field(f.i).Interface()
}

// OfSnapshot is f's value in s.
func (f Field) OfSnapshot(s lockqueue.Snapshot) any {
	return reflect.ValueOf(s).Field(f.i).Interface()
}

// Same reports whether two values of a field are the same: times by
// Equal (a replayed time is in another location), the rest deeply.
func Same(a, b any) bool {
	if ta, ok := a.(time.Time); ok {
		tb, ok := b.(time.Time)
		return ok && ta.Equal(tb)
	}
	return reflect.DeepEqual(a, b)
}
