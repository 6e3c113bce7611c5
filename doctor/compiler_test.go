package doctor

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCompiler: the compiler runs on the corpus program in a throwaway
// jail ({src} and {out} filled in): one that compiles passes, one that
// fails is named with its exit and stderr, one that cannot start is fatal,
// one that hangs is cut at the timeout; no jail is left behind.
func TestCompiler(t *testing.T) {
	base := t.TempDir()
	for _, tc := range []struct {
		name    string
		argv    []string
		timeout time.Duration
		ok      bool
		fatal   bool
		want    string
	}{
		{"compiles", []string{"/bin/sh", "-c", `grep -q 'program' {src} && cp {src} {out}`}, 0, true, false, "compiled the first corpus program"},
		{"fails", []string{"/bin/sh", "-c", "echo 'syntax error at 1:1' >&2; exit 3"}, 0, false, false, "exit 3"},
		{"missing", []string{"/nonexistent/compiler", "{src}"}, 0, false, true, "does not run"},
		{"hangs", []string{"/bin/sh", "-c", "sleep 30"}, 200 * time.Millisecond, false, false, "did not finish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Compiler(context.Background(), base, tc.argv, "a program", tc.timeout)
			if c.OK != tc.ok || c.Fatal != tc.fatal || !strings.Contains(c.Detail, tc.want) || !tc.ok && c.Fix == "" {
				t.Fatalf("Compiler(%q) = %+v; want ok=%v fatal=%v and %q", tc.argv, c, tc.ok, tc.fatal, tc.want)
			}
			if tc.name == "fails" && !strings.Contains(c.Detail, "syntax error at 1:1") {
				t.Fatalf("the compiler's stderr is not named: %s", c.Detail)
			}
		})
	}
	left, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		if strings.HasPrefix(e.Name(), "doctor-") {
			t.Errorf("jail %s left behind", e.Name())
		}
	}
}
