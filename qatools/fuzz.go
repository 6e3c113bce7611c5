package qatools

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
	gen "github.com/qafleet/fleetd/fuzzing/harness"
)

type fuzzArgs struct {
	Engine       string `json:"engine,omitempty" enum:"auto,builtin,blind,go,libfuzzer,aflpp" desc:"auto (default): aflpp when installed, else builtin, for target.compiler; for target.repo's Go fuzz target libfuzzer when clang with the libFuzzer runtime is installed, else go; for target.repo's C/C++ harness with a build command (and no target.compiler) aflpp. builtin: mutation with a dictionary harvested from the corpus; blind: byte-level only; libfuzzer: libFuzzer with comparison feedback and a dictionary on the Go fuzz target (falls back to go when it cannot build); aflpp: AFL++, instrumented (persistent with a harness, CmpLog on) when target.repo has a build command, else non-instrumented (-n); the result's mode and mode_why say which ran and why"`
	Seconds      int    `json:"seconds,omitempty" desc:"session length in seconds, 1-600 (default 20)"`
	Replay       string `json:"replay,omitempty" desc:"engine go or libfuzzer: run this one 'go test fuzz v1' input through target.repo's fuzz target instead of fuzzing (a go or libfuzzer crasher's repro); engine aflpp: run this input on target.repo's instrumented build (an aflpp crasher's repro)" maxlen:"1048576"`
	Harness      string `json:"harness,omitempty" desc:"target.repo without a fuzz target: list generates native fuzz targets for the repository's entry points in a scratch copy (ranked, with why; the ones that do not compile dropped with the compiler's reason; the harness crashes counted); a generated target's name (from list) fuzzes that target with engine libfuzzer or go, or with replay replays one input on it and judges the crash (verdict library, harness, outside or unknown, and for a library bug a standalone _test.go reproducer)" maxlen:"200"`
	ReplayBase64 string `json:"replay_base64,omitempty" desc:"engine aflpp: the input to replay, base64 (a crasher's input_base64, for inputs that are not UTF-8)" maxlen:"1398104"`
}

// Fuzz session bounds.
const (
	fuzzDefaultSeconds = 20
	fuzzMaxSeconds     = 600
	fuzzMaxCrashers    = 8
	fuzzInputInResult  = 16 << 10 // bytes of a crasher's input returned (a longer one is cut and marked)
)

// fuzzTool: qa_fuzz. One bounded session of a fuzz engine in the jail; it
// returns the distinct crashers (input, outcome, crash state, output head)
// for the caller to replay, minimize and report. Like a crash in
// qa_compile, crashers are a successful probe.
func (t *tools) fuzzTool(ctx context.Context, a fuzzArgs) (fleet.Result, error) {
	res, err := t.fuzzSession(ctx, a)
	if cerr := ctxErr(ctx); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		r := fleet.Fail("qa_fuzz: %v", err)
		var de *degradedError
		if errors.As(err, &de) {
			r[fleet.ResultDegraded] = de.deg
		}
		return r, nil
	}
	return fleet.OK(res), nil
}

// degradedError is a session whose engine could not run and whose
// fallback failed as well; deg is the result's degraded field.
type degradedError struct {
	deg map[string]any
	err error
}

func (e *degradedError) Error() string { return e.err.Error() }
func (e *degradedError) Unwrap() error { return e.err }

// degradedLibFuzzer is the result's degraded field for a libFuzzer build
// (or session) that failed: the compiler's first error when there is one.
func degradedLibFuzzer(target string, err error) map[string]any {
	cause := fuzzing.FirstBuildError(err)
	if cause == "" {
		cause = err.Error()
	}
	return map[string]any{"component": "libfuzzer engine", "fallback": "go test -fuzz", "cause": "on " + target + ": " + clip.Text(cause, 300)}
}

func anySlice(v any) []any {
	switch s := v.(type) {
	case []any:
		return s
	case []map[string]any:
		out := make([]any, len(s))
		for i := range s {
			out[i] = s[i]
		}
		return out
	}
	return nil
}

