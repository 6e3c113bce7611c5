//go:build fuzzeval

package fuzzing

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/sandbox"
)

// The FuzzBench-style evaluation: every engine fuzzes every evaluation
// target (fixtures/parsers: real parsers pinned at versions with known
// public crashers) from the same benign seeds, several trials each, each
// trial ending at its first crash or its time budget. It reports time to
// first crash per engine and the crashers that did not reproduce when
// replayed (what the fuzz playbook would post at low with flaky=true
// instead of high). Run it with the command in BENCHMARKS.md:
//
//	FLEETD_EVAL_TRIALS=3 FLEETD_EVAL_SECONDS=60 go test -tags fuzzeval -run TestEval -timeout 3h -v ./fuzzing/
//
// Engines: blind, builtin, go, aflpp (when installed), libfuzzer (when clang
// links it) and, named in FLEETD_EVAL_ENGINES only, libfuzzer-nodict
// (libFuzzer without -dict: comparison feedback alone).
//
// The control (fixtures/controls: the HTML parser fixed) is fuzzed the
// same way; a crash there counts as a false positive in its row.
type evalTarget struct {
	module, name, pkg, cmd, fuzz, seeds string
	control                             bool // a fixed version: any crash is a false positive (or a new bug)
}

var evalTargets = []evalTarget{
	{"parsers", "x/net/html@2018-07-24", "./htmlparse", "./htmlparse/cmd/htmlparse", "FuzzParse", "htmlparse/seeds", false},
	{"parsers", "blackfriday/v2@v2.1.0", "./mdparse", "./mdparse/cmd/mdparse", "FuzzRender", "mdparse/seeds", false},
	{"parsers", "yaml.v3@496545a6307b", "./yamlparse", "./yamlparse/cmd/yamlparse", "FuzzParse", "yamlparse/seeds", false},
	{"parsers", "go-toml@v1.9.4", "./tomlparse", "./tomlparse/cmd/tomlparse", "FuzzParse", "tomlparse/seeds", false},
	{"parsers", "sh/v3@v3.9.0", "./shparse", "./shparse/cmd/shparse", "FuzzParse", "shparse/seeds", false},
	{"controls", "x/net/html@v0.62.0 (control)", "./htmlfixed", "./htmlfixed/cmd/htmlfixed", "FuzzParse", "htmlfixed/seeds", true},
	{"controls", "yaml.v3@v3.0.1 (control)", "./yamlfixed", "./yamlfixed/cmd/yamlfixed", "FuzzParse", "yamlfixed/seeds", true},
	{"controls", "go-toml@v1.9.5 (control)", "./tomlfixed", "./tomlfixed/cmd/tomlfixed", "FuzzParse", "tomlfixed/seeds", true},
	{"controls", "sh/v3@v3.10.0 (control)", "./shfixed", "./shfixed/cmd/shfixed", "FuzzParse", "shfixed/seeds", true},
}

