package fuzzing

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/sandbox"
)

// AFLPath returns the afl-fuzz binary when AFL++ is installed ("" when
// not). Debian's afl++ 4.04c ships afl-fuzz without QEMU mode
// (afl-qemu-trace), so a binary that was not compiled with afl-cc runs in
// the non-instrumented mode (-n): AFL++'s havoc and splicing without
// coverage feedback.
func AFLPath() string {
	p, err := exec.LookPath("afl-fuzz")
	if err != nil {
		return ""
	}
	return p
}

// aflQEMU reports whether QEMU mode is available next to afl-fuzz.
func aflQEMU(aflFuzz string) bool {
	for _, dir := range []string{filepath.Dir(aflFuzz), "/usr/lib/afl", "/usr/local/lib/afl"} {
		if _, err := os.Stat(filepath.Join(dir, "afl-qemu-trace")); err == nil {
			return true
		}
	}
	return false
}

// AFLOptions tune RunAFL.
type AFLOptions struct {
	Dictionary *Dictionary // written as an AFL++ dictionary (-x) when non-empty
	Extra      []string    // more dictionary tokens (the target's source literals)
	// Instrumented is an afl-clang-fast build of the target: t.Argv runs
	// its Bin (with {src} for Describe), and afl-fuzz runs without -n, with
	// the CmpLog binary (-c) when there is one. A persistent build reads
	// its inputs from AFL++'s shared memory: afl-fuzz gets t.Argv without
	// the {src} argument.
	Instrumented *AFLBinaries
	// Why is the reason the mode was chosen (e.g. why the instrumented
	// build is not used), the start of Tally.ModeWhy.
	Why string
	// Minimize bounds afl-tmin per crash of a new state on an instrumented
	// build (afl-tmin needs the instrumentation); 0 = 30 s at most (a
	// quarter of the session, at least 5 s), negative = not minimized.
	Minimize time.Duration
}

// aflDeterministicBudget bounds the inputs AFL++'s deterministic stage may
// cost on the longest seed for RunAFL to turn it on.
const aflDeterministicBudget = 20000

var aflCrashTime = regexp.MustCompile(`(?:^|,)time:(\d+)`)

// RunAFL runs one AFL++ session on t for s.Duration (-V), from s.Seeds and
// the persistent corpus, in a work directory under t.Dir. Go targets get
// GOTRACEBACK=crash, so a panic aborts with SIGABRT (AFL++ only sees
// signals). Each crash and hang AFL++ saved is run once more through
// Describe to read its crash state; the first of each state is a Crasher.
// Inputs AFL++ queued are added to s.Corpus. Errors: afl-fuzz missing or
// failing to start (its output's tail is in the error).
func RunAFL(ctx context.Context, t Target, s Session, o AFLOptions) (*Tally, error) {
	afl := AFLPath()
	if afl == "" {
		return nil, errors.New("aflpp: afl-fuzz is not installed (apt-get install afl++)")
	}
	ss := newSession(EngineAFL, s)
	ss.oneHang = true
	return runSession(ctx, &aflSession{t: t, o: o, afl: afl}, ss)
}

// aflSession is AFL++'s part of a session: one afl-fuzz run in a work
// directory under the target's.
type aflSession struct {
	t       Target
	o       AFLOptions
	afl     string
	work    string
	in, out string
	longest int    // bytes of the longest seed (the deterministic stage's cost)
	dict    string // the dictionary file; "" = none
}

// stage writes the seeds and the persistent corpus's queue to afl-fuzz's
// input directory (a placeholder seed when there is none).
func (a *aflSession) stage(_ context.Context, s *session) ([][]byte, error) {
	work, err := os.MkdirTemp(a.t.Dir, "afl-")
	if err != nil {
		return nil, fmt.Errorf("aflpp: %w", err)
	}
	a.work, a.in, a.out = work, filepath.Join(work, "in"), filepath.Join(work, "out")
	if err := os.MkdirAll(a.in, 0o700); err != nil {
		return nil, fmt.Errorf("aflpp: %w", err)
	}
	seeds := append([][]byte(nil), s.Seeds...)
	if s.Corpus != nil {
		q, err := s.Corpus.Load(256)
		if err != nil {
			return nil, err
		}
		seeds = append(seeds, q...)
	}
	n := 0
	a.longest = 1
	for _, sd := range seeds {
		if len(sd) == 0 || len(sd) > 1<<20 {
			continue
		}
		a.longest = max(a.longest, len(sd))
		if err := os.WriteFile(filepath.Join(a.in, fmt.Sprintf("seed-%04d", n)), sd, 0o600); err != nil {
			return nil, fmt.Errorf("aflpp: %w", err)
		}
		n++
	}
	if n == 0 {
		if err := os.WriteFile(filepath.Join(a.in, "seed-0000"), []byte("x"), 0o600); err != nil {
			return nil, fmt.Errorf("aflpp: %w", err)
		}
	}
	return nil, nil
}