func (t *tools) fuzzSession(ctx context.Context, a fuzzArgs) (map[string]any, error) {
	secs := a.Seconds
	if secs <= 0 {
		secs = fuzzDefaultSeconds
	}
	if secs > fuzzMaxSeconds {
		return nil, fmt.Errorf("seconds %d is more than %d", secs, fuzzMaxSeconds)
	}
	repo := t.env.Target.Repo
	hasGo := repo != nil && repo.FuzzTarget != ""
	hasCompiler := len(t.env.Target.Compiler) > 0
	// A C or C++ harness with a build command: AFL++ builds and runs it
	// instrumented; without target.compiler it is the only thing to fuzz.
	hasHarness := repo != nil && repo.Harness != "" && len(repo.Build) > 0
	engine, note := a.Engine, ""
	if a.Harness != "" {
		return t.fuzzGenerated(ctx, a, time.Duration(secs)*time.Second)
	}
	switch {
	case a.Replay != "" || a.ReplayBase64 != "":
		if engine == "" || engine == "auto" {
			engine = fuzzing.EngineGo
			if hasHarness && !hasGo {
				engine = fuzzing.EngineAFL
			}
		}
		if engine == fuzzing.EngineAFL {
			return t.fuzzAFLReplay(ctx, a)
		}
		if engine != fuzzing.EngineGo && engine != fuzzing.EngineLibFuzzer {
			return nil, fmt.Errorf("replay is for engine go, libfuzzer or aflpp, not %s (replay a compiler input with qa_compile)", engine)
		}
		if a.ReplayBase64 != "" {
			return nil, fmt.Errorf("replay_base64 is for engine aflpp: engine %s replays a 'go test fuzz v1' input (replay)", engine)
		}
	case engine == "" || engine == "auto":
		switch {
		case hasCompiler && fuzzing.AFLPath() != "":
			engine = fuzzing.EngineAFL
		case hasCompiler:
			engine, note = fuzzing.EngineBuiltin, "afl-fuzz not installed: the built-in engine ran"
		case hasGo:
			engine = fuzzing.EngineLibFuzzer
		case hasHarness && fuzzing.AFLPath() != "":
			engine = fuzzing.EngineAFL
		case hasHarness:
			return nil, fmt.Errorf("target.repo's harness %s needs AFL++, which is not installed (apt-get install afl++)", repo.Harness)
		default:
			return nil, errors.New("nothing to fuzz: neither target.compiler, target.repo.fuzz_target nor target.repo.harness with target.repo.build is configured")
		}
	case engine == fuzzing.EngineAFL && fuzzing.AFLPath() == "":
		if !hasCompiler {
			return nil, errors.New("engine aflpp: afl-fuzz is not installed (apt-get install afl++)")
		}
		engine, note = fuzzing.EngineBuiltin, "afl-fuzz not installed: the built-in engine ran instead"
	}
	if engine == fuzzing.EngineGo || engine == fuzzing.EngineLibFuzzer {
		if !hasGo {
			return nil, fmt.Errorf("engine %s needs target.repo with fuzz_package and fuzz_target", engine)
		}
		return t.fuzzGoTarget(ctx, a, engine, time.Duration(secs)*time.Second, goFuzz{Package: repo.FuzzPackage, Func: repo.FuzzTarget})
	}
	if !hasCompiler {
		if engine == fuzzing.EngineAFL && hasHarness {
			return t.fuzzHarness(ctx, note, time.Duration(secs)*time.Second)
		}
		if engine == fuzzing.EngineAFL {
			return nil, errors.New("engine aflpp needs target.compiler or target.repo with harness and build")
		}
		return nil, fmt.Errorf("engine %s needs target.compiler", engine)
	}
	return t.fuzzCompiler(ctx, engine, note, time.Duration(secs)*time.Second)
}

// goFuzz is the native Go fuzz target a go or libfuzzer session runs:
// target.repo's own, or one fuzzing/harness generated (Prepare writes it
// into the session's copy, KeyExtra tells its build from another's).
type goFuzz struct {
	Package, Func string
	Prepare       func(src string) error
	KeyExtra      string
}

