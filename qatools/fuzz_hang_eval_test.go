//go:build harnesseval

package qatools

import (
	"context"
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
	if _, err := fuzzing.LibFuzzerClang(context.Background()); err != nil {
		t.Fatalf("libFuzzer unavailable: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "gjsonhang")
	writeFiles(t, dir, map[string]string{
		"go.mod":       "module example.com/gjsonhang\n\ngo 1.22\n\nrequire github.com/tidwall/gjson v1.6.3\n",
		"fuzz_test.go": "package gjsonhang\n\nimport (\n\t\"testing\"\n\n\t\"github.com/tidwall/gjson\"\n)\n\nfunc FuzzGet(f *testing.F) {\n\tf.Fuzz(func(t *testing.T, js, path string) { gjson.Get(js, path) })\n}\n",
		"doc.go":       "package gjsonhang\n",
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
	if r["hang_verdict"] != fuzzing.HangLibrary || !strings.HasPrefix(strField(r["hang_frame"]), "github.com/tidwall/gjson.") ||
		!strings.Contains(strField(r["hang_why"]), "github.com/tidwall/match.") {
		t.Fatalf("gjson's hang: verdict %v frame %v why %v\n%v", r["hang_verdict"], r["hang_frame"], r["hang_why"], r["hang_stack"])
	}
	t.Logf("gjson 1.6.3 hang judged %v at %v: %v", r["hang_verdict"], r["hang_frame"], r["hang_why"])
}
