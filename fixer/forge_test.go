package fixer

import (
	"reflect"
	"strings"
	"testing"
)

// mergeMethods lists t's methods whose names mention merging.
func mergeMethods(t reflect.Type) []string {
	var out []string
	for i := range t.NumMethod() {
		if name := t.Method(i).Name; strings.Contains(strings.ToLower(name), "merge") {
			out = append(out, name)
		}
	}
	return out
}

// TestForgeCannotMerge checks the Forge interface has no merge method (the
// backends' tests check their types, and that the server saw no merge).
// fleetd proposes; a human merges.
func TestForgeCannotMerge(t *testing.T) {
	it := reflect.TypeFor[Forge]()
	if it.NumMethod() < 5 {
		t.Fatalf("Forge has %d methods: the check would pass vacuously", it.NumMethod())
	}
	if m := mergeMethods(it); len(m) > 0 {
		t.Errorf("Forge has merge methods %v", m)
	}
	type withMerge interface {
		Forge
		MergePR(int) error
	}
	if m := mergeMethods(reflect.TypeFor[withMerge]()); len(m) != 1 {
		t.Errorf("the check does not notice a MergePR method: %v", m)
	}
}