// fuzzGoTarget runs libFuzzer (engine libfuzzer, when clang has its
// runtime and the target builds) or go test -fuzz on a Go fuzz target.
func (t *tools) fuzzGoTarget(ctx context.Context, a fuzzArgs, engine string, d time.Duration, gf goFuzz) (map[string]any, error) {
	note := ""
	var deg map[string]any
	if engine == fuzzing.EngineLibFuzzer {
		clang, err := fuzzing.LibFuzzerClang(ctx)
		if err == nil {
			out, err := t.fuzzLibFuzzer(ctx, a, clang, d, gf)
			if err == nil && a.Replay != "" && strField(out["outcome"]) == fuzzing.TimedOut {
				t.libFuzzerHangStack(ctx, a, d, gf, out)
			}
			if err == nil || ctxErr(ctx) != nil {
				return out, err
			}
			note = "libfuzzer: " + clip.Text(err.Error(), 600) + ": go test -fuzz ran instead"
			deg = degradedLibFuzzer(gf.Func, err)
		} else {
			note = "libfuzzer unavailable (" + err.Error() + "): go test -fuzz ran instead"
			deg = map[string]any{"component": "libfuzzer engine", "fallback": "go test -fuzz", "cause": "on " + gf.Func + ": " + clip.Text(err.Error(), 300)}
		}
	}
	out, err := t.fuzzGo(ctx, a, d, gf)
	if deg == nil {
		return out, err
	}
	if err != nil {
		// The fallback failed too: the result still names the engine
		// that could not run, and why.
		deg["fallback"] = "go test -fuzz, which failed: " + clip.Text(err.Error(), 300)
		return nil, &degradedError{deg: deg, err: fmt.Errorf("%s; go test -fuzz failed too: %w", note, err)}
	}
	if n, _ := out["execs"].(int); n == 0 && len(anySlice(out["crashers"])) == 0 {
		deg["fallback"] = "go test -fuzz, which ran no input"
		note += " and ran no input"
	}
	out["note"] = strings.Join(nonEmpty(note, strField(out["note"])), "; ")
	out["degraded"] = deg
	return out, nil
}

// libFuzzerHangStack completes a libFuzzer replay that hung: libFuzzer's
// timeout prints no goroutine's stack, so the input is replayed once more
// through go test's binary of the same fuzz target (fuzzGo, with the hang
// dump), and the result gets that replay's verdict on whose loop it is
// (hangFields) and the hung goroutine's stack (hang_stack). A go replay
// that does not hang, or fails to run, leaves the verdict unknown, saying
// why.
func (t *tools) libFuzzerHangStack(ctx context.Context, a fuzzArgs, d time.Duration, gf goFuzz, out map[string]any) {
	g, err := t.fuzzGo(ctx, a, d, gf)
	switch {
	case err != nil:
		out["hang_verdict"], out["hang_why"] = fuzzing.HangUnknown, "the go test replay for the hung goroutine's stack failed: "+clip.Text(err.Error(), 300)
	case strField(g["outcome"]) != fuzzing.TimedOut:
		out["hang_verdict"], out["hang_why"] = fuzzing.HangUnknown, "replayed through go test's binary for a stack, the input did not hang: "+strField(g["outcome"])
	default:
		for _, k := range []string{"hang_verdict", "hang_why", "hang_frame", "hang_replayed_by"} {
			if v, ok := g[k]; ok {
				out[k] = v
			}
		}
		out["hang_stack"] = g["stderr_head"]
	}
}

// hangFields adds a hang's verdict to a replay's result: hang_verdict
// (library, harness, outside, unknown), hang_why, hang_frame (the frame
// judged, with its file:line) and hang_replayed_by (the engine whose
// replay printed the stack).
func hangFields(out map[string]any, v fuzzing.HangVerdict, by string) {
	out["hang_verdict"], out["hang_why"], out["hang_replayed_by"] = v.Verdict, v.Why, by
	if v.Frame != "" {
		out["hang_frame"] = v.Frame + " " + v.File
	}
}

