//go:build harnesseval

package qatools

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
)

// TestFuzzToolJudgesGJSONHang: the real gjson 1.6.3 hang (an exponential
// match.Match under queryMatches, issue 31's known library hang), replayed
// with engine libfuzzer, is judged by the go replay's stack as gjson's
// loop at a gjson frame. Opt-in (the tag: it fetches gjson through the
// module proxy and builds it instrumented):
//
//	go test -tags harnesseval -run TestFuzzToolJudgesGJSONHang ./qatools/
func TestFuzzToolJudgesGJSONHang(t *testing.T) {
	needLibFuzzer(t)
	// A copy of gjson 1.6.3 itself, with a fuzz target of its own: the
	// repository a user points fleetd at.
	dl, err := exec.Command("go", "mod", "download", "-json", "github.com/tidwall/gjson@v1.6.3").Output()
	if err != nil {
		t.Fatalf("go mod download github.com/tidwall/gjson@v1.6.3: %v", err)
	}
	var d struct{ Dir string }
	if err := json.Unmarshal(dl, &d); err != nil || d.Dir == "" {
		t.Fatalf("go mod download: %s", dl)
	}
	dir := filepath.Join(t.TempDir(), "gjson")
	if err := os.CopyFS(dir, os.DirFS(d.Dir)); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("chmod", "-R", "u+w", dir).Run(); err != nil { // the module cache is read-only
		t.Fatal(err)
	}
	// A repository shipping a fuzz target says go 1.18 or later (gjson
	// 1.6.3 says 1.12, below what testing.F needs).
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{
		"go.mod":              strings.Replace(string(gomod), "\ngo 1.12\n", "\ngo 1.18\n", 1),
		"fleetd_fuzz_test.go": "package gjson\n\nimport \"testing\"\n\nfunc FuzzGet(f *testing.F) {\n\tf.Fuzz(func(t *testing.T, js, path string) { Get(js, path) })\n}\n",
	})
	h := newHarness(t, fleet.Observe)
	h.env.Target.Repo = &fleet.Repo{URL: dir, FuzzPackage: ".", FuzzTarget: "FuzzGet"}
	shareGoCaches(t, h)
	_, reg := h.newRun("r-gjson-hang", fleet.Budget{})
	input := "go test fuzz v1\nstring(\"[{\\\"a\\\":\\\"" + strings.Repeat("a", 60) + "\\\"}]\")\nstring(\"#(a%*a*a*a*a*a*a*a*a*a*a*b)\")\n"
	out, err := h.call(reg, "qa_fuzz", map[string]any{"engine": "libfuzzer", "replay": input})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Result
	if r["engine"] != fuzzing.EngineLibFuzzer || r["outcome"] != TimedOut {
		t.Fatalf("libfuzzer replay of gjson's hang: %s %v", out.Verdict, r)
	}
	if r["hang_verdict"] != fuzzing.HangLibrary || !strings.HasPrefix(strField(r["hang_frame"]), "github.com/tidwall/gjson.queryMatches ") ||
		!strings.Contains(strField(r["hang_why"]), "github.com/tidwall/match.") {
		t.Fatalf("gjson's hang: verdict %v frame %v why %v\n%v", r["hang_verdict"], r["hang_frame"], r["hang_why"], r["hang_stack"])
	}
	t.Logf("gjson 1.6.3 hang judged %v at %v: %v", r["hang_verdict"], r["hang_frame"], r["hang_why"])
}
