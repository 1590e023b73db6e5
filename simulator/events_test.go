package simulator

import (
	"reflect"
	"testing"
)

func TestStatsAddSub(t *testing.T) {
	// Every field set, each to its own number, so a field the sums miss
	// or mix up shows.
	var a, b Stats
	av, bv := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for i := range av.NumField() {
		av.Field(i).SetInt(int64(10 * (i + 1)))
		bv.Field(i).SetInt(int64(i + 1))
	}
	before := a
	sum := a
	sum.Add(b)
	diff := a.Sub(b)
	for i := range av.NumField() {
		name := av.Type().Field(i).Name
		if got, want := reflect.ValueOf(sum).Field(i).Int(), int64(11*(i+1)); got != want {
			t.Errorf("Add: %s = %d, want %d", name, got, want)
		}
		if got, want := reflect.ValueOf(diff).Field(i).Int(), int64(9*(i+1)); got != want {
			t.Errorf("Sub: %s = %d, want %d", name, got, want)
		}
	}
	if a != before {
		t.Errorf("Sub changed its receiver: %+v, want %+v", a, before)
	}
}