// fuzzCompiler runs a builtin, blind or AFL++ session on target.compiler.
func (t *tools) fuzzCompiler(ctx context.Context, engine, note string, d time.Duration) (map[string]any, error) {
	work, err := t.fuzzWorkDir("fuzz-" + engine)
	if err != nil {
		return nil, err
	}
	argv := make([]string, len(t.env.Target.Compiler))
	for i, a := range t.env.Target.Compiler {
		argv[i] = strings.ReplaceAll(a, "{out}", filepath.Join(work, "output.bin"))
	}
	// Each run gets at most 2 s (the configured timeout when shorter): a
	// hang is found here and confirmed by replaying it through qa_compile
	// at the configured timeout.
	tg := fuzzing.Target{Argv: argv, Dir: work, Timeout: min(t.env.Limits.CompileTimeout, 2*time.Second)}
	seeds, err := fuzzing.LoadSeeds(t.env.Target.Corpus, 32, 64<<10)
	if err != nil {
		return nil, err
	}
	s := fuzzing.Session{Seeds: seeds, Duration: d, MaxCrashers: fuzzMaxCrashers, Blind: engine == "blind"}
	key := fuzzing.TargetKey("compiler", t.env.Target.Compiler...)
	if s.Corpus, err = t.fuzzCorpus(key); err != nil {
		return nil, err
	}
	var rep *fuzzing.Tally
	if engine == fuzzing.EngineAFL {
		o := fuzzing.AFLOptions{Dictionary: fuzzing.Harvest(seeds)}
		// The compiler's own source, when target.repo is on this machine:
		// its literals are the keywords and delimiters it compares with.
		if repo := t.env.Target.Repo; repo != nil {
			if info, err := os.Stat(repo.URL); err == nil && info.IsDir() {
				o.Extra = fuzzing.RepoLiterals(repo.URL, 0)
			} else {
				note = strings.Join(nonEmpty(note, "target.repo is not a local directory: no source literals in the dictionary"), "; ")
			}
		}
		if repo := t.env.Target.Repo; repo != nil && len(repo.Build) > 0 {
			bins, argv, err := t.fuzzAFLBuild(ctx, work, key)
			if err != nil {
				if ctxErr(ctx) != nil {
					return nil, err
				}
				o.Why = "fallback to target.compiler, not instrumented: target.repo's afl-clang-fast build failed: " + clip.Text(err.Error(), 600)
			} else {
				o.Instrumented, tg.Argv = bins, argv
			}
		}
		rep, err = fuzzing.RunAFL(ctx, tg, s, o)
	} else {
		rep, err = fuzzing.RunBuiltin(ctx, tg, s)
		if engine == "blind" {
			rep.Engine = "blind"
		}
	}
	if err != nil {
		return nil, err
	}
	out := reportFields(rep, note)
	out["target"] = "compiler"
	out["corpus_key"] = key
	t.recordStats(out, key, rep, "compiler")
	return out, nil
}

// fuzzHarness runs an AFL++ session on target.repo's harness (there is no
// target.compiler), built with afl-clang-fast, or plain for -n when that
// build fails (harnessBinary). Its corpus and statistics are kept under the
// harness's target key.
func (t *tools) fuzzHarness(ctx context.Context, note string, d time.Duration) (map[string]any, error) {
	repo := t.env.Target.Repo
	work, err := t.fuzzWorkDir("fuzz-" + fuzzing.EngineAFL)
	if err != nil {
		return nil, err
	}
	key := harnessKey(repo)
	bins, argv, why, err := t.harnessBinary(ctx, work, key)
	if err != nil {
		return nil, err
	}
	seeds, err := fuzzing.LoadSeeds(t.env.Target.Corpus, 32, 64<<10)
	if err != nil {
		return nil, err
	}
	s := fuzzing.Session{Seeds: seeds, Duration: d, MaxCrashers: fuzzMaxCrashers}
	if s.Corpus, err = t.fuzzCorpus(key); err != nil {
		return nil, err
	}
	o := fuzzing.AFLOptions{Dictionary: fuzzing.Harvest(seeds), Instrumented: bins, Why: why}
	if info, err := os.Stat(repo.URL); err == nil && info.IsDir() {
		o.Extra = fuzzing.CLiterals(repo.URL, 0) // the instrumented build has them in its own dictionary; the plain one does not
	}
	tg := fuzzing.Target{Argv: argv, Dir: work, Timeout: min(t.env.Limits.CompileTimeout, 2*time.Second)}
	rep, err := fuzzing.RunAFL(ctx, tg, s, o)
	if err != nil {
		return nil, err
	}
	out := reportFields(rep, note)
	out["target"] = repo.Harness
	out["corpus_key"] = key
	t.recordStats(out, key, rep, repo.Harness)
	return out, nil
}

