package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/qafleet/fleetd/fuzzing"
)

// Reproducer is a standalone _test.go for e's target package (package
// <name>_test) that runs e's harness body on one input, a `go test fuzz
// v1` file of e's fuzz target: it fails (a panic) on the revision that has
// the bug and passes on one that fixed it, so the fix stage can keep it as
// the regression test. It returns the file's path relative to the module
// root and its content. Errors: e is not a generated harness, or the
// input does not parse or does not match e's fuzz arguments.
func Reproducer(e *Entry, input []byte) (string, string, error) {
	if e.Kind == KindModel {
		return modelReproducer(e, input)
	}
	if len(e.Body) == 0 || len(e.Args) == 0 {
		return "", "", fmt.Errorf("reproducer: %s has no generated harness", e.ID)
	}
	lits, err := inputLiterals(e, input)
	if err != nil {
		return "", "", err
	}
	var decls []string
	for i, lit := range lits {
		decls = append(decls, fmt.Sprintf("\tvar a%d %s = %s", i, e.Args[i], lit))
	}
	body := strings.Join(e.Body, "\n")
	imports := map[string]string{"testing": "testing", "encoding/binary": "binary", "math": "math", "bytes": "bytes"}
	for p, a := range e.Imports {
		if strings.Contains(body, a+".") {
			imports[p] = a
		}
	}
	name := reproName(e, input)
	var s strings.Builder
	s.WriteString(strings.Replace(header(e.PkgName+"_test", imports), "DO NOT EDIT.", "a regression test for a crash fleetd's fuzzing found.", 1))
	fmt.Fprintf(&s, "\n// %s replays the input that made %s.%s crash (fuzz target %s).\n", name, e.Pkg, e.Name, e.Target)
	fmt.Fprintf(&s, "func %s(t *testing.T) {\n%s\n", name, strings.Join(decls, "\n"))
	for i := range lits {
		fmt.Fprintf(&s, "\t_ = a%d\n", i)
	}
	s.WriteString("\tfunc() {\n")
	for _, st := range e.Body { // a return (a constructor refused the input) ends the closure: the test passes
		s.WriteString("\t\t" + st + "\n")
	}
	s.WriteString("\t}()\n}\n")
	return reproPath(e, input), s.String(), nil
}

// reproName is the test function of e's reproducer of input:
// TestFleetdRepro<target>_<input hash>, so two crashes one harness found
// are two tests.
func reproName(e *Entry, input []byte) string {
	return "TestFleetdRepro" + strings.TrimPrefix(e.Target, "Fuzz") + "_" + inputHash(input)
}

// reproPath is e's reproducer file of input, relative to the module root:
// in the target package's directory, named by the target and the input's
// hash (two crashes of one harness are two files).
func reproPath(e *Entry, input []byte) string {
	return path.Clean(path.Join(e.Dir, "fleetd_repro_"+strings.ToLower(strings.TrimPrefix(e.Target, "Fuzz"))+"_"+inputHash(input)+"_test.go"))
}

// inputHash is the first 8 hex digits of the input's SHA-256.
func inputHash(input []byte) string {
	sum := sha256.Sum256(input)
	return hex.EncodeToString(sum[:4])
}

// inputLiterals reads input (a `go test fuzz v1` file of e's fuzz target)
// into one Go expression per fuzz argument, typed as e.Args says. Errors:
// it does not parse, or its values do not match e's arguments.
func inputLiterals(e *Entry, input []byte) ([]string, error) {
	vals, err := fuzzing.ParseGoCorpus(input)
	if err != nil {
		return nil, fmt.Errorf("reproducer: %w", err)
	}
	if len(vals) != len(e.Args) {
		return nil, fmt.Errorf("reproducer: the input has %d values, %s takes %d", len(vals), e.Target, len(e.Args))
	}
	lits := make([]string, len(vals))
	for i, v := range vals {
		switch e.Args[i] {
		case "string":
			lits[i] = strconv.Quote(string(v.Bytes))
		case "[]byte":
			lits[i] = "[]byte(" + strconv.Quote(string(v.Bytes)) + ")"
		default:
			if v.Bytes != nil || v.Type == "string" || v.Type == "[]byte" {
				return nil, fmt.Errorf("reproducer: value %d is a %s, %s takes a %s there", i+1, v.Type, e.Target, e.Args[i])
			}
			lits[i] = e.Args[i] + "(" + v.Text + ")"
		}
	}
	return lits, nil
}

