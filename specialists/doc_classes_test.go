package specialists

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docClass is one line of the package doc's "Where each class is found".
type docClass struct {
	label string   // the class, with its parenthetical
	paths []string // the files and sub-packages (trailing /) named
}

// docClasses reads the class map out of doc.go: the list items between
// its heading and the next heading.
func docClasses(doc string) ([]docClass, error) {
	const head = "// # Where each class is found\n"
	i := strings.Index(doc, head)
	if i < 0 {
		return nil, os.ErrNotExist
	}
	rest := doc[i+len(head):]
	if j := strings.Index(rest, "\n// #"); j >= 0 {
		rest = rest[:j]
	}
	var out []docClass
	for _, line := range strings.Split(rest, "\n") {
		item, ok := strings.CutPrefix(line, "//   - ")
		if !ok {
			continue
		}
		label, where, ok := strings.Cut(item, ": ")
		if strings.Count(label, "(") > strings.Count(label, ")") {
			// The cut fell inside the label's parenthetical: cut after it.
			k := strings.Index(item, "): ")
			label, where, ok = item[:max(k+1, 0)], item[k+3:], k >= 0
		}
		if !ok {
			out = append(out, docClass{label: item})
			continue
		}
		out = append(out, docClass{label: label, paths: docPath.FindAllString(where, -1)})
	}
	return out, nil
}

// docPath is a file (x.go, dir/x.go) or a sub-package (dir/) in the map.
var docPath = regexp.MustCompile(`\b(?:[a-z0-9_]+/)*[a-z0-9_]+\.go\b|\b[a-z0-9_]+/`)

// squash is s lowercased with everything but letters and digits removed:
// "stored XSS" and stored_xss.go meet as storedxss.
func squash(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// namedAfter reports whether path is a file or sub-package named after
// the class: its name (or its sub-package's) appears in the label.
func namedAfter(label, path string) bool {
	l := squash(label)
	dir, file := filepath.Split(path)
	if dir != "" && strings.Contains(l, squash(strings.Split(dir, "/")[0])) {
		return true
	}
	return file != "" && strings.Contains(l, squash(strings.TrimSuffix(file, ".go")))
}

// TestDocClassFiles keeps the package doc's class map true: every class
// it names has a file or sub-package named after it, and every path it
// lists exists, so "where is stored XSS found?" is answered by file names.
func TestDocClassFiles(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	classes, err := docClasses(string(b))
	if err != nil || len(classes) < 20 {
		t.Fatalf("the doc's class map: %d classes, %v", len(classes), err)
	}
	for _, c := range classes {
		if len(c.paths) == 0 {
			t.Errorf("class %q names no file", c.label)
			continue
		}
		named := false
		for _, p := range c.paths {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("class %q: %s does not exist (%v)", c.label, p, err)
			}
			named = named || namedAfter(c.label, p)
		}
		if !named {
			t.Errorf("class %q has no file named after it (listed: %s)", c.label, strings.Join(c.paths, ", "))
		}
	}
}

// TestDocClassFilesCatchesRot runs the same checks on a doc that lost a
// file and a doc whose class has no file of its name: both must be caught.
func TestDocClassFilesCatchesRot(t *testing.T) {
	doc := "// # Where each class is found\n//\n// Text.\n" +
		"//   - stored XSS: stored_xss.go (secStoredXSS: a canary), stored_xss_dom.go\n" +
		"//   - agent attacks (redteam): redteam/\n" +
		"//   - clickjacking: headers.go\n" +
		"//   - crashes (fuzzstage: compiler, harness): fuzzstage/\n" +
		"//\n// # Replay\n//   - not a class: nothing.go\n"
	classes, err := docClasses(doc)
	if err != nil || len(classes) != 4 {
		t.Fatalf("parsed %+v, %v; want 4 classes", classes, err)
	}
	want := []struct {
		label string
		paths []string
		named bool
	}{
		{"stored XSS", []string{"stored_xss.go", "stored_xss_dom.go"}, true},
		{"agent attacks (redteam)", []string{"redteam/"}, true},
		{"clickjacking", []string{"headers.go"}, false},
		{"crashes (fuzzstage: compiler, harness)", []string{"fuzzstage/"}, true},
	}
	for i, w := range want {
		c := classes[i]
		if c.label != w.label || strings.Join(c.paths, ",") != strings.Join(w.paths, ",") {
			t.Errorf("class %d = %q %q, want %q %q", i, c.label, c.paths, w.label, w.paths)
		}
		named := false
		for _, p := range c.paths {
			named = named || namedAfter(c.label, p)
		}
		if named != w.named {
			t.Errorf("%q named after its class = %v, want %v", c.label, named, w.named)
		}
	}
	if _, err := os.Stat("no_such_class.go"); err == nil {
		t.Fatal("no_such_class.go exists")
	}
}
