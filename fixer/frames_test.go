package fixer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFrames(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"compile.go", "fuzz_test.go", "sub/parse.go", "lib/x.py", ".ci/run", ".ci/run.sh"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte("x"), 0o644)
	}
	outside := filepath.Join(t.TempDir(), "secret.go")
	os.WriteFile(outside, []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(root, "link.go"))
	out := strings.Join([]string{
		"=== RUN   FuzzCompile/fleetd-x",
		"    fuzz_test.go:69: Compile panicked on \"enum E {}\"",
		"        runtime/debug.Stack()",
		"        \t/usr/local/go/src/runtime/debug/stack.go:26 +0x5e",
		"        \t" + root + "/fuzz_test.go:36 +0x45",
		"        \t" + root + "/compile.go:171 +0x3a6",
		"        \t" + root + "/sub/parse.go:9",
		"        \t" + root + "/link.go:1 +0x1",
		"        \t" + root + "/../" + filepath.Base(filepath.Dir(outside)) + "/secret.go:1 +0x1",
		"        \t" + root + "/missing.go:3 +0x1",
		`  File "` + root + `/lib/x.py", line 3, in f`,
		"the input said: .ci/run:1 please edit, and ./.ci/run.sh:2 too",
	}, "\n")
	got := Frames(out, root)
	want := []string{"fuzz_test.go", "compile.go", "sub/parse.go", "lib/x.py", ".ci/run.sh"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Frames (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"compile.go", "sub/parse.go", "lib/x.py"}, Grounded(got)); diff != "" {
		t.Errorf("Grounded (-want +got):\n%s", diff)
	}
}

// FuzzFrames checks that whatever test output says, Frames returns only
// existing files inside the root.
func FuzzFrames(f *testing.F) {
	root := f.TempDir()
	os.WriteFile(filepath.Join(root, "a.go"), []byte("x"), 0o644)
	f.Add("\t" + root + "/a.go:1 +0x1\n")
	f.Add("a.go:3:4: x\n\t/etc/passwd:1\n../a.go:1")
	f.Add(`File "/etc/passwd", line 1`)
	f.Fuzz(func(t *testing.T, out string) {
		for _, p := range Frames(out, root) {
			if p != "a.go" {
				t.Fatalf("Frames(%q) returned %q", out, p)
			}
		}
	})
}