// merge: afl-fuzz culls its own queue.
func (a *aflSession) merge(context.Context, *session) error { return nil }

// dictionary writes the caller's dictionary, the source's literals and an
// instrumented build's tokens as an AFL++ dictionary (-x).
func (a *aflSession) dictionary(_ context.Context, s *session, _ [][]byte) error {
	tokens := append(a.o.Dictionary.Tokens(), a.o.Extra...)
	if a.o.Instrumented != nil {
		tokens = append(tokens, a.o.Instrumented.Dict...)
	}
	var err error
	a.dict, err = s.writeDict(tokens, filepath.Join(a.work, "dict.txt"), "aflpp dictionary")
	return err
}

// round is the one afl-fuzz run: each crash and hang it saved is run
// once more through Describe for its state, and the first of each state
// (minimized with afl-tmin on an instrumented build) is a crasher.
func (a *aflSession) round(ctx context.Context, s *session, _ int) (bool, error) {
	t, o, dur := a.t, a.o, s.Duration
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	args := []string{a.afl, "-i", a.in, "-o", a.out, "-V", strconv.Itoa(max(1, int(dur.Seconds()))), "-t", strconv.FormatInt(timeout.Milliseconds(), 10), "-m", "none"}
	mode, note, why := aflMode(a.afl, o)
	switch {
	case o.Instrumented != nil && o.Instrumented.CmpLog:
		args = append(args, "-c", "0") // the fuzzing binary logs comparisons itself (see BuildAFL)
	case o.Instrumented != nil:
	case mode == AFLModeQEMU:
		args = append(args, "-Q")
	default:
		args = append(args, "-n")
	}
	if a.dict != "" {
		args = append(args, "-x", a.dict)
	}
	// The explore schedule, not the default fast one, and the
	// deterministic stage when it is cheap: on testdata/cmagic fast
	// starved the one seed that passes the length check (6,300 to 85,000
	// inputs to the crash), explore did not (250 to 11,000), and -D placed
	// the dictionary's magic at every offset (1,300 inputs each time;
	// BENCHMARKS.md). -D costs about 40 inputs per byte of a queue entry
	// plus one per token and byte, once per entry: on only when that stays
	// under ~20,000 for the longest seed, and only on an instrumented build
	// (where it was measured; the -n sessions of the evaluation ran
	// without it).
	args = append(args, "-p", "explore")
	det := "deterministic stage off (long seeds or a large dictionary)"
	switch {
	case o.Instrumented == nil:
		det = "deterministic stage off (not instrumented)"
	case a.longest*(40+s.rep.DictEntries) <= aflDeterministicBudget:
		args, det = append(args, "-D"), "deterministic stage on (-D)"
	}
	var targetArgv []string
	for _, arg := range t.Argv {
		if o.Instrumented != nil && o.Instrumented.Persistent && arg == "{src}" {
			continue // the harness reads AFL++'s shared-memory input
		}
		targetArgv = append(targetArgv, strings.ReplaceAll(arg, "{src}", "@@"))
	}
	args = append(append(args, "--"), targetArgv...)
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + a.work, "LANG=C.UTF-8", "TMPDIR=" + a.work,
		"AFL_SKIP_CPUFREQ=1", "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1", "AFL_NO_UI=1", "AFL_NO_AFFINITY=1",
		"AFL_SKIP_BIN_CHECK=1", "AFL_NO_WARN_INSTABILITY=1", "GOTRACEBACK=crash"}
	if s.StopAtFirst {
		env = append(env, "AFL_BENCH_UNTIL_CRASH=1")
	}
	// The input file afl-fuzz writes for every execution (.cur_input) goes
	// to RAM where there is some, as AFL++'s docs advise.
	if tmp, release := RAMScratch(1 << 20); tmp != "" {
		defer release()
		env = append(env, "AFL_TMPDIR="+tmp)
	}
	start := time.Now()
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: args, Dir: a.work, Env: env, Timeout: dur + 60*time.Second,
		CPUSeconds: uint64(dur.Seconds()+60) * 2, OutputCap: 256 << 10, MemoryBytes: 16 << 30})
	if err != nil {
		return false, fmt.Errorf("aflpp: %w", err)
	}
	rep := s.rep
	rep.Mode, rep.ModeWhy, rep.Note, rep.Elapsed, rep.CPU = mode, why, note+"; explore schedule, "+det, time.Since(start), res.CPUTime
	outDir := a.out
	if _, err := os.Stat(filepath.Join(a.out, "default")); err == nil {
		outDir = filepath.Join(a.out, "default")
	}
	a.out = outDir
	rep.Execs = aflStat(filepath.Join(outDir, "fuzzer_stats"), "execs_done")
	crashes := aflFiles(filepath.Join(outDir, "crashes"))
	hangs := aflFiles(filepath.Join(outDir, "hangs"))
	if len(crashes)+len(hangs) == 0 && res.ExitCode != 0 {
		tail, _ := sandbox.Text(append(res.Stdout, res.Stderr...), 800)
		return false, fmt.Errorf("aflpp: afl-fuzz exited %d: %s", res.ExitCode, stripANSI(tail))
	}
	if rep.Execs == 0 {
		rep.Execs = aflPlotExecs(filepath.Join(outDir, "plot_data"))
	}
	if rep.Execs == 0 {
		rep.Execs = aflExecsFromNames(append(append(aflFiles(filepath.Join(outDir, "queue")), crashes...), hangs...))
	}
	for _, f := range append(crashes, hangs...) {
		input, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		c, err := Describe(ctx, t, input)
		if err != nil {
			return false, err
		}
		if !Finding(c.Outcome) || s.known(c) {
			continue // did not fail again when run alone (AFL++ keeps flaky ones too), or a state already found
		}
		if o.Instrumented != nil && c.Outcome == Crashed && o.Minimize >= 0 {
			budget := o.Minimize
			if budget == 0 {
				budget = min(30*time.Second, max(dur/4, 5*time.Second))
			}
			small, note := aflTmin(ctx, a.work, targetArgv, env, timeout, input, budget)
			if small != nil && len(small) < len(input) {
				if m, err := Describe(ctx, t, small); err == nil && m.Outcome == c.Outcome && m.State == c.State {
					c, input = m, small
				} else {
					note = "afl-tmin's input failed differently when replayed: the original is kept"
				}
			}
			if note != "" {
				rep.Note = strings.Join(nonEmptyStrings(rep.Note, note), "; ")
			}
		}
		if m := aflCrashTime.FindStringSubmatch(filepath.Base(f)); m != nil {
			ms, _ := strconv.Atoi(m[1])
			c.At = time.Duration(ms) * time.Millisecond
		}
		if m := aflExecsRE.FindStringSubmatch(filepath.Base(f)); m != nil {
			c.Execs, _ = strconv.Atoi(m[1])
		}
		if _, err := s.record(c, input); err != nil {
			return false, err
		}
	}
	return false, nil
}

