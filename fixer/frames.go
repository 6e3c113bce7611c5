package fixer

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Stack frames and file:line references in test output. The output holds
// the repro's input too (a failing fuzz test prints it), so nothing here
// trusts a path: a candidate counts only if it names an existing regular
// file inside the repository, and Grounded drops test files, test data and
// CI configuration whatever the output says.
var (
	// Go: "\t/abs/path/file.go:123 +0x1d", and file.go:12: in test logs.
	goFrame = regexp.MustCompile(`(?m)^\s+(\S+\.go):(\d+)(?:\s+\+0x[0-9a-f]+)?\s*$`)
	// Python: File "/abs/path/x.py", line 3, in f
	pyFrame = regexp.MustCompile(`File "([^"\n]+)", line (\d+)`)
	// Generic: path/to/file.ext:line[:col] (Rust, C, JS traces, compiler
	// diagnostics), a path with at least one slash or a dot-extension.
	anyFrame = regexp.MustCompile(`(?:^|[\s(\[])((?:[A-Za-z0-9_.\-]+/)*[A-Za-z0-9_\-]+\.[A-Za-z0-9]+):(\d+)(?::\d+)?`)
)

// Frames returns the repository-relative paths of the files test output
// points at, in order of first appearance: Go, Python and generic
// file:line references that resolve to existing regular files under root
// (absolute ones must lie inside root; relative ones are taken from root or
// from any directory a Go frame named, as go test prints file.go:12
// relative to the package). Symlinks are not followed out of root.
func Frames(output, root string) []string {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	var out []string
	seen := map[string]bool{}
	dirs := []string{""} // relative bases: the root, then directories frames named
	add := func(p string) {
		rel, ok := inside(root, p)
		if !ok || seen[rel] {
			return
		}
		seen[rel] = true
		out = append(out, rel)
		if d := filepath.Dir(rel); d != "." && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	var cands []string
	for _, m := range goFrame.FindAllStringSubmatch(output, -1) {
		cands = append(cands, m[1])
	}
	for _, m := range pyFrame.FindAllStringSubmatch(output, -1) {
		cands = append(cands, m[1])
	}
	for _, m := range anyFrame.FindAllStringSubmatch(output, -1) {
		cands = append(cands, m[1])
	}
	// Absolute paths first: they also teach which directories relative
	// names (go test's "compile_test.go:12:") are relative to.
	for _, c := range cands {
		if filepath.IsAbs(c) {
			add(c)
		}
	}
	for _, c := range cands {
		if filepath.IsAbs(c) {
			continue
		}
		for _, d := range dirs {
			if _, ok := inside(root, filepath.Join(root, d, c)); ok {
				add(filepath.Join(root, d, c))
				break
			}
		}
	}
	return out
}

// inside returns p relative to root (slash-separated) when p, with every
// symlink resolved, is an existing regular file under root.
func inside(root, p string) (string, bool) {
	if len(p) > 4096 || strings.ContainsRune(p, 0) {
		return "", false
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	fi, err := os.Lstat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	if rel == ".git" || strings.HasPrefix(rel, ".git/") {
		return "", false
	}
	return rel, true
}

// Grounded filters frames to the files a patch may touch: no test files,
// test data or CI configuration (Protected), nothing under extra (the
// regression test's own path).
func Grounded(frames []string, extra ...string) []string {
	var out []string
	for _, f := range frames {
		if Protected(f) != "" || slices.Contains(extra, f) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// ciNames are files and directories holding CI or repository automation
// configuration; a patch never touches them.
var ciNames = []string{
	".ci", ".github", ".gitlab", ".gitlab-ci.yml", ".circleci", ".travis.yml", ".buildkite",
	".drone.yml", ".woodpecker", ".woodpecker.yml", ".gitea", ".forgejo", "azure-pipelines.yml",
	"Jenkinsfile", "bitbucket-pipelines.yml", ".pre-commit-config.yaml", ".gitmodules",
	".gitattributes", ".gitignore", "CODEOWNERS", ".git",
}

// Protected says why a repository path may never be patched ("" when it
// may): test files, test data, CI and repository configuration.
func Protected(p string) string {
	p = strings.TrimPrefix(filepath.ToSlash(p), "./")
	parts := strings.Split(p, "/")
	base := parts[len(parts)-1]
	for _, part := range parts {
		if slices.Contains(ciNames, part) {
			return "CI or repository configuration"
		}
	}
	for _, part := range parts[:len(parts)-1] {
		switch strings.ToLower(part) {
		case "testdata", "test", "tests", "__tests__", "spec", "specs", "fixtures", "e2e":
			return "test data or a test directory"
		}
	}
	lower := strings.ToLower(base)
	switch {
	case strings.HasSuffix(lower, "_test.go"),
		strings.HasPrefix(lower, "test_") && strings.HasSuffix(lower, ".py"),
		strings.HasSuffix(lower, "_test.py"),
		strings.Contains(lower, ".test."), strings.Contains(lower, ".spec."),
		strings.HasSuffix(lower, "_spec.rb"), strings.HasSuffix(lower, "_test.rs"),
		strings.HasSuffix(lower, "test.java"), strings.HasSuffix(lower, "tests.cs"):
		return "a test file"
	}
	return ""
}