// harnessBinary builds target.repo's harness (no target.compiler): with
// afl-clang-fast when it can (bins set), else with the system's C compiler
// and a file-reading main for AFL++'s -n mode (bins nil, why saying what
// failed). why is the start of the session's mode_why. Errors: neither
// build worked (both causes named).
func (t *tools) harnessBinary(ctx context.Context, work, key string) (bins *fuzzing.AFLBinaries, argv []string, why string, err error) {
	repo := t.env.Target.Repo
	why = "target.repo has a harness (" + repo.Harness + ") and a build command, and no target.compiler"
	bins, argv, err = t.fuzzAFLBuild(ctx, work, key)
	if err == nil || ctxErr(ctx) != nil {
		return bins, argv, why, err
	}
	ierr := err
	plain, err := fuzzing.BuildPlain(ctx, fuzzing.AFLBuild{Dir: filepath.Join(work, "repo"), Build: repo.Build, Harness: repo.Harness, Work: work})
	if err != nil {
		return nil, nil, "", fmt.Errorf("target.repo's harness %s did not build with afl-clang-fast (%v) nor plain for non-instrumented AFL++ (-n): %w", repo.Harness, clip.Text(ierr.Error(), 600), err)
	}
	return nil, []string{plain, "{src}"}, why + "; fallback to non-instrumented (-n) on a plain build of the harness: the afl-clang-fast build failed: " + clip.Text(ierr.Error(), 600), nil
}

// harnessKey is the corpus and statistics key of target.repo's harness.
func harnessKey(repo *fleet.Repo) string {
	return fuzzing.TargetKey("harness", repo.URL, repo.Harness)
}

// fuzzAFLReplay runs one input (a crasher's repro) on target.repo's
// instrumented build, the binary the aflpp session fuzzed (from the build
// cache), the way the session ran it: the harness on the input's file, or
// target.compiler's argv with the built program. It is how an aflpp crash
// is confirmed before it is posted.
func (t *tools) fuzzAFLReplay(ctx context.Context, a fuzzArgs) (map[string]any, error) {
	repo := t.env.Target.Repo
	if repo == nil || len(repo.Build) == 0 {
		return nil, errors.New("replay with engine aflpp needs target.repo with a build command (replay a compiler input with qa_compile)")
	}
	input := []byte(a.Replay)
	if a.ReplayBase64 != "" {
		if a.Replay != "" {
			return nil, errors.New("replay and replay_base64 are one input: give one of them")
		}
		var err error
		if input, err = base64.StdEncoding.DecodeString(a.ReplayBase64); err != nil {
			return nil, fmt.Errorf("replay_base64: %w", err)
		}
	}
	work, err := t.fuzzWorkDir("replay-" + fuzzing.EngineAFL)
	if err != nil {
		return nil, err
	}
	key, target := harnessKey(repo), repo.Harness
	if len(t.env.Target.Compiler) > 0 {
		key, target = fuzzing.TargetKey("compiler", t.env.Target.Compiler...), "compiler"
	}
	var argv []string
	if target == "compiler" {
		_, argv, err = t.fuzzAFLBuild(ctx, work, key)
	} else {
		_, argv, _, err = t.harnessBinary(ctx, work, key) // the binary the session ran, plain when that was the fallback
	}
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	c, err := fuzzing.Describe(ctx, fuzzing.Target{Argv: argv, Dir: work, Timeout: t.env.Limits.CompileTimeout * 3}, input)
	if err != nil {
		return nil, err
	}
	out := crasherFields(c)
	out["engine"], out["target"], out["replayed"] = fuzzing.EngineAFL, target, true
	return out, nil
}

