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

// TestCoverageAgainstHandWritten (opt-in, BENCHMARKS.md): libFuzzer's
// coverage after FLEETD_HARNESS_BENCH seconds (300 in the table) on each
// synthesized harness of gjson v1.6.3 (the best FLEETD_HARNESS_BENCH_N,
// default 3) and on a hand-written target, one after the other, one worker.
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
	ctx := context.Background()
	clang, err := fuzzing.LibFuzzerClang(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/tidwall/gjson@v1.6.3")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var d struct{ Dir string }
	json.Unmarshal(out, &d)
	dir := filepath.Join(t.TempDir(), "gjson")
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
	os.MkdirAll(filepath.Join(dir, "handwritten"), 0o755)
	os.WriteFile(filepath.Join(dir, "handwritten", "hand_test.go"), []byte(handGJSON), 0o644)
	type run struct{ pkg, fn string }
	runs := []run{{"./handwritten", "FuzzHand"}}
	for _, e := range es {
		if e.Dropped == "" && len(runs) <= n {
			runs = append(runs, run{e.Package, e.Target})
		}
	}
	for _, r := range runs {
		lt := fuzzing.LibFuzzerTarget{Go: fuzzing.GoTarget{Dir: dir, Package: r.pkg, Func: r.fn, Go: g, Env: env},
			Clang: clang, Work: filepath.Join(t.TempDir(), "lf"), Workers: 1, InputTimeout: 5 * time.Second}
		os.MkdirAll(lt.Work, 0o700)
		rep, err := fuzzing.RunLibFuzzer(ctx, lt, fuzzing.Session{Duration: time.Duration(secs) * time.Second}, fuzzing.LibFuzzerOptions{})
		if err != nil {
			t.Errorf("%s: %v", r.fn, err)
			continue
		}
		first := "-"
		if rep.FirstCrash > 0 {
			first = rep.FirstCrash.Round(time.Second).String()
		}
		t.Logf("| %s | %d | %d | %d | %d | %s |", r.fn, rep.Coverage, rep.Features, rep.Execs, len(rep.Crashers), first)
	}
}