// Memory is what the generator keeps about one repository across runs:
// the entries it generated last (what a replay needs to judge and to write
// a reproducer), the entries it dropped and why, and the harness crashes
// counted per entry.
type Memory struct {
	Module  string            `json:"module"` // the module path
	Entries []*Entry          `json:"entries"`
	Files   map[string]string `json:"files,omitempty"` // the generated files, by slash path under the module root
	Dropped map[string]string `json:"dropped"`         // entry ID -> why it is no longer generated
	Crashes map[string]int    `json:"harness_crashes"` // entry ID -> harness crashes seen
}

// MemoryFile is Memory's file name in a repository's fuzz directory.
const MemoryFile = "harnesses.json"

// LoadMemory reads dir's Memory; a missing file is an empty one. Errors:
// the file does not parse (named).
func LoadMemory(dir string) (*Memory, error) {
	m := &Memory{Dropped: map[string]string{}, Crashes: map[string]int{}}
	b, err := os.ReadFile(filepath.Join(dir, MemoryFile))
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, MemoryFile), err)
	}
	if m.Dropped == nil {
		m.Dropped = map[string]string{}
	}
	if m.Crashes == nil {
		m.Crashes = map[string]int{}
	}
	return m, nil
}

// Save writes m to dir atomically.
func (m *Memory) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, MemoryFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, MemoryFile))
}

// Entry returns the remembered entry whose fuzz target is target in
// package pkg, or nil.
func (m *Memory) Entry(pkg, target string) *Entry {
	for _, e := range m.Entries {
		if e.Target == target && e.Package == pkg {
			return e
		}
	}
	return nil
}

// HarnessCrash counts a harness crash of e and drops e for later runs:
// the generator stops making what crashed by its own misuse.
func (m *Memory) HarnessCrash(e *Entry, why string) {
	m.Crashes[e.ID]++
	m.Dropped[e.ID] = "harness crash: " + why
}

// TotalCrashes is the harness crashes counted over every entry.
func (m *Memory) TotalCrashes() int {
	n := 0
	for _, c := range m.Crashes {
		n += c
	}
	return n
}

// DroppedIDs lists the dropped entry IDs, sorted.
func (m *Memory) DroppedIDs() []string {
	var ids []string
	for id := range m.Dropped {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Remember records a generation: the module, the entries (dropped ones
// with their reason) and the generated files under dir's Dir.
func (m *Memory) Remember(dir string, entries []*Entry) error {
	mod, err := ModulePath(dir)
	if err != nil {
		return err
	}
	m.Module, m.Entries, m.Files = mod, entries, map[string]string{}
	return filepath.WalkDir(filepath.Join(dir, Dir), func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		m.Files[filepath.ToSlash(rel)] = string(b)
		return err
	})
}

// Prepare makes a fresh copy of the module ready to run the remembered
// harnesses: go-fuzz files enabled, the generated files written.
func (m *Memory) Prepare(dir string) error {
	enableGoFuzz(dir)
	for rel, src := range m.Files {
		if strings.Contains(rel, "..") || !strings.HasPrefix(rel, Dir+"/") {
			return fmt.Errorf("harness file %q is outside %s", rel, Dir)
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ModulePath reads the module path from dir's go.mod. Errors: no go.mod,
// or no module line in it.
func ModulePath(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("not a Go module: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", filepath.Join(dir, "go.mod"))
}