// fuzzAFLBuild builds target.repo with afl-clang-fast in the jail (cached
// per source under the data dir, in the directory of target key) and
// returns the binaries and the argv that runs one input: the harness binary
// on {src}, or target.compiler with the built binary as its program.
func (t *tools) fuzzAFLBuild(ctx context.Context, work, key string) (*fuzzing.AFLBinaries, []string, error) {
	repo := t.env.Target.Repo
	src := filepath.Join(work, "repo")
	if err := fuzzing.CheckoutRepo(ctx, repo.URL, src); err != nil {
		return nil, nil, err
	}
	cache := filepath.Join(work, "aflbin")
	if t.env.FuzzDir != "" {
		cache = filepath.Join(t.env.FuzzDir, key, "aflpp", "bin")
	}
	bins, err := fuzzing.BuildAFL(ctx, fuzzing.AFLBuild{Dir: src, Build: repo.Build, Harness: repo.Harness, Work: work, CacheDir: cache})
	if err != nil {
		return nil, nil, err
	}
	if bins.Persistent || repo.Harness != "" {
		return bins, []string{bins.Bin, "{src}"}, nil
	}
	argv := append([]string{bins.Bin}, t.env.Target.Compiler[1:]...)
	for i, a := range argv {
		argv[i] = strings.ReplaceAll(a, "{out}", filepath.Join(work, "output.bin"))
	}
	return bins, argv, nil
}

// fuzzGo runs Go's coverage-guided fuzzer on target.repo's fuzz target in
// a copy of the repository inside the jail, or replays one input.
func (t *tools) fuzzGo(ctx context.Context, a fuzzArgs, d time.Duration, gf goFuzz) (map[string]any, error) {
	repo := t.env.Target.Repo
	work, src, err := t.fuzzCheckout(ctx, "fuzz-go", gf.Prepare)
	if err != nil {
		return nil, err
	}
	goCmd, err := fuzzing.GoCommand()
	if err != nil {
		return nil, err
	}
	key := fuzzing.TargetKey("go", repo.URL, gf.Package, gf.Func)
	shared := t.env.FuzzDir
	if shared == "" {
		shared = work // no data dir: a throwaway cache
	}
	const memLimit = 1 << 30
	g := fuzzing.GoTarget{Dir: src, Package: gf.Package, Func: gf.Func, Go: goCmd,
		Env:      fuzzing.GoEnv(goCmd, work, filepath.Join(shared, "go"), memLimit),
		CacheDir: filepath.Join(shared, key, "gocache"), Parallel: t.env.Limits.fuzzWorkers()}
	if t.env.FuzzDir == "" {
		g.CacheDir = filepath.Join(work, "gocache")
	}
	if a.Replay != "" {
		mod, _ := gen.ModulePath(src) // none: every frame is outside
		c, hv, err := fuzzing.ReplayHang(ctx, g, []byte(a.Replay), t.env.Limits.CompileTimeout*3, mod, mod+"/"+gen.Dir)
		if err != nil {
			return nil, err
		}
		out := crasherFields(c)
		out["engine"], out["target"], out["replayed"] = fuzzing.EngineGo, gf.Func, true
		if c.Outcome == fuzzing.TimedOut {
			hangFields(out, hv, fuzzing.EngineGo)
		}
		return out, nil
	}
	rep, err := fuzzing.RunGo(ctx, g, d)
	if err != nil {
		return nil, err
	}
	out := reportFields(rep, "")
	out["target"] = gf.Func
	out["corpus_key"] = key
	t.recordStats(out, key, rep, gf.Func)
	return out, nil
}

