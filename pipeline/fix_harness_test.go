package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixer/fixertest"
	"github.com/qafleet/fleetd/fixer/gitlocal"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/fuzzing/harness"
)

// A library fleetd fuzzed through a generated harness: Parse indexes past
// the input when it ends right after a '#'.
const (
	tinyMod   = "module example.com/tinyparse\n\ngo 1.22\n"
	tinyBuggy = `package tinyparse

// Parse counts the '#' directives of src.
func Parse(src []byte) int {
	n := 0
	for i := 0; i < len(src); i++ {
		if src[i] == '#' && src[i+1] != ' ' {
			n++
		}
	}
	return n
}
`
)

// harnessReplay replays a generated harness's crash the way qa_fuzz
// harness=… replay=… answers: crashed, with the standalone reproducer
// test harness.Reproducer writes, and no single input (the corpus file
// holds the harness's arguments, not one value).
type harnessReplay struct{ test *fixer.ReproTest }

func (r harnessReplay) Reproduce(context.Context, fleet.Repro) (fixer.Reproduction, error) {
	return fixer.Reproduction{Reproduced: true, Outcome: "crashed", Detail: "panic: runtime error: index out of range", Test: r.test}, nil
}

// tinyModelHarness is a fuzz target a model wrote for tinyparse.Parse
// (harness.Authored keeps such a file as the entry's Source).
const tinyModelHarness = `package tinyparse2

import (
	"testing"

	"example.com/tinyparse"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte("# a"))
	f.Fuzz(func(t *testing.T, b []byte) { tinyparse.Parse(b) })
}
`

// TestFixPicksUpHarnessReproducer: the fix stage commits a generated
// harness's reproducer test, and one made from a harness a model wrote,
// as the regression test (no fuzz target is configured, no regression
// layout), sees it fail on the base branch, and verifies the model's
// patch with it.
func TestFixPicksUpHarnessReproducer(t *testing.T) {
	fixertest.HaveGo(t)
	generated := &harness.Entry{ID: "example.com/tinyparse.Parse", Kind: harness.KindFunc, Pkg: "example.com/tinyparse", Dir: ".", Name: "Parse", PkgName: "tinyparse",
		Target: "FuzzParse", Args: []string{"[]byte"}, Body: []string{"tinyparse.Parse(a0)"}, Imports: map[string]string{"example.com/tinyparse": "tinyparse"}}
	model := &harness.Entry{ID: "example.com/tinyparse.Parse#model", Kind: harness.KindModel, Pkg: "example.com/tinyparse", Dir: ".", Name: "Parse", PkgName: "tinyparse",
		Target: "FuzzParse", Package: "./fleetdharness/tinyparse2", Args: []string{"[]byte"}, Source: tinyModelHarness}
	for _, e := range []*harness.Entry{generated, model} {
		t.Run(e.Kind, func(t *testing.T) { fixPicksUp(t, e) })
	}
}

func fixPicksUp(t *testing.T, e *harness.Entry) {
	repo := filepath.Join(t.TempDir(), "tinyparse")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "go.mod"), []byte(tinyMod), 0o644)
	os.WriteFile(filepath.Join(repo, "parse.go"), []byte(tinyBuggy), 0o644)
	fixertest.Git(t, repo, "init", "--quiet", "-b", "main")
	fixertest.Git(t, repo, "add", "-A")
	fixertest.Git(t, repo, "commit", "--quiet", "-m", "tinyparse")

	path, src, err := harness.Reproducer(e, []byte("go test fuzz v1\n[]byte(\"a#\")\n"))
	if err != nil {
		t.Fatal(err)
	}
	fixed := strings.Replace(tinyBuggy, "src[i] == '#' && src[i+1] != ' '", "src[i] == '#' && (i+1 == len(src) || src[i+1] != ' ')", 1)
	os.WriteFile(filepath.Join(repo, "parse.go"), []byte(fixed), 0o644)
	patch, err := fixer.Git(context.Background(), repo, nil, "diff")
	if err != nil {
		t.Fatal(err)
	}
	fixertest.Git(t, repo, "checkout", "--quiet", "--", "parse.go")

	forge, err := gitlocal.New(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	m, srv := openaiModel(t, func(n int, req fleettest.ChatRequest) fleettest.ChatReply { return proposal(patch + "\n") })
	f, err := fixer.New(fixer.Config{
		Repo:       fleet.Repo{URL: repo, Base: "main", Surfaces: []string{"code"}, Test: []string{"go", "test", "-count=1", "./..."}},
		StateDir:   filepath.Join(t.TempDir(), "fixer"),
		Forge:      forge,
		Reproducer: harnessReplay{&fixer.ReproTest{Path: path, Content: []byte(src)}},
		Poster:     &fixertest.Poster{Next: 100}, Model: m, ModelName: "fake", Dial: fleettest.Dial(fleet.Propose), Attempts: 1, TestEnv: fixertest.TestEnv(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	it := crashItem(fpA, "Go library example.com/tinyparse.Parse: index out of range", "")
	it.Surface, it.Repro = fleet.Surface("code"), fleet.Repro{Tool: "qa_fuzz", Args: []byte(`{"harness":"FuzzParse","replay":"go test fuzz v1\n[]byte(\"a#\")\n"}`)}
	j := fixJob(t, f, it)
	if j.Regression == nil || j.Regression.Path != path || !strings.HasPrefix(j.Regression.Name, "TestFleetdReproParse_") || !strings.Contains(src, "func "+j.Regression.Name+"(") {
		t.Fatalf("regression test %+v, want the reproducer %s", j.Regression, path)
	}
	if j.Before == nil || !strings.Contains(j.Before.Output, "--- FAIL: "+j.Regression.Name) || !strings.Contains(j.Before.Output, "index out of range") {
		t.Fatalf("the reproducer did not fail on the base branch: %+v", j.Before)
	}
	if j.Outcome != fixer.OutcomeOpened || !j.Verified {
		t.Fatalf("outcome %s verified %v attempts %+v", j.Outcome, j.Verified, j.Attempts)
	}
	if files := fixertest.Git(t, repo, "diff", "--name-only", "main", fixer.BranchFor(fpA)); files != path+"\nparse.go" {
		t.Errorf("the PR changes %q, want the reproducer and parse.go", files)
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("model requests: %d", len(srv.Requests()))
	}
}