// keep adds the inputs AFL++ queued to the persistent corpus, and lists
// the crashers in the order they were found.
func (a *aflSession) keep(_ context.Context, s *session) error {
	if s.Corpus != nil {
		for _, f := range aflFiles(filepath.Join(a.out, "queue")) {
			if strings.Contains(filepath.Base(f), "orig:") {
				continue
			}
			if b, err := os.ReadFile(f); err == nil {
				if added, err := s.Corpus.Add(b, "aflpp|"+contentName(b)); err == nil && added {
					s.rep.NewInputs++
				}
			}
		}
	}
	sort.Slice(s.rep.Crashers, func(i, j int) bool { return s.rep.Crashers[i].At < s.rep.Crashers[j].At })
	return nil
}

// aflMode names the mode RunAFL runs in, says how (note: the build's
// passes, CmpLog on or off) and why this mode (o.Why first, then what the
// build or its absence decided).
func aflMode(afl string, o AFLOptions) (mode, note, why string) {
	if b := o.Instrumented; b != nil {
		mode, note = AFLModeInstrument, "instrumented (afl-clang-fast), fork server, file input"
		why = "built from target.repo with afl-clang-fast; no harness, so one process per input from the fork server"
		if b.Persistent {
			mode, note = AFLModePersistent, "instrumented+persistent (afl-clang-fast, the repository's LLVMFuzzerTestOneInput harness)"
			why = "built from target.repo with afl-clang-fast; its harness links AFL++'s persistent loop (many inputs per process, from shared memory)"
		}
		why = strings.Join(nonEmptyStrings(o.Why, why), "; ")
		if b.CmpLog {
			return mode, note + "; cmplog on (-c 0)", why
		}
		return mode, strings.Join(nonEmptyStrings(note+"; cmplog off, laf-intel split comparisons", b.CmpLogNote), ": "), why
	}
	if aflQEMU(afl) {
		return AFLModeQEMU, "QEMU mode (-Q)", strings.Join(nonEmptyStrings(o.Why, "an opaque binary: QEMU mode traces its coverage"), "; ")
	}
	why = o.Why
	if why == "" {
		why = "an opaque binary (target.compiler, no target.repo build), and no QEMU mode in this AFL++ install"
	}
	return AFLModeBlind, "non-instrumented mode (-n): havoc and splicing without coverage feedback", why
}