type trial struct {
	found    bool
	ttfc     time.Duration
	execs    int
	state    string
	replayed bool    // the crasher crashed again when run alone
	rate     float64 // inputs per second over the trial's fuzzing
	cpuRate  float64 // inputs per CPU-second of the fuzzing (0: not measured)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestEval(t *testing.T) {
	trials := envInt("FLEETD_EVAL_TRIALS", 3)
	budget := time.Duration(envInt("FLEETD_EVAL_SECONDS", 60)) * time.Second
	goCmd, err := GoCommand()
	if err != nil {
		t.Fatal(err)
	}
	cacheRoot, _ := os.UserCacheDir()
	shared := filepath.Join(cacheRoot, "fleetd-fuzzeval") // build and module caches only
	engines := []string{"blind", EngineBuiltin, EngineGo}
	if AFLPath() != "" {
		engines = append(engines, EngineAFL)
	}
	if ok, _ := LibFuzzerAvailable(context.Background()); ok {
		engines = append(engines, EngineLibFuzzer)
	}
	if only := os.Getenv("FLEETD_EVAL_ENGINES"); only != "" {
		engines = strings.Split(only, ",")
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| target | engine | found | time to first crash (median; each trial) | execs to first crash (median) | inputs/s (median) | inputs/CPU-s (median) | crash state | replayed |\n|---|---|---|---|---|---|---|---|---|\n")
	ctx := context.Background()
	for _, et := range evalTargets {
		if only := os.Getenv("FLEETD_EVAL_TARGETS"); only != "" && !slices.Contains(strings.Split(only, ","), et.module+"/"+et.pkg[2:]) {
			continue // e.g. FLEETD_EVAL_TARGETS=controls/htmlfixed
		}
		mod, bin, seeds := prepareEvalTarget(t, et, goCmd, shared)
		for _, eng := range engines {
			var ts []trial
			for i := range trials {
				tr, rep, err := runTrial(ctx, t, eng, et, mod, bin, goCmd, shared, seeds, budget, uint64(i+1))
				if err != nil {
					t.Fatalf("%s %s trial %d: %v", et.name, eng, i, err)
				}
				if rep != nil && rep.CPU > 0 {
					tr.cpuRate = float64(rep.Execs) / rep.CPU.Seconds()
				}
				t.Logf("%s %s trial %d: found=%v ttfc=%s execs=%d rate=%.0f/s %.0f/CPU-s state=%q replayed=%v", et.name, eng, i+1, tr.found, tr.ttfc, tr.execs, tr.rate, tr.cpuRate, tr.state, tr.replayed)
				ts = append(ts, tr)
			}
			table.WriteString(evalRow(et.name, eng, ts, budget))
		}
	}
	t.Logf("\n%s", table.String())
	if out := os.Getenv("FLEETD_EVAL_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runTrial(ctx context.Context, t *testing.T, eng string, et evalTarget, mod, bin, goCmd, shared string, seeds [][]byte, budget time.Duration, seed uint64) (tr trial, rep *Tally, err error) {
	work := t.TempDir()
	tg := Target{Argv: []string{bin, "{src}"}, Dir: work, Timeout: 2 * time.Second}
	switch eng {
	case "blind", EngineBuiltin:
		rep, err = RunBuiltin(ctx, tg, Session{Seeds: seeds, Duration: budget, Seed: seed, Blind: eng == "blind", StopAtFirst: true})
	case EngineAFL:
		rep, err = RunAFL(ctx, tg, Session{Seeds: seeds, Duration: budget, StopAtFirst: true}, AFLOptions{Dictionary: Harvest(seeds)})
	case EngineLibFuzzer, "libfuzzer-nodict":
		src := filepath.Join(work, "repo")
		if err := CheckoutRepo(ctx, mod, src); err != nil {
			return trial{}, nil, err
		}
		clang, cerr := LibFuzzerClang(ctx)
		if cerr != nil {
			return trial{}, nil, cerr
		}
		// A fresh corpus per trial; the binary is built once (cached by
		// the source's content hash) and the build is not measured.
		lt := LibFuzzerTarget{Go: GoTarget{Dir: src, Package: et.pkg, Func: et.fuzz, Go: goCmd, Env: GoEnv(goCmd, work, shared, 1<<30)},
			Clang: clang, CacheDir: filepath.Join(shared, "libfuzzer-bin", et.module), Workers: envInt("FLEETD_EVAL_WORKERS", 1)}
		rep, err = RunLibFuzzer(ctx, lt, Session{Duration: budget, StopAtFirst: true, Seed: seed}, LibFuzzerOptions{Minimize: -1, NoDictionary: eng == "libfuzzer-nodict"})
		if err == nil && len(rep.Crashers) > 0 && rep.Crashers[0].Outcome != TimedOut {
			c := rep.Crashers[0]
			again, rerr := ReplayLibFuzzer(ctx, lt, c.Input, 30*time.Second)
			if rerr != nil {
				return trial{}, nil, rerr
			}
			return trial{found: true, ttfc: c.At, execs: c.Execs, state: c.State, rate: float64(rep.ExecsPerSec),
				replayed: again.Outcome == c.Outcome && again.State == c.State}, rep, nil
		}
		if err == nil {
			return trial{execs: rep.Execs, rate: float64(rep.ExecsPerSec)}, rep, nil
		}
	case EngineGo:
		src := filepath.Join(work, "repo")
		if err := CheckoutRepo(ctx, mod, src); err != nil {
			return trial{}, nil, err
		}
		// A fresh coverage corpus per trial (independent trials); shared
		// build caches (the build is not part of the measurement).
		g := GoTarget{Dir: src, Package: et.pkg, Func: et.fuzz, Go: goCmd, Env: GoEnv(goCmd, work, shared, 1<<30),
			CacheDir: filepath.Join(work, "gocache"), Parallel: 1}
		rep, err = RunGo(ctx, g, budget)
		if err == nil && len(rep.Crashers) > 0 {
			// Replay the go crasher through the fuzz target alone.
			c, rerr := ReplayGo(ctx, g, rep.Crashers[0].Input, 30*time.Second)
			if rerr != nil {
				return trial{}, nil, rerr
			}
			tr := trial{found: true, ttfc: rep.FirstCrash, execs: rep.Crashers[0].Execs, state: rep.Crashers[0].State, rate: rate(rep.Crashers[0].Execs, rep.FirstCrash)}
			tr.replayed = Finding(c.Outcome) && c.State == rep.Crashers[0].State
			return tr, rep, nil
		}
	default:
		return trial{}, nil, fmt.Errorf("unknown engine %s", eng)
	}
	if err != nil {
		return trial{}, nil, err
	}
	for _, c := range rep.Crashers {
		if c.Outcome == TimedOut {
			continue // the measure is time to first crash
		}
		again, err := Describe(ctx, tg, c.Input)
		if err != nil {
			return trial{}, nil, err
		}
		return trial{found: true, ttfc: c.At, execs: c.Execs, state: c.State, rate: rate(c.Execs, c.At), replayed: again.Outcome == c.Outcome && again.State == c.State}, rep, nil
	}
	return trial{execs: rep.Execs, rate: rate(rep.Execs, rep.Elapsed)}, rep, nil
}

// rate is inputs per second (0 when either is unknown).
func rate(execs int, d time.Duration) float64 {
	if execs <= 0 || d <= 0 {
		return 0
	}
	return float64(execs) / d.Seconds()
}

func evalRow(target, eng string, ts []trial, budget time.Duration) string {
	var times []time.Duration
	var execs []int
	var rates []float64
	for _, tr := range ts {
		if tr.rate > 0 {
			rates = append(rates, tr.rate)
		}
	}
	var cpuRates []float64
	for _, tr := range ts {
		if tr.cpuRate > 0 {
			cpuRates = append(cpuRates, tr.cpuRate)
		}
	}
	medCPU := "-"
	if len(cpuRates) > 0 {
		slices.Sort(cpuRates)
		medCPU = strconv.Itoa(int(cpuRates[len(cpuRates)/2]))
	}
	medRate := "-"
	if len(rates) > 0 {
		slices.Sort(rates)
		medRate = strconv.Itoa(int(rates[len(rates)/2]))
	}
	var each []string
	states := map[string]bool{}
	replayed := 0
	for _, tr := range ts {
		if tr.found {
			times = append(times, tr.ttfc)
			execs = append(execs, tr.execs)
			each = append(each, tr.ttfc.Round(10*time.Millisecond).String())
			states[tr.state] = true
			if tr.replayed {
				replayed++
			}
		} else {
			each = append(each, ">"+budget.String())
		}
	}
	med, medExecs := "-", "-"
	if len(times)*2 > len(ts) { // a median exists only when most trials found it
		slices.Sort(times)
		slices.Sort(execs)
		med = times[len(times)/2].Round(10 * time.Millisecond).String()
		medExecs = strconv.Itoa(execs[len(execs)/2])
	}
	var st []string
	for s := range states {
		st = append(st, "`"+s+"`")
	}
	slices.Sort(st)
	return fmt.Sprintf("| %s | %s | %d/%d | %s (%s) | %s | %s | %s | %s | %d/%d |\n", target, eng, len(times), len(ts), med, strings.Join(each, ", "), medExecs, medRate, medCPU, strings.Join(st, "<br>"), replayed, len(times))
}

// TestEvalCoverage measures coverage over time, FuzzBench's other axis:
// each engine fuzzes each target (the controls by default: no crash ends a
// trial early) from the same seeds for the last of FLEETD_EVAL_COVERAGE_AT
// seconds (default 60,300), its corpus is copied at each of those times,
// and every copy, with the seeds, is measured by one yardstick whatever
// the engine: the target's libFuzzer build run over it once (-runs=0), its
// edges ("cov") and features ("ft") as libFuzzer counts them. Run:
//
//	FLEETD_EVAL_TRIALS=1 go test -tags fuzzeval -run TestEvalCoverage -timeout 3h -v ./fuzzing/
func TestEvalCoverage(t *testing.T) {
	var at []time.Duration
	for _, f := range strings.Split(cmpOr(os.Getenv("FLEETD_EVAL_COVERAGE_AT"), "60,300"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			t.Fatalf("FLEETD_EVAL_COVERAGE_AT: %q is not a number of seconds", f)
		}
		at = append(at, time.Duration(n)*time.Second)
	}
	slices.Sort(at)
	trials := envInt("FLEETD_EVAL_TRIALS", 1)
	engines := strings.Split(cmpOr(os.Getenv("FLEETD_EVAL_ENGINES"), "libfuzzer,go,builtin"), ",")
	only := strings.Split(cmpOr(os.Getenv("FLEETD_EVAL_TARGETS"), "controls/htmlfixed,controls/yamlfixed,controls/tomlfixed,controls/shfixed"), ",")
	ctx := context.Background()
	goCmd, err := GoCommand()
	if err != nil {
		t.Fatal(err)
	}
	clang, err := LibFuzzerClang(ctx)
	if err != nil {
		t.Fatal(err) // the yardstick is the libFuzzer build
	}
	cacheRoot, _ := os.UserCacheDir()
	shared := filepath.Join(cacheRoot, "fleetd-fuzzeval")
	var table strings.Builder
	table.WriteString("| target | engine |")
	for _, a := range at {
		fmt.Fprintf(&table, " cov at %s (median) | ft at %s |", a, a)
	}
	table.WriteString(" trials |\n|---|---|")
	table.WriteString(strings.Repeat("---|---|", len(at)) + "---|\n")
	for _, et := range evalTargets {
		if !slices.Contains(only, et.module+"/"+et.pkg[2:]) {
			continue
		}
		mod, bin, seeds := prepareEvalTarget(t, et, goCmd, shared)
		// The yardstick: the libFuzzer build of the target's fuzz function.
		work := t.TempDir()
		src := filepath.Join(work, "yard")
		if err := CheckoutRepo(ctx, mod, src); err != nil {
			t.Fatal(err)
		}
		yard := LibFuzzerTarget{Go: GoTarget{Dir: src, Package: et.pkg, Func: et.fuzz, Go: goCmd, Env: GoEnv(goCmd, work, shared, 1<<30)},
			Clang: clang, CacheDir: filepath.Join(shared, "libfuzzer-bin", et.module), Work: filepath.Join(work, "yardwork")}
		os.MkdirAll(yard.Work, 0o700)
		b, err := yard.build(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, eng := range engines {
			covs := make([][]int, len(at))
			fts := make([][]int, len(at))
			for trial := range trials {
				snaps := coverageTrial(ctx, t, eng, et, mod, bin, goCmd, shared, clang, seeds, at, uint64(trial+1))
				for i, snap := range snaps {
					raw := filepath.Join(t.TempDir(), "raw")
					var goFiles [][]byte
					var others [][]byte
					for _, in := range snap {
						if strings.HasPrefix(string(in), "go test fuzz v1\n") {
							goFiles = append(goFiles, in)
						} else {
							others = append(others, in)
						}
					}
					if _, _, _, err := yard.stage(raw, b, Session{Seeds: seeds}, LibFuzzerOptions{Others: others, GoCorpus: goFiles}, nil); err != nil {
						t.Fatal(err)
					}
					res, err := yard.exec(ctx, []string{b.bin, "-runs=0", "-timeout=10", "-rss_limit_mb=2048", raw}, 10*time.Minute)
					if err != nil {
						t.Fatal(err)
					}
					st, _ := ParseLibFuzzer(append(res.Stdout, res.Stderr...))
					covs[i], fts[i] = append(covs[i], st.Coverage), append(fts[i], st.Features)
					t.Logf("%s %s trial %d at %s: %d inputs, cov %d ft %d", et.name, eng, trial+1, at[i], len(snap), st.Coverage, st.Features)
				}
			}
			fmt.Fprintf(&table, "| %s | %s |", et.name, eng)
			for i := range at {
				fmt.Fprintf(&table, " %d | %d |", medianInt(covs[i]), medianInt(fts[i]))
			}
			fmt.Fprintf(&table, " %d |\n", trials)
		}
	}
	t.Logf("\n%s", table.String())
}

// coverageTrial runs one engine for the last of at, copying its corpus at
// each time (raw inputs, or `go test fuzz v1` files for the go engine).
func coverageTrial(ctx context.Context, t *testing.T, eng string, et evalTarget, mod, bin, goCmd, shared, clang string, seeds [][]byte, at []time.Duration, seed uint64) [][][]byte {
	work := t.TempDir()
	budget := at[len(at)-1]
	var corpusDir string
	var run func() error
	switch eng {
	case EngineBuiltin:
		c, err := OpenCorpus(filepath.Join(work, "corpus"))
		if err != nil {
			t.Fatal(err)
		}
		corpusDir = filepath.Join(work, "corpus", "queue")
		tg := Target{Argv: []string{bin, "{src}"}, Dir: work, Timeout: 2 * time.Second}
		run = func() error {
			_, err := RunBuiltin(ctx, tg, Session{Seeds: seeds, Duration: budget, Seed: seed, Corpus: c, MaxCrashers: 1000})
			return err
		}
	case EngineLibFuzzer:
		src := filepath.Join(work, "repo")
		if err := CheckoutRepo(ctx, mod, src); err != nil {
			t.Fatal(err)
		}
		lt := LibFuzzerTarget{Go: GoTarget{Dir: src, Package: et.pkg, Func: et.fuzz, Go: goCmd, Env: GoEnv(goCmd, work, shared, 1<<30)},
			Clang: clang, CacheDir: filepath.Join(shared, "libfuzzer-bin", et.module), Work: filepath.Join(work, "lf"),
			Workers: envInt("FLEETD_EVAL_WORKERS", 1)}
		os.MkdirAll(lt.Work, 0o700)
		if _, err := lt.build(ctx); err != nil { // before the clock starts
			t.Fatal(err)
		}
		// The product's scratch, made here so the snapshots can read it.
		scratch, release := RAMScratch(64 << 20)
		t.Cleanup(release)
		lt.Scratch = cmp.Or(scratch, lt.Work)
		corpusDir = filepath.Join(lt.Scratch, "corpus")
		run = func() error {
			_, err := RunLibFuzzer(ctx, lt, Session{Duration: budget, Seed: seed, Seeds: seeds}, LibFuzzerOptions{Minimize: -1})
			return err
		}
	case EngineGo:
		src := filepath.Join(work, "repo")
		if err := CheckoutRepo(ctx, mod, src); err != nil {
			t.Fatal(err)
		}
		g := GoTarget{Dir: src, Package: et.pkg, Func: et.fuzz, Go: goCmd, Env: GoEnv(goCmd, work, shared, 1<<30),
			CacheDir: filepath.Join(work, "gocache"), Parallel: 1}
		corpusDir = filepath.Join(g.CacheDir, et.fuzz)
		run = func() error {
			_, err := RunGo(ctx, g, budget)
			return err
		}
	default:
		t.Fatalf("coverage: engine %s not measured", eng)
	}
	snaps := make([][][]byte, len(at))
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- run() }()
	for i, a := range at[:len(at)-1] {
		time.Sleep(time.Until(start.Add(a)))
		snaps[i], _ = LoadSeeds(corpusDir, 1<<20, maxKeptInput)
	}
	if err := <-done; err != nil {
		t.Fatalf("%s %s: %v", et.name, eng, err)
	}
	snaps[len(at)-1], _ = LoadSeeds(corpusDir, 1<<20, maxKeptInput)
	return snaps
}

func medianInt(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// prepareEvalTarget returns an evaluation target's module directory, its
// command built (the target the process-per-input engines run) and its
// benign seeds.
func prepareEvalTarget(t *testing.T, et evalTarget, goCmd, shared string) (mod, bin string, seeds [][]byte) {
	t.Helper()
	mod, err := filepath.Abs(filepath.Join("..", "fixtures", et.module))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	bin = filepath.Join(work, "target")
	res, err := sandbox.Exec(context.Background(), sandbox.ExecSpec{Argv: []string{goCmd, "build", "-o", bin, et.cmd}, Dir: mod,
		Env: GoEnv(goCmd, work, shared, 2<<30), Timeout: 10 * time.Minute, MemoryBytes: 8 << 30, CPUSeconds: 1200})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("build %s: %v %s", et.cmd, err, res.Stderr)
	}
	if seeds, err = LoadSeeds(filepath.Join(mod, et.seeds), 64, 64<<10); err != nil || len(seeds) == 0 {
		t.Fatalf("seeds: %v", err)
	}
	return mod, bin, seeds
}
