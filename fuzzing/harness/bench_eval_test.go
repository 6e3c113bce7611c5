package harness

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fuzzing"
)

// handGJSON is a hand-written fuzz target for gjson, what a person writes
// for it: a document and a path, through Get, Parse().Get and Valid.
const handGJSON = `package handwritten

import (
	"testing"

	"github.com/tidwall/gjson"
)

func FuzzHand(f *testing.F) {
	f.Add([]byte(` + "`" + `{"name":{"first":"Tom","last":"Anderson"},"friends":[{"first":"Dale","age":44}]}` + "`" + `), "friends.#.first")
	f.Add([]byte(` + "`" + `[1,2,{"a":"b"}]` + "`" + `), "2.a")
	f.Fuzz(func(t *testing.T, doc []byte, path string) {
		gjson.GetBytes(doc, path)
		gjson.ParseBytes(doc).Get(path)
		gjson.ValidBytes(doc)
	})
}
`

// handJSONParser is a hand-written fuzz target for jsonparser: a document
// and two keys through the package's main calls.
const handJSONParser = `package handwritten

import (
	"testing"

	"github.com/buger/jsonparser"
)

func FuzzHand(f *testing.F) {
	f.Add([]byte(` + "`" + `{"a":{"b":[1,2,{"c":"d"}]},"e":true}` + "`" + `), "a", "b")
	f.Add([]byte(` + "`" + `[{"x":1},{"x":"y"}]` + "`" + `), "[0]", "x")
	f.Fuzz(func(t *testing.T, doc []byte, k1, k2 string) {
		jsonparser.Get(doc, k1, k2)
		jsonparser.Delete(append([]byte(nil), doc...), k1, k2)
		jsonparser.Set(append([]byte(nil), doc...), []byte("1"), k1, k2)
		jsonparser.ObjectEach(doc, func(k, v []byte, vt jsonparser.ValueType, off int) error { return nil })
		jsonparser.ArrayEach(doc, func(v []byte, vt jsonparser.ValueType, off int, err error) {}, k1)
	})
}
`

// benchLibs are the libraries TestCoverageAgainstHandWritten measures: the
// release, and the hand-written target (a file written into the copy, or
// the library's own when hand is empty: toml's FuzzDecode).
var benchLibs = map[string]struct{ mod, hand, pkg, fn string }{
	"gjson":      {"github.com/tidwall/gjson@v1.6.3", handGJSON, "./handwritten", "FuzzHand"},
	"jsonparser": {"github.com/buger/jsonparser@v1.0.0", handJSONParser, "./handwritten", "FuzzHand"},
	"toml":       {"github.com/BurntSushi/toml@v1.0.0", "", ".", "FuzzDecode"},
	// A library never evaluated before (issue 31's "one more"), at the
	// release in the module cache: no hand-written target, the
	// synthesized ones alone.
	"goorg": {"github.com/niklasfasching/go-org@v1.9.1", "", "", ""},
}

// TestCoverageAgainstHandWritten (opt-in, BENCHMARKS.md): libFuzzer's
// coverage after FLEETD_HARNESS_BENCH seconds (300 in the table) on each
// synthesized harness of FLEETD_HARNESS_BENCH_LIB (gjson, jsonparser or
// toml; default gjson; the best FLEETD_HARNESS_BENCH_N synthesized from
// its API, default 3: neither its own fuzz targets nor its go-fuzz
// functions count) and on a hand-written target, one after the other, one
// worker.
//
//	FLEETD_HARNESS_BENCH=300 go test -run TestCoverageAgainstHandWritten -timeout 2h -v ./fuzzing/harness/
func TestCoverageAgainstHandWritten(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("FLEETD_HARNESS_BENCH"))
	if secs <= 0 {
		t.Skip("set FLEETD_HARNESS_BENCH to the seconds per harness")
	}
	n, _ := strconv.Atoi(os.Getenv("FLEETD_HARNESS_BENCH_N"))
	if n <= 0 {
		n = 3
	}
	name := os.Getenv("FLEETD_HARNESS_BENCH_LIB")
	if name == "" {
		name = "gjson"
	}
	lib, ok := benchLibs[name]
	if !ok {
		t.Fatalf("FLEETD_HARNESS_BENCH_LIB=%s: want gjson, jsonparser, toml or goorg", name)
	}
	ctx := context.Background()
	clang, err := fuzzing.LibFuzzerClang(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "mod", "download", "-json", lib.mod)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var d struct{ Dir string }
	json.Unmarshal(out, &d)
	dir := filepath.Join(t.TempDir(), name)
	for _, argv := range [][]string{{"cp", "-r", d.Dir, dir}, {"chmod", "-R", "u+w", dir}} { // the module cache is read-only
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", argv, err, out)
		}
	}
	g := goCmd(t)
	cache, _ := os.UserCacheDir()
	env := fuzzing.GoEnv(g, t.TempDir(), filepath.Join(cache, "fleetd-harnesseval"), 1<<30)
	es, err := Discover(ctx, dir, Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if es, err = Generate(ctx, dir, g, env, es); err != nil {
		t.Fatal(err)
	}
	if lib.hand != "" {
		os.MkdirAll(filepath.Join(dir, "handwritten"), 0o755)
		os.WriteFile(filepath.Join(dir, "handwritten", "hand_test.go"), []byte(lib.hand), 0o644)
	}
	type run struct{ pkg, fn, entry string }
	var runs []run
	if lib.fn != "" {
		runs = append(runs, run{lib.pkg, lib.fn, "hand-written"})
	}
	for _, e := range es {
		if e.Dropped == "" && e.Kind != KindNative && e.Kind != KindGoFuzz && len(runs) < n+min(len(lib.fn), 1) {
			runs = append(runs, run{e.Package, e.Target, e.Name})
		}
	}
	for _, e := range es {
		if e.Dropped != "" {
			t.Logf("dropped %s: %s", e.ID, e.Dropped)
		} else {
			t.Logf("generated %s %s (%s): score %.1f, %s", e.Kind, e.Target, e.Name, e.Score, e.Why)
		}
	}
	for _, r := range runs {
		lt := fuzzing.LibFuzzerTarget{Go: fuzzing.GoTarget{Dir: dir, Package: r.pkg, Func: r.fn, Go: g, Env: env},
			Clang: clang, Work: filepath.Join(t.TempDir(), "lf"), Workers: 1, InputTimeout: 5 * time.Second}
		os.MkdirAll(lt.Work, 0o700)
		rep, err := fuzzing.RunLibFuzzer(ctx, lt, fuzzing.Session{Duration: time.Duration(secs) * time.Second}, fuzzing.LibFuzzerOptions{Minimize: -1}) // coverage is the measure: no time spent minimizing crashers
		if err != nil {
			t.Errorf("%s: %v", r.fn, err)
			continue
		}
		first := "-"
		if rep.FirstCrash > 0 {
			first = rep.FirstCrash.Round(time.Second).String()
		}
		t.Logf("| %s | %s (%s) | %d | %d | %d | %d | %s |", name, r.fn, r.entry, rep.Coverage, rep.Features, rep.Execs, len(rep.Crashers), first)
		for _, c := range rep.Crashers {
			t.Logf("  %s crasher: %s %s\n%s", r.fn, c.Outcome, c.State, c.Input)
		}
	}
}
