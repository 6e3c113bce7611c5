package fuzzstage

import (
	"strings"
	"testing"
)

func TestMinimize(t *testing.T) {
	t.Run("crash line in a program", func(t *testing.T) {
		prog := "let a = 1;\nfn f() {\n  return 2;\n}\nenum E {}\nprint a;\nprint f();\n"
		calls := 0
		fails := func(s string) bool { calls++; return strings.Contains(s, "enum E {}") }
		got, tests := Minimize(prog, 200, fails)
		if got != "enum E {}" || tests != calls || calls > 80 {
			t.Errorf("Minimize = %q after %d tests (%d calls)", got, tests, calls)
		}
	})
	t.Run("needs two distant parts", func(t *testing.T) {
		prog := "a\nb\nc\nd\ne\nf\ng\nh\n"
		got, _ := Minimize(prog, 200, func(s string) bool { return strings.Contains(s, "b") && strings.Contains(s, "g") })
		if got != "bg" && got != "b\ng" {
			t.Errorf("Minimize = %q", got)
		}
	})
	t.Run("budget", func(t *testing.T) {
		calls := 0
		got, tests := Minimize(strings.Repeat("x\n", 100)+"BOOM", 5, func(s string) bool { calls++; return strings.Contains(s, "BOOM") })
		if calls > 5 || tests > 5 || !strings.Contains(got, "BOOM") {
			t.Errorf("over budget: %d calls, %d tests, %q", calls, tests, got)
		}
	})
	t.Run("surrounding whitespace goes even when ddmin ran out", func(t *testing.T) {
		// The demo's hang: a long mutant, a small budget, a trailing newline left.
		prog := strings.Repeat("let a = 1;\n", 20) + "while true {}\n" + strings.Repeat("print a;\n", 5)
		got, tests := Minimize(prog, 30, func(s string) bool { return strings.Contains(s, "while true {}") })
		if got != "while true {}" || tests > 30 {
			t.Errorf("Minimize = %q after %d tests", got, tests)
		}
	})
	t.Run("never the same candidate twice", func(t *testing.T) {
		seen := map[string]bool{}
		Minimize("aaaa\naaaa\nbbbb\n", 100, func(s string) bool {
			if seen[s] {
				t.Errorf("tested %q twice", s)
			}
			seen[s] = true
			return strings.Contains(s, "b")
		})
	})
}