// fuzzLibFuzzer runs libFuzzer on target.repo's fuzz target, built from a
// copy of the repository inside the jail (the binary cached per source
// under the target's corpus directory), or replays one input. Its corpus is
// the target's: the kept libFuzzer corpus, the shared queue and the go
// engine's cache are merged in, and its new inputs go back to all three.
func (t *tools) fuzzLibFuzzer(ctx context.Context, a fuzzArgs, clang string, d time.Duration, gf goFuzz) (map[string]any, error) {
	repo := t.env.Target.Repo
	work, src, err := t.fuzzCheckout(ctx, "fuzz-libfuzzer", gf.Prepare)
	if err != nil {
		return nil, err
	}
	srcKey, err := fuzzing.RepoSourceKey(ctx, src)
	if err != nil {
		return nil, err
	}
	srcKey += gf.KeyExtra
	goCmd, err := fuzzing.GoCommand()
	if err != nil {
		return nil, err
	}
	key := fuzzing.TargetKey("go", repo.URL, gf.Package, gf.Func) // the go engine's target: one corpus
	shared := t.env.FuzzDir
	if shared == "" {
		shared = work // no data dir: a throwaway cache
	}
	const memLimit = 1 << 30
	lt := fuzzing.LibFuzzerTarget{
		Go: fuzzing.GoTarget{Dir: src, Package: gf.Package, Func: gf.Func, Go: goCmd,
			Env: fuzzing.GoEnv(goCmd, work, filepath.Join(shared, "go"), memLimit)},
		Clang: clang, Work: filepath.Join(work, "libfuzzer"), CacheDir: filepath.Join(shared, key, "libfuzzer", "bin"),
		SourceKey: srcKey, Workers: t.env.Limits.fuzzWorkers(), InputTimeout: min(t.env.Limits.CompileTimeout, 10*time.Second),
	}
	if err := os.MkdirAll(lt.Work, 0o700); err != nil {
		return nil, err
	}
	if a.Replay != "" {
		c, err := fuzzing.ReplayLibFuzzer(ctx, lt, []byte(a.Replay), t.env.Limits.CompileTimeout*3)
		if err != nil {
			return nil, err
		}
		out := crasherFields(c)
		out["engine"], out["target"], out["replayed"] = fuzzing.EngineLibFuzzer, gf.Func, true
		return out, nil
	}
	corpus, err := t.fuzzCorpus(key)
	if err != nil {
		return nil, err
	}
	o := fuzzing.LibFuzzerOptions{}
	if t.env.FuzzDir != "" {
		o.Kept = filepath.Join(t.env.FuzzDir, key, "libfuzzer", "corpus")
		o.PruneEvery = CorpusPruneEvery
		o.GoCacheDir = filepath.Join(t.env.FuzzDir, key, "gocache") // the go engine's: each seeds the other
	}
	rep, err := fuzzing.RunLibFuzzer(ctx, lt, fuzzing.Session{Duration: d, Corpus: corpus, MaxCrashers: fuzzMaxCrashers}, o)
	if err != nil {
		return nil, err
	}
	out := reportFields(rep, "")
	out["target"] = gf.Func
	out["corpus_key"] = key
	t.recordStats(out, key, rep, gf.Func)
	return out, nil
}

// recordStats appends the session's figures to the target's stats file
// (with a data dir) and adds to out whether it found new coverage and how
// many sessions in a row this engine has not (plateau_sessions): what the
// playbooks, which read no files, see of the kept statistics. A file that
// cannot be written is named in the note; the session's result stands.
func (t *tools) recordStats(out map[string]any, key string, rep *fuzzing.Tally, target string) {
	if t.env.FuzzDir == "" {
		return
	}
	l, plateau, err := fuzzing.AppendStats(filepath.Join(t.env.FuzzDir, key), fuzzing.StatsLineOf(rep, target, time.Now()))
	if err != nil {
		out["note"] = strings.Join(nonEmpty(strField(out["note"]), "statistics not kept: "+clip.Text(err.Error(), 300)), "; ")
		return
	}
	out["new_coverage"], out["plateau_sessions"] = l.NewCoverage, plateau
	if all, err := fuzzing.EnginePlateaus(filepath.Join(t.env.FuzzDir, key)); err == nil && len(all) > 0 {
		m := map[string]any{}
		for e, n := range all {
			m[e] = n
		}
		out["engine_plateaus"] = m // every engine's, for a scheduler that has not run them yet
	}
	if _, ok := out["execs_per_sec"]; !ok && l.ExecsPerSec > 0 {
		out["execs_per_sec"] = l.ExecsPerSec
	}
}

