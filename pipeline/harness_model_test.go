package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fixer/fixertest"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/fuzzing"
	gen "github.com/qafleet/fleetd/fuzzing/harness"
	"github.com/qafleet/fleetd/qatools"
)

// A library whose Scanner has no constructor: the generator can drive
// Scan only through a zero value (the misuse rule then discounts its nil
// dereferences), where a model sets the separator as users do. Scan reads
// past the input when it ends with the separator.
const scanLib = `package scanlib

// Scanner splits input at Sep.
type Scanner struct{ Sep byte }

// Scan counts the fields of b; a separator must be followed by a field.
func (s *Scanner) Scan(b []byte) int {
	n := 1
	for i := 0; i < len(b); i++ {
		if b[i] == s.Sep && b[i+1] != s.Sep {
			n++
		}
	}
	return n
}
`

const (
	// refusedHarness breaks a rule before it is compiled.
	refusedHarness = `package PKG
import ("os/exec"; "testing"; "example.com/scanlib")
func FuzzScannerScan(f *testing.F) { f.Fuzz(func(t *testing.T, b []byte) { exec.Command("true"); (&scanlib.Scanner{}).Scan(b) }) }
`
	// brokenHarness does not compile: a misspelt field.
	brokenHarness = `package PKG
import ("testing"; "example.com/scanlib")
func FuzzScannerScan(f *testing.F) {
	f.Add([]byte("a,b"), byte(','))
	f.Fuzz(func(t *testing.T, b []byte, sep byte) { s := &scanlib.Scanner{Separator: sep}; s.Scan(b) })
}
`
	goodHarness = `package PKG
import ("testing"; "example.com/scanlib")
func FuzzScannerScan(f *testing.F) {
	f.Add([]byte("a,b"), byte(','))
	f.Fuzz(func(t *testing.T, b []byte, sep byte) { s := &scanlib.Scanner{Sep: sep}; s.Scan(b) })
}
`
)

// TestModelWritesAndRepairsHarness runs the generate, compile, fix loop
// with the real OpenAI adapter against the wire-true fake: the model's
// first file imports os/exec and is refused before compiling, its second
// does not compile and the compiler's error goes back to it, its third is
// kept. A crash through the kept harness is judged by the same rules as
// the generator's (library bug here), and one in the harness's own code
// is a misuse.
func TestModelWritesAndRepairsHarness(t *testing.T) {
	fixertest.HaveGo(t)
	goCmd, err := fuzzing.GoCommand()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "scanlib")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/scanlib\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "scan.go"), []byte(scanLib), 0o644)
	ctx := context.Background()
	entries, err := gen.Discover(ctx, dir, gen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err = gen.Generate(ctx, dir, goCmd, nil, entries)
	if err != nil {
		t.Fatal(err)
	}
	answers := []string{refusedHarness, brokenHarness, goodHarness}
	pkgClause := regexp.MustCompile("`package (\\w+)`")
	m, srv := openaiModel(t, func(n int, req fleettest.ChatRequest) fleettest.ChatReply {
		pkg := "missing"
		if m := pkgClause.FindStringSubmatch(req.Text()); m != nil {
			pkg = m[1] // the package the request names, as a model would
		}
		src := strings.Replace(answers[min(n, len(answers)-1)], "PKG", pkg, 1)
		return fleettest.ChatReply{Tool: qatools.WriteHarness, Args: map[string]string{"source": src}}
	})
	entries, err = qatools.AuthorHarnesses(ctx, dir, goCmd, nil, entries, qatools.HarnessAuthor(m, nil))
	if err != nil {
		t.Fatal(err)
	}
	var model *gen.Entry
	for _, e := range entries {
		if e.Kind == gen.KindModel {
			model = e
		}
	}
	if model == nil || model.Dropped != "" || model.Target != "FuzzScannerScan" || strings.Join(model.Args, ",") != "[]byte,byte" {
		t.Fatalf("the model's harness was not kept: %+v", model)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model requests: %d, want 3 (refused, repaired, kept)", len(reqs))
	}
	if !strings.Contains(reqs[0].Text(), "(*Scanner).Scan") || !strings.Contains(reqs[0].Text(), "`package scanlib2`") {
		t.Errorf("the first request does not say what to fuzz:\n%s", reqs[0].Text())
	}
	if !strings.Contains(reqs[1].Text(), "imports os/exec, which a fuzz harness may not") {
		t.Errorf("the second request does not carry the refusal:\n%s", reqs[1].Text())
	}
	if !strings.Contains(reqs[2].Text(), "unknown field Separator") {
		t.Errorf("the third request does not carry the compiler's error:\n%s", reqs[2].Text())
	}

	// The kept harness's crash, replayed and judged.
	g := fuzzing.GoTarget{Dir: dir, Package: model.Package, Func: model.Target, Go: goCmd, Env: os.Environ(), BuildTime: 5 * time.Minute}
	c, err := fuzzing.ReplayGo(ctx, g, []byte("go test fuzz v1\n[]byte(\"a,\")\nbyte(',')\n"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if v := gen.Judge(model, "example.com/scanlib", c.Outcome, c.Stderr); v.Verdict != gen.Library {
		t.Errorf("Scan's index out of range through the model's harness: %s (%s), outcome %s\n%s", v.Verdict, v.Why, c.Outcome, c.Stderr)
	}
	// The crash gets a standalone reproducer made from the model's file:
	// it fails on the buggy Scan and passes once Scan is fixed.
	input := []byte("go test fuzz v1\n[]byte(\"a,\")\nbyte(',')\n")
	rel, src, err := gen.Reproducer(model, input)
	if err != nil {
		t.Fatal(err)
	}
	repro := filepath.Join(dir, filepath.FromSlash(rel))
	os.WriteFile(repro, []byte(src), 0o644)
	runRepro := func() (string, error) {
		cmd := exec.Command(goCmd, "test", "-count=1", "-v", "-run", "^TestFleetdReproScannerScan_", ".")
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := runRepro(); err == nil || !strings.Contains(out, "--- FAIL: TestFleetdReproScannerScan_") || !strings.Contains(out, "index out of range") {
		t.Fatalf("the model harness's reproducer should fail on the buggy Scan: %v\n%s\n%s", err, out, src)
	}
	fixedLib := strings.Replace(scanLib, "b[i] == s.Sep && b[i+1] != s.Sep", "b[i] == s.Sep && i+1 < len(b) && b[i+1] != s.Sep", 1)
	os.WriteFile(filepath.Join(dir, "scan.go"), []byte(fixedLib), 0o644)
	if out, err := runRepro(); err != nil || !strings.Contains(out, "--- PASS: TestFleetdReproScannerScan_") {
		t.Fatalf("the model harness's reproducer should pass on the fixed Scan: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "scan.go"), []byte(scanLib), 0o644)
	os.Remove(repro)

	// A panic in the model's own code is the harness's.
	bad := strings.NewReplacer("s.Scan(b)", "s.Scan(b); _ = b[len(b)]", "PKG", path.Base(model.Package)).Replace(goodHarness)
	os.WriteFile(filepath.Join(dir, filepath.FromSlash(model.Package), gen.File), []byte(bad), 0o644)
	c, err = fuzzing.ReplayGo(ctx, g, []byte("go test fuzz v1\n[]byte(\"a\")\nbyte(',')\n"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if v := gen.Judge(model, "example.com/scanlib", c.Outcome, c.Stderr); v.Verdict != gen.Misuse {
		t.Errorf("a panic in the harness: %s (%s)\n%s", v.Verdict, v.Why, c.Stderr)
	}
}
