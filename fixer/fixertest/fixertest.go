// Package fixertest holds what tests of the fix stage share: a real Gitea
// (built from the Go module proxy, FACTS.md; .ci/run builds and caches it
// and exports FLEETD_GITEA) on 127.0.0.1 with an admin user and token made
// by its own CLI; a recording, fault-injecting proxy to put between fleetd
// and it; a git repository made of the testbed compiler; a reproducer that
// runs that compiler in-process; and a poster that records what it posts.
// For tests only (layout_test.go).
package fixertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixtures/testbed"
	"github.com/qafleet/fleetd/fixtures/testbed/compiler"
	"github.com/qafleet/fleetd/fleet"
)

// CompilerRepo makes a git repository (branch main, one commit) holding the
// testbed compiler as a standalone Go module (testbed.WriteCompilerModule)
// and returns its directory.
func CompilerRepo(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "tinylang")
	if err := testbed.WriteCompilerModule(dir); err != nil {
		tb.Fatal(err)
	}
	Git(tb, dir, "init", "--quiet", "-b", "main")
	Git(tb, dir, "add", "-A")
	Git(tb, dir, "commit", "--quiet", "-m", "TinyLang compiler")
	return dir
}

// Git runs git in dir with fleetd's git environment and fails the test on
// error.
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	out, err := fixer.Git(context.Background(), dir, nil, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// CompilerRepoConfig is target.repo for a CompilerRepo: the fuzz target at
// the root, and the test command without TestPlantedFlaws (it asserts the
// planted flaws are present, so a fix fails it on purpose).
func CompilerRepoConfig(url string) fleet.Repo {
	return fleet.Repo{
		URL: url, Base: "main", FuzzPackage: ".", FuzzTarget: "FuzzCompile", Surfaces: []string{"compiler"},
		Test: []string{"go", "test", "-count=1", "-skip", "TestPlantedFlaws", "./..."},
	}
}

// CorrectPatch is a diff fixing the compiler's panic on an enum without
// variants, made against a CompilerRepo by editing the file and asking git.
func CorrectPatch(tb testing.TB) string {
	return patch(tb, "compile.go", "\te.zero = d.variants[0].name\n",
		"\tif len(d.variants) == 0 {\n\t\tc.fail(d.pos, \"enum %s has no variants\", d.name)\n\t}\n\te.zero = d.variants[0].name\n")
}

// WrongPatch is a diff to the grounded file that does not fix anything.
func WrongPatch(tb testing.TB) string {
	return patch(tb, "compile.go", "\te.zero = d.variants[0].name\n", "\te.zero = d.variants[len(d.variants)-1+0*len(e.variants)].name\n")
}

// PatchOf returns the diff replacing old by new in file of a CompilerRepo.
func PatchOf(tb testing.TB, file, old, new string) string { return patch(tb, file, old, new) }

func patch(tb testing.TB, file, old, new string) string {
	tb.Helper()
	dir := CompilerRepo(tb)
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		tb.Fatalf("%s does not hold %q", file, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("git", "diff")
	cmd.Dir, cmd.Env = dir, fixer.GitEnv()
	out, err := cmd.Output() // not trimmed: a diff may end in a blank context line
	if err != nil {
		tb.Fatal(err)
	}
	return string(out)
}

// Reproducer replays qa_compile repros by compiling the source with the
// testbed compiler in this process: reproduced when it panics. Other tools
// do not reproduce.
type Reproducer struct {
	mu    sync.Mutex
	Calls int
}

// Reproduce implements fixer.Reproducer.
func (r *Reproducer) Reproduce(ctx context.Context, repro fleet.Repro) (out fixer.Reproduction, err error) {
	r.mu.Lock()
	r.Calls++
	r.mu.Unlock()
	out.RunID = "r-test"
	var args struct{ Source string }
	if repro.Tool != "qa_compile" || jsonUnmarshal(repro.Args, &args) != nil {
		out.Outcome = "unsupported"
		return out, nil
	}
	out.Input, out.HasInput = []byte(args.Source), true
	defer func() {
		if p := recover(); p != nil {
			out.Reproduced, out.Outcome = true, "crashed"
			out.Detail = fmt.Sprintf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	if _, cerr := compiler.Compile([]byte(args.Source)); cerr != nil {
		out.Outcome, out.Detail = "rejected", cerr.Error()
	} else {
		out.Outcome = "compiled"
	}
	return out, nil
}

// Poster records what the fix stage posts, numbering entries from Next.
// With Queue it acknowledges without an index, as a poster does whose log
// did not answer (the record waits in its outbox).
type Poster struct {
	mu    sync.Mutex
	Next  uint64
	Posts []fleet.Finding
	Err   error
	Queue bool
}

// Post implements fixer.Poster.
func (p *Poster) Post(_ context.Context, f fleet.Finding) (*uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Err != nil {
		return nil, p.Err
	}
	if _, err := fleet.Format(f); err != nil {
		return nil, err
	}
	p.Posts = append(p.Posts, f)
	if p.Queue {
		return nil, nil
	}
	idx := p.Next
	p.Next++
	return &idx, nil
}

// Kinds lists the kinds posted, in order.
func (p *Poster) Kinds() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, f := range p.Posts {
		out = append(out, string(f.Kind)+" ref="+f.Ref)
	}
	return out
}

// TestEnv is the test commands' environment for a test.
func TestEnv(tb testing.TB) []string {
	tb.Helper()
	return fixer.TestEnv(context.Background(), tb.TempDir())
}

// HaveGo skips the test when no go command is on PATH.
func HaveGo(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		tb.Skip("no go command on PATH: the fix stage's tests run go test in the repository under repair")
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