// fuzzWorkDir makes a fresh directory in the jail for one session.
func (t *tools) fuzzWorkDir(prefix string) (string, error) {
	if err := t.run.Sandbox.Root().MkdirAll("fuzz", 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(filepath.Join(t.run.Sandbox.JailDir(), "fuzz"), prefix+"-")
}

// fuzzCheckout makes a session's work directory and copies (or clones)
// target.repo into its repo/ subdirectory.
func (t *tools) fuzzCheckout(ctx context.Context, prefix string, prepare func(src string) error) (work, src string, err error) {
	if work, err = t.fuzzWorkDir(prefix); err != nil {
		return "", "", err
	}
	src = filepath.Join(work, "repo")
	if err := fuzzing.CheckoutRepo(ctx, t.env.Target.Repo.URL, src); err != nil {
		return "", "", err
	}
	if prepare != nil {
		err = prepare(src)
	}
	return work, src, err
}

// fuzzCorpus opens the target's persistent corpus under Env.FuzzDir (nil
// without one).
func (t *tools) fuzzCorpus(key string) (*fuzzing.Corpus, error) {
	if t.env.FuzzDir == "" {
		return nil, nil
	}
	return fuzzing.OpenCorpus(filepath.Join(t.env.FuzzDir, key))
}

func reportFields(rep *fuzzing.Tally, note string) map[string]any {
	crashers := make([]map[string]any, 0, len(rep.Crashers))
	for _, c := range rep.Crashers {
		m := crasherFields(c)
		m["found_after_ms"] = c.At.Milliseconds()
		crashers = append(crashers, m)
	}
	out := map[string]any{
		"engine": rep.Engine, "execs": rep.Execs, "elapsed_ms": rep.Elapsed.Milliseconds(),
		"crashers": crashers, "timeouts": rep.Timeouts, "new_inputs": rep.NewInputs,
		"corpus_size": rep.CorpusSize, "dict_entries": rep.DictEntries,
	}
	if rep.Mode != "" {
		out["mode"] = rep.Mode
	}
	if rep.ModeWhy != "" {
		out["mode_why"] = rep.ModeWhy
	}
	if rep.FirstCrash > 0 {
		out["first_crash_ms"] = rep.FirstCrash.Milliseconds()
	}
	if rep.CPU > 0 {
		// Inputs per CPU-second: the rate that compares engines on a
		// machine doing other work (wall-clock rates do not).
		out["cpu_ms"] = rep.CPU.Milliseconds()
		out["execs_per_cpu_sec"] = int(float64(rep.Execs) / rep.CPU.Seconds())
	}
	for k, v := range map[string]int{"execs_per_sec": rep.ExecsPerSec, "coverage": rep.Coverage, "features": rep.Features, "started_from": rep.StartedFrom, "pruned": rep.Pruned, "initial_coverage": rep.InitialCoverage} {
		if v > 0 {
			out[k] = v
		}
	}
	if n := strings.TrimSpace(strings.Join(nonEmpty(note, rep.Note), "; ")); n != "" {
		out["note"] = n
	}
	return out
}

func crasherFields(c fuzzing.Crasher) map[string]any {
	in, cut := c.Input, false
	if len(in) > fuzzInputInResult {
		in, cut = in[:fuzzInputInResult], true
	}
	m := map[string]any{
		"outcome": c.Outcome, "crash_state": c.State, "exit_code": c.ExitCode, "signal": c.Signal,
		"stderr_head": c.Stderr, "input": strings.ToValidUTF8(string(in), "\uFFFD"), "input_bytes": len(c.Input),
	}
	if cut {
		m["input_truncated"] = true
	}
	if c.Note != "" {
		// How a hang was confirmed when its replay was starved (by CPU on
		// a second replay, or only by wall time), or why it is none: what
		// a reader of the finding needs to weigh it.
		m["note"] = c.Note
	}
	if !utf8.Valid(in) {
		m["input_lossy"] = true // invalid UTF-8 replaced: a replay may not reproduce
		if !cut {
			m["input_base64"] = base64.StdEncoding.EncodeToString(in) // what replay_base64 takes
		}
	}
	return m
}

func strField(v any) string {
	s, _ := v.(string)
	return s
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// CorpusPruneEvery is how often qa_fuzz prunes a kept libFuzzer corpus to
// the inputs that add coverage (ClusterFuzz prunes daily).
const CorpusPruneEvery = 24 * time.Hour

// DefaultFuzzWorkers is qa_fuzz's default number of fuzzing processes: one
// per CPU, as ClusterFuzz runs them, at most four.
func DefaultFuzzWorkers() int { return min(runtime.NumCPU(), 4) }

func (l Limits) fuzzWorkers() int {
	if l.FuzzWorkers > 0 {
		return l.FuzzWorkers
	}
	return DefaultFuzzWorkers()
}
