package qatools

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
)

// hangRepo is a module whose library loops forever once its input holds
// "loop", with a fuzz target for it (FuzzLib) and one whose own loop
// spins on an input starting with 'h' (FuzzHarness).
func hangRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hangs")
	files := map[string]string{
		"go.mod": "module example.com/hangs\n\ngo 1.22\n",
		"lib/lib.go": "package lib\n\nimport \"bytes\"\n\n// Scan counts the bytes up to \"loop\", forever once it meets it.\n" +
			"func Scan(b []byte) int {\n\tn := 0\n\tfor i := 0; i < len(b); i++ {\n\t\tif bytes.HasPrefix(b[i:], []byte(\"loop\")) {\n\t\t\ti--\n\t\t}\n\t\tn++\n\t}\n\treturn n\n}\n",
		"lib/fuzz_test.go": "package lib\n\nimport \"testing\"\n\n" +
			"func FuzzLib(f *testing.F) {\n\tf.Add([]byte(\"abc\"))\n\tf.Fuzz(func(t *testing.T, b []byte) { Scan(b) })\n}\n\n" +
			"var sink int\n\nfunc FuzzHarness(f *testing.F) {\n\tf.Fuzz(func(t *testing.T, b []byte) {\n\t\tfor len(b) > 0 && b[0] == 'h' {\n\t\t\tsink++\n\t\t}\n\t})\n}\n",
	}
	writeFiles(t, dir, files)
	return dir
}

// TestFuzzToolJudgesLibFuzzerHang: a hang replayed with engine libfuzzer
// (whose timeout prints no goroutine) is replayed once more through go
// test's binary of the same fuzz target, and the result says whose loop
// it is and at which frame (hang_verdict, hang_frame, hang_stack); a go
// replay judges its own hang, the harness's loop as the harness's; an
// input that finishes gets no hang verdict.
func TestFuzzToolJudgesLibFuzzerHang(t *testing.T) {
	needLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary")
	}
	h := newHarness(t, fleet.Observe)
	h.env.Target.Repo = &fleet.Repo{URL: hangRepo(t), FuzzPackage: "./lib", FuzzTarget: "FuzzLib"}
	shareGoCaches(t, h)
	_, reg := h.newRun("r-hang", fleet.Budget{})

	out, err := h.call(reg, "qa_fuzz", map[string]any{"engine": "libfuzzer", "replay": "go test fuzz v1\n[]byte(\"xxloop\")\n"})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Result
	if out.Verdict != fleet.VerdictOK || r["engine"] != fuzzing.EngineLibFuzzer || r["outcome"] != TimedOut {
		t.Fatalf("libfuzzer replay of a hang: %s %v", out.Verdict, r)
	}
	if r["hang_verdict"] != fuzzing.HangLibrary || !strings.HasPrefix(strField(r["hang_frame"]), "example.com/hangs/lib.Scan ") ||
		r["hang_replayed_by"] != fuzzing.EngineGo || !strings.Contains(strField(r["hang_stack"]), "goroutine ") {
		t.Fatalf("the libfuzzer hang was not judged by a go replay's stack: verdict %v frame %v by %v why %v\n%v", r["hang_verdict"], r["hang_frame"], r["hang_replayed_by"], r["hang_why"], r["hang_stack"])
	}
	t.Logf("libfuzzer hang: %v at %v (%v)", r["hang_verdict"], r["hang_frame"], r["hang_why"])

	h.env.Target.Repo.FuzzTarget = "FuzzHarness"
	out, err = h.call(reg, "qa_fuzz", map[string]any{"engine": "go", "replay": "go test fuzz v1\n[]byte(\"hx\")\n"})
	if err != nil {
		t.Fatal(err)
	}
	r = out.Result
	if r["outcome"] != TimedOut || r["hang_verdict"] != fuzzing.HangHarness || !strings.HasPrefix(strField(r["hang_frame"]), "example.com/hangs/lib.FuzzHarness.func1 ") {
		t.Fatalf("the harness's own loop: outcome %v verdict %v frame %v why %v", r["outcome"], r["hang_verdict"], r["hang_frame"], r["hang_why"])
	}
	out, err = h.call(reg, "qa_fuzz", map[string]any{"engine": "go", "replay": "go test fuzz v1\n[]byte(\"xh\")\n"})
	if err != nil {
		t.Fatal(err)
	}
	if r = out.Result; r["outcome"] != Compiled || r["hang_verdict"] != nil {
		t.Fatalf("an input that finishes: outcome %v verdict %v", r["outcome"], r["hang_verdict"])
	}
}

// TestCrasherNoteInResult: a crasher's Note (how its hang was confirmed
// when the replay was starved) is in qa_fuzz's result, in a session's
// crashers and in a replay's own fields, and a crasher without one has no
// note field. Before, the note was dropped and a finding built from the
// result could not say that its hang was confirmed only by wall time.
func TestCrasherNoteInResult(t *testing.T) {
	const note = "hang confirmed only by wall time: its replay ran out of its 10s limit on 1.1s of CPU, and 1.2s of CPU again in 40s: blocked (a sleep, a lock, a channel) or starved by a loaded machine, not shown to spin"
	rep := &fuzzing.Tally{Engine: fuzzing.EngineGo, Execs: 10, Crashers: []fuzzing.Crasher{
		{Input: []byte("go test fuzz v1\n[]byte(\"xxloop\")\n"), Outcome: TimedOut, State: "hang: lib.Scan", Note: note},
		{Input: []byte("go test fuzz v1\n[]byte(\"!\")\n"), Outcome: Crashed, State: "panic: boom"},
	}}
	cs, _ := reportFields(rep, "")["crashers"].([]map[string]any)
	if len(cs) != 2 {
		t.Fatalf("crashers %v", cs)
	}
	if cs[0]["note"] != note {
		t.Errorf("the hang's note %q, want %q", cs[0]["note"], note)
	}
	if n, has := cs[1]["note"]; has {
		t.Errorf("a crash without a note has note %q", n)
	}
	if got := crasherFields(rep.Crashers[0])["note"]; got != note {
		t.Errorf("a replay's fields: note %q, want %q", got, note)
	}
}