func nonEmptyStrings(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// aflFiles lists AFL++'s saved inputs in dir (id:... files), by name.
func aflFiles(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), "id:") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

// aflStat reads one numeric field of fuzzer_stats (0 when absent).
func aflStat(path, key string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

var aflExecsRE = regexp.MustCompile(`(?:^|,)execs:(\d+)`)

// aflExecsFromNames is the most executions any saved input's name records:
// a lower bound when fuzzer_stats was not written (a session that ended at
// its first crash).
func aflExecsFromNames(files []string) int {
	n := 0
	for _, f := range files {
		if m := aflExecsRE.FindStringSubmatch(filepath.Base(f)); m != nil {
			v, _ := strconv.Atoi(m[1])
			n = max(n, v)
		}
	}
	return n
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

func stripANSI(s string) string { return ansiRE.ReplaceAllString(s, "") }

// aflPlotExecs reads total_execs from the last line of plot_data (written
// even when fuzzer_stats is not, as in the non-instrumented mode).
func aflPlotExecs(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := lines[len(lines)-1]
	if strings.HasPrefix(last, "#") {
		return 0
	}
	f := strings.Split(last, ",")
	if len(f) < 12 {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(f[11]))
	return n
}

// aflTmin shrinks a crashing input with afl-tmin (crash mode: the result
// still crashes, perhaps differently, so the caller replays it), within
// budget. It returns nil and a note when afl-tmin is missing or fails.
func aflTmin(ctx context.Context, work string, argv, env []string, timeout time.Duration, input []byte, budget time.Duration) ([]byte, string) {
	tmin, err := exec.LookPath("afl-tmin")
	if err != nil {
		return nil, "afl-tmin not installed: the crash is not minimized by AFL++"
	}
	dir, err := os.MkdirTemp(work, "tmin-")
	if err != nil {
		return nil, "afl-tmin: " + err.Error()
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	if err := os.WriteFile(in, input, 0o600); err != nil {
		return nil, "afl-tmin: " + err.Error()
	}
	args := append([]string{tmin, "-i", in, "-o", out, "-m", "none", "-t", strconv.FormatInt(timeout.Milliseconds(), 10), "--"}, argv...)
	// At the budget afl-tmin is interrupted: on SIGINT it writes the
	// smallest crashing input it has so far.
	stop := make(chan struct{})
	t := time.AfterFunc(budget, func() { close(stop) })
	defer t.Stop()
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: args, Dir: work, Env: env, Timeout: budget + 10*time.Second, Stop: stop,
		CPUSeconds: uint64(budget.Seconds()+11) * 2, OutputCap: 64 << 10, MemoryBytes: 16 << 30})
	if err != nil {
		return nil, "afl-tmin: " + err.Error()
	}
	small, rerr := os.ReadFile(out)
	if rerr != nil || len(small) == 0 {
		tail, _ := sandbox.Text(append(res.Stdout, res.Stderr...)[max(0, len(res.Stdout)+len(res.Stderr)-400):], 400)
		if res.TimedOut {
			return nil, fmt.Sprintf("afl-tmin did not finish in %s: the crash is not minimized", budget)
		}
		return nil, fmt.Sprintf("afl-tmin exited %d: %s", res.ExitCode, strings.TrimSpace(stripANSI(tail)))
	}
	return small, ""
}
