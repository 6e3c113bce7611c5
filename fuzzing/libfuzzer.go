package fuzzing

import (
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/sandbox"
)

// EngineLibFuzzer is LLVM's libFuzzer on a native Go fuzz target built with
// the Go compiler's libFuzzer instrumentation (the way OSS-Fuzz builds Go).
const EngineLibFuzzer = "libfuzzer"

// LibFuzzerTarget is a native Go fuzz target (Go: the module copy, package,
// function, go command and environment, as for the go engine; its CacheDir
// and Parallel are not used) built as a libFuzzer binary.
type LibFuzzerTarget struct {
	Go    GoTarget
	Clang string // a clang that links -fsanitize=fuzzer: LibFuzzerClang
	// Work is a directory in the jail for the binary, the corpus, the
	// artifacts and the dictionary; "" = a new directory beside Go.Dir.
	Work string
	// CacheDir keeps built binaries across sessions, one directory per
	// source (repository commit or content hash), package, function and
	// toolchain; "" = Work (rebuilt every session).
	CacheDir  string
	SourceKey string // RepoSourceKey of Go.Dir; "" = computed before the harness is written
	// Workers is how many libFuzzer processes fuzz the one corpus
	// directory at once (each reloads what the others add, -reload=1), at
	// most the number of CPUs; default 1. The first to stop (a crash, the
	// time) interrupts the others, as one process would have stopped.
	Workers int
	// Scratch holds the session's working corpus (the staged inputs and
	// the directory the workers fuzz), where libFuzzer creates and
	// deletes a file for every input it keeps or shrinks; "" = a fresh
	// RAMScratch directory when there is room for the staged inputs,
	// removed when the session ends, else Work.
	Scratch      string
	InputTimeout time.Duration // -timeout per input; default 10 s (go test's hang limit)
	RSSLimitMB   int           // -rss_limit_mb; default 2048
}

// LibFuzzerClang returns the clang that links libFuzzer, probed once per
// process (see LibFuzzerAvailable); the error says what is missing.
func LibFuzzerClang(ctx context.Context) (string, error) {
	c, why := libFuzzerClang(ctx)
	if c == "" {
		return "", errors.New(why)
	}
	return c, nil
}

func (lt *LibFuzzerTarget) work() string {
	if lt.Work == "" {
		w, err := os.MkdirTemp(filepath.Dir(lt.Go.Dir), "libfuzzer-")
		if err != nil {
			w = filepath.Join(filepath.Dir(lt.Go.Dir), "libfuzzer")
			os.MkdirAll(w, 0o700)
		}
		lt.Work = w
	}
	return lt.Work
}

func (lt *LibFuzzerTarget) inputTimeout() time.Duration {
	if lt.InputTimeout <= 0 {
		return 10 * time.Second
	}
	return max(lt.InputTimeout, time.Second)
}

func (lt *LibFuzzerTarget) rssLimit() int {
	if lt.RSSLimitMB <= 0 {
		return 2048
	}
	return lt.RSSLimitMB
}

// LibFuzzerOptions give a session its dictionary and corpora.
type LibFuzzerOptions struct {
	// Dictionary entries, written in libFuzzer's syntax (-dict); entries it
	// cannot hold are skipped.
	Dictionary []string
	// Kept is the engine's kept corpus (raw inputs): merged into the
	// session's corpus at the start and replaced by the session's merged,
	// grown corpus at the end. "" = none kept.
	Kept string
	// Others are raw inputs of other engines and the seeds: merged in at
	// the start with -merge=1 (inputs that add no coverage are dropped).
	Others [][]byte
	// GoCorpus are `go test fuzz v1` files, converted and merged in too
	// (the package's testdata/fuzz/<Func>/ is read as well).
	GoCorpus [][]byte
	// GoCacheDir is the go engine's -test.fuzzcachedir: its corpus
	// (<dir>/<Func>/) is merged in at the start, and the session's new
	// inputs are written there as `go test fuzz v1` files at the end, so
	// the next go session starts from them. "" = none.
	GoCacheDir string
	// NoDictionary runs without -dict (to measure what the dictionary
	// adds to comparison feedback).
	NoDictionary bool
	// Minimize bounds -minimize_crash per crash; 0 = 30 s at most (a
	// quarter of the session, at least 5 s), negative = not minimized.
	Minimize time.Duration
	// PruneEvery is how often the kept corpus is pruned: merged with
	// -merge=1 into an empty corpus, so only inputs that add coverage stay
	// (ClusterFuzz prunes daily). Between prunes a session starts from the
	// kept corpus and the new inputs as they are (libFuzzer skips, in
	// memory, those that add nothing) and adds what it found. 0 = every
	// session; the time of the last prune is kept beside the corpus.
	PruneEvery time.Duration
}

// prunedStamp, in the kept corpus's directory, holds the time of its last
// prune (RFC 3339) and the number of inputs it kept.
const prunedStamp = ".pruned"

// pruneDue reports whether the kept corpus is due a prune: by the schedule
// (every), or by its size, holding twice what the last prune kept (at
// least half the stage's cap, at most three quarters of it, so the other
// engines' inputs still fit beside it). Between prunes a session adds its
// finds, and a parser with many small paths adds hundreds a session: a
// fixed threshold near the pruned size would merge in nearly every session.
func pruneDue(kept string, every time.Duration, now time.Time) bool {
	if kept == "" || every <= 0 {
		return true
	}
	b, err := os.ReadFile(filepath.Join(kept, prunedStamp))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return true
	}
	t, err := time.Parse(time.RFC3339, f[0])
	if err != nil || now.Sub(t) >= every || t.After(now) {
		return true
	}
	last := 0
	if len(f) > 1 {
		last, _ = strconv.Atoi(f[1])
	}
	return countFiles(kept) >= min(max(maxKeptInputs/2, 2*last), maxKeptInputs*3/4)
}

// mergeBudget is the time a session of length d gives its corpus merge: a
// third of it, at least 10 s and at most 2 minutes (a variable for the
// tests).
var mergeBudget = func(d time.Duration) time.Duration { return min(max(d/3, 10*time.Second), 2*time.Minute) }

// Input limits of the kept corpus.
const (
	maxKeptInput  = 1 << 20 // bytes: larger inputs are skipped (with a note)
	maxKeptInputs = 4096
)

// RunLibFuzzer runs one libFuzzer session on the target for s.Duration: it
// builds the binary (cached), merges the kept corpus, other engines' inputs
// and the seeds (f.Add, testdata/fuzz, s.Seeds) into the session's corpus
// with -merge=1, fuzzes with the dictionary and value profile (on every
// second worker, the first always: see valueProfile),
// minimizes each crash with -minimize_crash=1 and replays it for its crash
// state, and keeps the grown corpus. A plain session (one worker) stops at
// a crash and starts again while time is left and its crashes are new;
// with s.StopAtFirst it ends at the first. Crashers' Input is the
// `go test fuzz v1` form (what ReplayLibFuzzer and ReplayGo take). Errors
// are infrastructure failures: the target does not build, the binary does
// not start.
func RunLibFuzzer(ctx context.Context, lt LibFuzzerTarget, s Session, o LibFuzzerOptions) (*Tally, error) {
	b, err := lt.build(ctx)
	if err != nil {
		return nil, err
	}
	work := lt.work()
	bin := filepath.Join(work, "fuzzer")
	if err := copyFile(b.bin, bin, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("libfuzzer: %w", err)
	}
	scratch := lt.Scratch
	if scratch == "" {
		dir, release := RAMScratch(lt.stageBytes(s, o, b.seeds))
		defer release()
		scratch = cmp.Or(dir, work)
	}
	l := &lfSession{lt: &lt, b: b, o: o, bin: bin, work: work, corpus: filepath.Join(scratch, "corpus"), in: filepath.Join(scratch, "merge-in"),
		artifacts: filepath.Join(work, "artifacts"), mergeArtifacts: filepath.Join(work, "merge-artifacts"),
		sites: map[string]bool{}, passedOver: map[string]bool{}}
	for _, d := range []string{l.corpus, l.artifacts, l.mergeArtifacts} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("libfuzzer: %w", err)
		}
	}
	return runSession(ctx, l, newSession(EngineLibFuzzer, s))
}

// lfSession is libFuzzer's part of a session.
type lfSession struct {
	lt   *LibFuzzerTarget
	b    *lfBuild
	o    LibFuzzerOptions
	bin  string // the binary, copied into work
	work string
	// corpus is the directory the workers fuzz, in the scratch; in the
	// inputs staged for the merge.
	corpus, in                string
	artifacts, mergeArtifacts string
	staged                    map[string]bool // the names staged: the inputs the session did not find
	n                         int             // inputs staged
	prune, merged             bool            // the kept corpus is due a prune; the merge completed
	dict                      string          // the dictionary file; "" = none
	// sites are the panic sites of the crashes found so far: the next
	// round's workers pass over a panic at one of them (the harness's
	// FLEETD_KNOWN_SITES) instead of stopping at the same bug again.
	sites, passedOver map[string]bool
	fuzzing           time.Duration // wall time in fuzzing runs
	// feed holds the staged inputs past the first batch, fed to the
	// workers while they fuzz (libfuzzer_seedpass.go); nil = none.
	feed *feeder
	// maxLen is -max_len when inputs are fed: the largest staged input
	// (at least libFuzzer's default 4096), as libFuzzer would have set it
	// from the whole corpus, so a fed input is not cut; 0 = libFuzzer's.
	maxLen int64
	// keptNames are the staged inputs that came from the kept corpus.
	keptNames map[string]bool
}

// stage writes the kept corpus, the shared queue, other engines' inputs,
// Go corpus files (the caller's, the package's testdata/fuzz/<Func>/ and
// the go engine's cache) and the seeds to the merge's input directory.
func (l *lfSession) stage(_ context.Context, s *session) ([][]byte, error) {
	o, lt := &l.o, l.lt
	if s.Corpus != nil {
		q, err := s.Corpus.Load(maxQueue)
		if err != nil {
			return nil, err
		}
		o.Others = append(append([][]byte(nil), o.Others...), q...)
	}
	o.GoCorpus = append(append([][]byte(nil), o.GoCorpus...), readGoCorpusDir(filepath.Join(lt.Go.pkgDir(), "testdata", "fuzz", lt.Go.Func))...)
	if o.GoCacheDir != "" {
		o.GoCorpus = append(o.GoCorpus, readGoCorpusDir(filepath.Join(o.GoCacheDir, lt.Go.Func))...)
	}
	l.keptNames = map[string]bool{}
	n, skipped, sample, err := lt.stage(l.in, l.b, s.Session, *o, l.keptNames)
	if err != nil {
		return nil, err
	}
	l.n = n
	if skipped > 0 {
		s.note(fmt.Sprintf("%d corpus inputs over %d bytes skipped", skipped, maxKeptInput))
	}
	if d := l.b.seedsDropped; d != "" {
		s.note(d)
	}
	return sample, nil
}

// merge makes the session's corpus: the staged inputs merged with
// -merge=1 when the kept corpus is due a prune, else all of them as they
// are.
func (l *lfSession) merge(ctx context.Context, s *session) error {
	rep, lt, n, corpus, in := s.rep, l.lt, l.n, l.corpus, l.in
	// By the schedule, or by the kept corpus's own size (pruneDue). Not the
	// staged count: the other engines' inputs and the go engine's cache,
	// which this engine's own finds feed, fill the stage to its cap after a
	// few sessions, and a prune every session is a merge pass every session.
	l.prune = pruneDue(l.o.Kept, l.o.PruneEvery, s.start)
	l.staged = listDir(in)
	l.merged = n == 0
	// The seed pass is bounded: the workers start on the first batch and
	// the rest is fed to them as they fuzz, so no input runs twice and
	// mutation starts within seconds (libfuzzer_seedpass.go).
	deferred := filepath.Join(filepath.Dir(in), "deferred")
	rest, largest, err := splitSeedPass(in, deferred)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		var before map[string]bool
		if l.o.Kept != "" {
			rest, before = fedLast(rest, readFedBefore(l.o.Kept))
		}
		l.feed = &feeder{from: deferred, to: corpus, queue: rest, fed: map[string]bool{}, before: before}
		l.maxLen = max(largest, 4096)
		n -= len(rest)
	}
	// A merge is a prune of the kept corpus: with nothing kept yet there
	// is nothing to prune, and the workers' own seed pass drops, in
	// memory, the inputs that add nothing (a merge first would run every
	// seed twice, in two more processes that each run the target's setup).
	keptSome := l.o.Kept != "" && countFiles(l.o.Kept) > 0
	switch {
	case n > 0 && (!l.prune || !keptSome):
		// Between prunes: start from everything staged, as it is.
		if err := os.Remove(corpus); err != nil {
			return fmt.Errorf("libfuzzer: %w", err)
		}
		if err := os.Rename(in, corpus); err != nil {
			return fmt.Errorf("libfuzzer: %w", err)
		}
	case n > 0:
		budget := mergeBudget(s.Duration)
		res, err := lt.exec(ctx, []string{l.bin, "-merge=1", "-timeout=" + secs(lt.inputTimeout()), "-rss_limit_mb=" + strconv.Itoa(lt.rssLimit()),
			"-artifact_prefix=" + l.mergeArtifacts + "/", corpus, in}, budget)
		if err != nil {
			return err
		}
		got := countFiles(corpus)
		l.merged = !res.TimedOut && got > 0
		switch {
		case res.TimedOut:
			// libFuzzer writes a merge's output at its end: an unfinished
			// one leaves next to nothing. Start from everything staged, as
			// between prunes, rather than from what little it wrote.
			if err := os.RemoveAll(corpus); err != nil {
				return fmt.Errorf("libfuzzer: %w", err)
			}
			if err := os.Rename(in, corpus); err != nil {
				return fmt.Errorf("libfuzzer: %w", err)
			}
			s.note(fmt.Sprintf("the corpus merge did not finish in %s (%d inputs merged by then): the session started from the %d staged inputs as they are, and the kept corpus is pruned next time", budget, got, n))
		case got == 0 && countFiles(l.mergeArtifacts) > 0:
			s.note(fmt.Sprintf("none of the %d corpus and seed inputs was kept by the merge: %d crashed the target (it fails on its seeds)", n, countFiles(l.mergeArtifacts)))
		case got == 0:
			tail, _ := sandbox.Text(res.Stderr[max(0, len(res.Stderr)-600):], 600)
			s.note(fmt.Sprintf("none of the %d corpus and seed inputs was kept by the merge (exit %d%s): %s", n, res.ExitCode, sigSuffix(res.Signal), strings.TrimSpace(tail)))
		default:
			rep.Pruned = n - got
			if l.o.Kept != "" {
				s.note(fmt.Sprintf("corpus pruned: %d of %d inputs add coverage", got, n))
			}
		}
	}
	rep.StartedFrom = countFiles(corpus)
	if l.feed != nil {
		s.note(fmt.Sprintf("seed pass: the workers started on the %d smallest of %d staged inputs; the other %d are fed to them while they fuzz", n, n+len(rest), len(rest)))
	}
	return nil
}

// dictionary writes one dictionary (-dict): the caller's, the
// repository's own for this target, the source's literals and what the
// seeds and corpus hold.
func (l *lfSession) dictionary(_ context.Context, s *session, sample [][]byte) error {
	tokens := append([]string(nil), l.o.Dictionary...)
	repoToks, dictNotes := repoDictionaries(l.lt.Go)
	s.notes = append(s.notes, dictNotes...)
	tokens = append(tokens, repoToks...)
	tokens = append(tokens, l.b.literals...)
	tokens = append(tokens, Harvest(sample).Tokens()...)
	if l.o.NoDictionary {
		return nil
	}
	var err error
	l.dict, err = s.writeDict(tokens, filepath.Join(l.work, "dict"), "libfuzzer")
	return err
}

// round runs the workers on the corpus for the time left, then turns the
// artifacts they saved into crashers. A round ends at a crash: another
// starts (three at most) while time is left, the round found a new state
// or panic site, and the session is not to stop at its first crash.
func (l *lfSession) round(ctx context.Context, s *session, round int) (bool, error) {
	rep, lt, b, o := s.rep, l.lt, l.b, l.o
	left := time.Until(s.deadline)
	if round >= 3 || left < time.Second || ctx.Err() != nil {
		return false, nil
	}
	workers := min(max(lt.Workers, 1), runtime.NumCPU())
	args := []string{l.bin, "-timeout=" + secs(lt.inputTimeout()), "-rss_limit_mb=" + strconv.Itoa(lt.rssLimit()),
		"-max_total_time=" + strconv.Itoa(max(1, int(left.Seconds()))), "-artifact_prefix=" + l.artifacts + "/", "-print_final_stats=1",
		"-detect_leaks=0"}
	if l.dict != "" {
		args = append(args, "-dict="+l.dict)
	}
	if l.maxLen > 0 {
		args = append(args, "-max_len="+strconv.FormatInt(l.maxLen, 10))
	}
	seed := 0
	if s.Seed != 0 {
		seed = int(s.Seed) + round*workers
	}
	before := listDir(l.artifacts)
	runStart := time.Now()
	var env []string
	if len(l.sites) > 0 {
		env = []string{"FLEETD_KNOWN_SITES=" + strings.Join(slices.Sorted(maps.Keys(l.sites)), "\n")}
	}
	var fed <-chan error
	stopFeed := make(chan struct{})
	if l.feed != nil {
		fed = l.feed.run(stopFeed)
	}
	runs, err := lt.fuzzWorkers(ctx, workers, args, env, l.corpus, seed, left+lt.inputTimeout()+30*time.Second)
	close(stopFeed)
	if fed != nil {
		err = errors.Join(err, <-fed)
	}
	if err != nil {
		return false, err
	}
	base := rep.Execs
	var st LibFuzzerStats
	var crashes []LibFuzzerCrash
	var wall time.Duration
	for _, w := range runs {
		rep.Execs += w.stats.Execs
		st.Execs += w.stats.Execs
		rep.Coverage, rep.Features = max(rep.Coverage, w.stats.Coverage), max(rep.Features, w.stats.Features)
		if round == 0 {
			rep.InitialCoverage = max(rep.InitialCoverage, w.stats.InitedCov)
		}
		st.CorpusInputs = max(st.CorpusInputs, w.stats.CorpusInputs)
		crashes = append(crashes, w.crashes...)
		for _, m := range passedLine.FindAllSubmatch(w.out, -1) {
			l.passedOver[string(m[1])] = true
		}
		wall = max(wall, w.res.Duration)
		rep.CPU += w.res.CPUTime
		if w.res.Truncated {
			s.note("libFuzzer's output was cut: statistics may be short")
		}
	}
	l.fuzzing += wall
	if inited := slices.ContainsFunc(runs, func(w lfWorker) bool { return w.stats.Inited > 0 }); round == 0 && !inited && len(crashes) > 0 {
		s.note(fmt.Sprintf("the target failed in the seed pass, before any mutation (on its seeds or corpus: %d inputs)", rep.StartedFrom))
	}
	if st.CorpusInputs > 0 {
		rep.CorpusSize = st.CorpusInputs
	}
	found := newArtifacts(l.artifacts, before)
	if len(found) == 0 {
		for _, w := range runs {
			res := w.res
			if res.ExitCode != 0 && !res.TimedOut && !res.Stopped && ctx.Err() == nil && len(w.crashes) == 0 {
				tail, _ := sandbox.Text(w.out[max(0, len(w.out)-1500):], 1500)
				return false, fmt.Errorf("libfuzzer: the fuzzer exited %d%s without a crash: %s", res.ExitCode, sigSuffix(res.Signal), strings.TrimSpace(tail))
			}
		}
		return false, nil // the time is up
	}
	res := runs[0].res
	for _, w := range runs {
		if len(w.crashes) > 0 || !w.res.Stopped && w.res.ExitCode != 0 {
			res = w.res // the worker that crashed: its time is the crash's
			break
		}
	}
	newState, newSite := false, false
	for i, a := range found {
		if len(rep.Crashers) >= s.maxCrashers || i >= 4*s.maxCrashers {
			break // more than enough to find the new states among
		}
		c, ok, err := lt.crasher(ctx, b, a, crashes, o.Minimize, s.Duration, s.known, s.Corpus)
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		if c.site != "" && !l.sites[c.site] {
			l.sites[c.site], newSite = true, true
		}
		if c.Outcome == TimedOut {
			rep.Timeouts++
		}
		if s.known(c) {
			continue
		}
		if c.Note != "" {
			s.note(c.State + ": " + c.Note)
		}
		newState = true
		// A plain run ends at its crash: its final statistics count the
		// inputs up to it (the status lines before it are a lower bound).
		c.At = runStart.Sub(s.start) + res.Duration
		c.Execs = base + st.Execs
		if _, err := s.record(c, c.Raw); err != nil {
			return false, err
		}
	}
	return !(s.StopAtFirst && rep.FirstCrash > 0 || !newState && !newSite || len(rep.Crashers) >= s.maxCrashers), nil
}

// keep replaces or grows the kept corpus with the session's, and hands
// the inputs it found to the other engines.
func (l *lfSession) keep(_ context.Context, s *session) error {
	rep := s.rep
	if len(l.passedOver) > 0 {
		s.note(fmt.Sprintf("crashes at %d panic site(s) found earlier in the session passed over", len(l.passedOver)))
	}
	rep.Elapsed = time.Since(s.start)
	if secs := l.fuzzing.Seconds(); secs > 0 {
		rep.ExecsPerSec = int(float64(rep.Execs) / secs)
	}
	if rep.CorpusSize == 0 {
		rep.CorpusSize = countFiles(l.corpus)
	}
	if kept := l.o.Kept; kept != "" {
		// Between prunes only this session's finds join the kept corpus: the
		// other engines' inputs and the seeds staged with it are staged again
		// next time, and keeping them would fill it to the prune threshold in
		// a session or two (a merge pass in nearly every session).
		// A prune keeps the merged corpus, which the fed inputs were not
		// part of: those from the kept corpus stay (pruned next time), the
		// others (seeds, other engines') are staged again anyway.
		var notMerged map[string]bool
		if f := l.feed; f != nil && l.prune && l.merged {
			notMerged = map[string]bool{}
			for name := range f.fed {
				notMerged[name] = !l.keptNames[name]
			}
			// Kept inputs the session did not reach stay kept too.
			for _, in := range f.queue {
				if l.keptNames[in.name] {
					if err := os.Rename(filepath.Join(f.from, in.name), filepath.Join(l.corpus, in.name)); err != nil {
						return fmt.Errorf("libfuzzer corpus: %w", err)
					}
				}
			}
		}
		if err := keepCorpus(l.corpus, kept, l.prune && l.merged, l.staged, notMerged); err != nil {
			return err
		}
		if l.prune && l.merged {
			// What the merge kept, not the kept corpus now: with the
			// session's finds added, that was at the next prune's threshold
			// already once sessions ran their whole time, and every session
			// pruned again (the daemon on sh, fourth session).
			if err := writeAtomic(filepath.Join(kept, prunedStamp), fmt.Appendf(nil, "%s %d\n", s.start.UTC().Format(time.RFC3339), rep.StartedFrom)); err != nil {
				return fmt.Errorf("libfuzzer corpus: %w", err)
			}
		}
	}
	if f := l.feed; f != nil {
		if l.o.Kept != "" {
			if err := writeFedBefore(l.o.Kept, f); err != nil {
				return err
			}
		}
		rep.StartedFrom += len(f.fed)
		if left := f.left(); left > 0 {
			s.note(fmt.Sprintf("seed pass: %d of the %d inputs fed during the session were not reached in its time (the largest)", left, left+len(f.fed)))
		}
	}
	// The inputs this session added seed the other engines.
	fresh := newInputs(l.corpus, l.staged)
	rep.NewInputs = len(fresh)
	return shareInputs(fresh, s.Corpus, l.o.GoCacheDir, l.lt.Go.Func, l.b.types)
}

// maxShared bounds the inputs one session hands to the other engines.
const maxShared = 512

// newInputs reads the corpus inputs that were not staged for the merge
// (libFuzzer names inputs by content, as stage does), at most maxShared.
func newInputs(corpus string, staged map[string]bool) [][]byte {
	entries, _ := os.ReadDir(corpus)
	var out [][]byte
	for _, e := range entries {
		if len(out) >= maxShared {
			break
		}
		if staged[e.Name()] || !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(corpus, e.Name())); err == nil && len(b) > 0 && len(b) <= maxKeptInput {
			out = append(out, b)
		}
	}
	return out
}

// shareInputs adds inputs to the target's shared queue (what other
// engines load) and, as `go test fuzz v1` files, to the go engine's cache
// corpus.
func shareInputs(inputs [][]byte, c *Corpus, goCache, fn string, types []string) error {
	dir := ""
	if goCache != "" {
		dir = filepath.Join(goCache, fn)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("libfuzzer: %w", err)
		}
	}
	for _, in := range inputs {
		if c != nil {
			if _, err := c.Add(in, "libfuzzer|"+contentName(in)); err != nil {
				return err
			}
		}
		if dir != "" {
			g := GoInput(in, types)
			if err := writeAtomic(filepath.Join(dir, "libfuzzer-"+contentName(g)), g); err != nil {
				return fmt.Errorf("libfuzzer: %w", err)
			}
		}
	}
	return nil
}

// readGoCorpusDir reads the `go test fuzz v1` files of a directory (at
// most maxKeptInputs, each at most maxKeptInput bytes).
func readGoCorpusDir(dir string) [][]byte {
	out, _ := LoadSeeds(dir, maxKeptInputs, maxKeptInput)
	return out
}

func secs(d time.Duration) string { return strconv.Itoa(max(1, int(d.Seconds()))) }

// exec runs the fuzzer in the package directory (fuzz tests read their
// testdata relative to it), bounded by timeout; stop (nil = never)
// interrupts it with SIGINT, on which libFuzzer prints its statistics.
func (lt *LibFuzzerTarget) exec(ctx context.Context, argv []string, timeout time.Duration, stop ...<-chan struct{}) (*sandbox.ExecResult, error) {
	return lt.execEnv(ctx, argv, nil, timeout, stop...)
}

// execEnv is exec with env added to the fuzzer's environment.
func (lt *LibFuzzerTarget) execEnv(ctx context.Context, argv, env []string, timeout time.Duration, stop ...<-chan struct{}) (*sandbox.ExecResult, error) {
	spec := sandbox.ExecSpec{Argv: argv, Dir: lt.Go.pkgDir(), Env: append(lt.runEnv(), env...), Timeout: timeout,
		MemoryBytes: lt.Go.memory(), CPUSeconds: uint64(timeout.Seconds()+1) * 2, OutputCap: 8 << 20, FileBytes: 1 << 30}
	if len(stop) > 0 {
		spec.Stop = stop[0]
	}
	res, err := sandbox.Exec(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("libfuzzer: %w", err)
	}
	return res, nil
}

// lfWorker is one fuzzing process's result.
type lfWorker struct {
	res     *sandbox.ExecResult
	out     []byte // stdout then stderr
	stats   LibFuzzerStats
	crashes []LibFuzzerCrash
}

// fuzzWorkers runs n libFuzzer processes on one corpus directory, each
// with its own seed (seed+i; 0 = libFuzzer's own), and returns when all
// have ended: the first to end (a crash, its time) interrupts the rest, so
// the round ends as one process's would. Independent processes rather
// than -fork=N: measured here on the sh parser, fork mode spent 40 % of
// its CPU in the kernel and ran 2,360 inputs per CPU-second against 3,900
// for two plain processes. Each worker's value profile is valueProfile's.
func (lt *LibFuzzerTarget) fuzzWorkers(ctx context.Context, n int, args, env []string, corpus string, seed int, timeout time.Duration) ([]lfWorker, error) {
	runs := make([]lfWorker, n)
	errs := make([]error, n)
	stop := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for i := range n {
		argv := append(append([]string(nil), args...), valueProfile(i))
		if seed != 0 {
			argv = append(argv, "-seed="+strconv.Itoa(seed+i))
		}
		argv = append(argv, corpus)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer once.Do(func() { close(stop) })
			res, err := lt.execEnv(ctx, argv, env, timeout, stop)
			if err != nil {
				errs[i] = err
				return
			}
			out := append(append([]byte(nil), res.Stdout...), res.Stderr...)
			st, crashes := ParseLibFuzzer(out)
			runs[i] = lfWorker{res: res, out: out, stats: st, crashes: crashes}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return runs, nil
}

// valueProfile is a worker's -use_value_profile flag. Value profile
// (comparison operands as coverage) is a per-worker strategy, as
// ClusterFuzz makes it a per-session one: worker 0, and every
// second worker after it, runs with -use_value_profile=1; the others run
// without it and explore edges about a quarter faster per CPU-second
// (BENCHMARKS.md, issue 21), picking up what the value-profile workers
// solve from the shared directory (-reload). One worker always has it.
func valueProfile(worker int) string {
	return "-use_value_profile=" + strconv.Itoa(1-worker%2)
}

// stage writes the inputs to merge into dir: the kept corpus, the seeds
// (f.Add, s.Seeds), other engines' inputs and Go corpus files, each at most
// maxKeptInput bytes, at most maxKeptInputs in all. It returns how many it
// wrote, how many it skipped (for their size, or past the count), and a
// sample (seeds first, at most 256 inputs of at most 64 KiB) to harvest a
// dictionary from; the names of the inputs that came from the kept corpus
// go into fromKept (nil = not wanted).
func (lt *LibFuzzerTarget) stage(dir string, b *lfBuild, s Session, o LibFuzzerOptions, fromKept map[string]bool) (n, skipped int, sample [][]byte, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, 0, nil, fmt.Errorf("libfuzzer: %w", err)
	}
	seen := map[string]bool{}
	add := func(in []byte) error {
		if len(in) > maxKeptInput {
			skipped++
			return nil
		}
		name := sha1Name(in)
		if seen[name] {
			return nil
		}
		if n >= maxKeptInputs {
			skipped++
			return nil
		}
		seen[name] = true
		n++
		return os.WriteFile(filepath.Join(dir, name), in, 0o600)
	}
	all := append(append([][]byte(nil), b.seeds...), s.Seeds...)
	fromSeeds := len(all)
	if o.Kept != "" {
		entries, _ := os.ReadDir(o.Kept)
		for _, e := range entries {
			if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if info, err := e.Info(); err == nil && info.Size() > maxKeptInput {
				skipped++
				continue
			}
			if in, err := os.ReadFile(filepath.Join(o.Kept, e.Name())); err == nil {
				all = append(all, in)
			}
		}
	}
	keptEnd := len(all)
	all = append(all, o.Others...)
	for _, g := range o.GoCorpus {
		if raw, err := RawInput(g, b.types); err == nil {
			all = append(all, raw)
		}
	}
	for i, in := range all {
		if fromKept != nil && i >= fromSeeds && i < keptEnd {
			fromKept[sha1Name(in)] = true
		}
		if err := add(in); err != nil {
			return n, skipped, sample, fmt.Errorf("libfuzzer: %w", err)
		}
		if len(sample) < 256 && len(in) <= maxInput {
			sample = append(sample, in)
		}
	}
	return n, skipped, sample, nil
}

// sha1Name is libFuzzer's name for an input: the SHA-1 of its content.
func sha1Name(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

func countFiles(dir string) int {
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			n++
		}
	}
	return n
}

// newArtifacts lists the crash, timeout and out-of-memory inputs saved
// since before, oldest first.
func newArtifacts(dir string, before map[string]bool) []string {
	entries, _ := os.ReadDir(dir)
	type ent struct {
		path string
		mod  time.Time
	}
	var out []ent
	for _, e := range entries {
		name := e.Name()
		if before[name] || !e.Type().IsRegular() {
			continue
		}
		if !strings.HasPrefix(name, "crash-") && !strings.HasPrefix(name, "timeout-") && !strings.HasPrefix(name, "oom-") && !strings.HasPrefix(name, "slow-unit-") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, ent{filepath.Join(dir, name), info.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].mod.Before(out[j].mod) })
	paths := make([]string, len(out))
	for i, e := range out {
		paths[i] = e.path
	}
	return paths
}

// crasher turns a saved artifact into a Crasher: it is replayed for its
// state, and a crash of a state not known yet is minimized (bounded) and
// the minimized input replayed; when that does not fail the same way the
// original is kept. A timeout is not replayed (it would cost the timeout
// again): its state is its input's shape. ok is false for an artifact that
// does not fail when replayed and was not reported in the session's
// output.
func (lt *LibFuzzerTarget) crasher(ctx context.Context, b *lfBuild, artifact string, reported []LibFuzzerCrash, minimize, session time.Duration, known func(Crasher) bool, kept *Corpus) (Crasher, bool, error) {
	raw, err := os.ReadFile(artifact)
	if err != nil {
		return Crasher{}, false, fmt.Errorf("libfuzzer: %w", err)
	}
	var rc *LibFuzzerCrash
	for i := range reported {
		if filepath.Clean(reported[i].Artifact) == filepath.Clean(artifact) {
			rc = &reported[i]
		}
	}
	name := filepath.Base(artifact)
	if strings.HasPrefix(name, "timeout-") || strings.HasPrefix(name, "slow-unit-") {
		// A hang is confirmed by running its input once more under the
		// timeout (once per state: a known hang is not paid for again), by
		// CPU time: a starved replay gets more wall time (confirmHang). One
		// that finishes was slow under load, not a hang, and is dropped. A
		// slow unit (slower than -report_slow_units, under the timeout) is a
		// hang only when its replay times out.
		goIn := GoInput(raw, b.types)
		c := Crasher{Input: goIn, Raw: raw, Outcome: TimedOut, State: HangState(goIn)}
		if known(c) {
			return c, true, nil
		}
		again, err := lt.confirmRaw(ctx, b, raw, lt.inputTimeout())
		if err != nil {
			return Crasher{}, false, err
		}
		if again.Outcome != TimedOut {
			return Crasher{}, false, nil
		}
		c.Note = again.Note
		if rc != nil {
			c.Stderr, _ = sandbox.Text(headTail(dropHarnessFrames(rc.Report)), 2048)
		} else {
			c.Stderr = again.Stderr
		}
		c.ExitCode, c.Signal = again.ExitCode, again.Signal
		return c, true, nil
	}
	orig, err := lt.replayRaw(ctx, b, raw, 0)
	if err != nil {
		return Crasher{}, false, err
	}
	if !Finding(orig.Outcome) {
		if rc == nil {
			return Crasher{}, false, nil
		}
		// Flaky: keep what the session saw.
		out := rc.outcome()
		goIn := GoInput(raw, b.types)
		c := Crasher{Input: goIn, Raw: raw, Outcome: out, State: rc.state(out, goIn), ExitCode: 1, site: reportedSite(rc.Report)}
		c.Stderr, _ = sandbox.Text(headTail(dropHarnessFrames(rc.Report)), 2048)
		return c, true, nil
	}
	if strings.HasPrefix(name, "crash-") && minimize >= 0 && len(raw) > 1 && !known(orig) {
		// A crash an earlier session minimized: its small input, replayed,
		// instead of minimizing again (a known bug is met in nearly every
		// session, and its minimization took up to a quarter of one).
		key := EngineLibFuzzer + "|" + orig.Outcome + "|" + orig.State
		if small := kept.Minimized(key); small != nil && len(small) < len(raw) {
			if c, err := lt.replayRaw(ctx, b, small, 0); err == nil && c.Outcome == orig.Outcome && c.State == orig.State {
				return c, true, nil
			}
		}
		if minimize == 0 {
			minimize = min(30*time.Second, max(session/4, 5*time.Second))
		}
		if small, err := lt.minimize(ctx, raw, minimize); err == nil && len(small) < len(raw) {
			if c, err := lt.replayRaw(ctx, b, small, 0); err == nil && c.Outcome == orig.Outcome && c.State == orig.State {
				return c, true, kept.SetMinimized(key, small)
			}
		}
	}
	return orig, true, nil
}

// headTail keeps the last 2 KiB of a report: where a panic's message and
// frames are when the target printed a lot before it.
func headTail(b []byte) []byte {
	if len(b) <= 2048 {
		return b
	}
	if i := strings.LastIndex(string(b), "--- FAIL"); i >= 0 {
		return b[i:]
	}
	if i := strings.LastIndex(string(b), "panic: "); i >= 0 {
		return b[i:]
	}
	return b[len(b)-2048:]
}

// minimizeStepRuns is how many inputs one minimization step may run.
const minimizeStepRuns = 1000000

// minimize shrinks one crashing input for at most d with libFuzzer's
// crash minimizer: what -minimize_crash=1 does (repeated
// -minimize_crash_internal_step=1 runs, each fuzzing for a crash shorter
// than the current input), with comparison feedback, and retried after a
// step that found nothing (libFuzzer's own loop stops at the first such
// step, which on a length field is often too early). It returns the
// smallest input that still crashed; the caller checks its state.
func (lt *LibFuzzerTarget) minimize(ctx context.Context, raw []byte, d time.Duration) ([]byte, error) {
	dir, err := os.MkdirTemp(lt.work(), "minimize-")
	if err != nil {
		return nil, fmt.Errorf("libfuzzer minimize: %w", err)
	}
	defer os.RemoveAll(dir)
	cur, out := filepath.Join(dir, "current"), filepath.Join(dir, "smaller")
	if err := os.WriteFile(cur, raw, 0o600); err != nil {
		return nil, fmt.Errorf("libfuzzer minimize: %w", err)
	}
	best := raw
	deadline := time.Now().Add(d)
	step := min(max(d/8, time.Second), 5*time.Second)
	for misses := 0; misses < 3 && len(best) > 1; {
		left := time.Until(deadline)
		if left < time.Second || ctx.Err() != nil {
			break
		}
		os.Remove(out)
		t := min(step, left)
		res, err := lt.exec(ctx, []string{filepath.Join(lt.work(), "fuzzer"), "-minimize_crash_internal_step=1", "-runs=" + strconv.Itoa(minimizeStepRuns),
			"-max_total_time=" + secs(t), "-use_value_profile=1", "-timeout=" + secs(lt.inputTimeout()), "-rss_limit_mb=" + strconv.Itoa(lt.rssLimit()),
			"-artifact_prefix=" + dir + "/", "-exact_artifact_path=" + out, cur}, t+lt.inputTimeout()+10*time.Second)
		if err != nil {
			return nil, err
		}
		small, err := os.ReadFile(out)
		if err != nil || len(small) == 0 || len(small) >= len(best) {
			// A step counts as a miss only when it ran a fair share of
			// its inputs: on a busy machine a step that the clock ended
			// early proves nothing, and three of them in a row would end
			// the minimization before it had really tried.
			stats, _ := ParseLibFuzzer(append(append([]byte(nil), res.Stdout...), res.Stderr...))
			if stats.Execs >= minimizeStepRuns/10 {
				misses++
			}
			continue
		}
		misses, best = 0, small
		if err := os.WriteFile(cur, best, 0o600); err != nil {
			return nil, fmt.Errorf("libfuzzer minimize: %w", err)
		}
	}
	if len(best) == len(raw) {
		return nil, errors.New("libfuzzer minimize: no smaller input")
	}
	return best, nil
}

// replayRaw runs the binary once on one raw input and describes the
// outcome (Compiled when the target passes).
func (lt *LibFuzzerTarget) replayRaw(ctx context.Context, b *lfBuild, raw []byte, timeout time.Duration) (Crasher, error) {
	dir, err := os.MkdirTemp(lt.work(), "replay-")
	if err != nil {
		return Crasher{}, fmt.Errorf("libfuzzer replay: %w", err)
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "input")
	if err := os.WriteFile(in, raw, 0o600); err != nil {
		return Crasher{}, fmt.Errorf("libfuzzer replay: %w", err)
	}
	it := lt.inputTimeout()
	if timeout > 0 {
		it = timeout
	}
	bin := filepath.Join(lt.work(), "fuzzer")
	if _, err := os.Stat(bin); err != nil {
		if err := copyFile(b.bin, bin, 0o700); err != nil {
			return Crasher{}, fmt.Errorf("libfuzzer replay: %w", err)
		}
	}
	res, err := lt.execEnv(ctx, []string{bin, "-timeout=" + secs(it), "-rss_limit_mb=" + strconv.Itoa(lt.rssLimit()),
		"-artifact_prefix=" + dir + "/", "-runs=1", in}, []string{"FLEETD_SETUP_CPU=1"}, it+30*time.Second)
	if err != nil {
		return Crasher{}, err
	}
	out := append(append([]byte(nil), res.Stdout...), res.Stderr...)
	setup, out := setupCPU(out)
	goIn := GoInput(raw, b.types)
	c := Crasher{Input: goIn, Raw: raw, ExitCode: res.ExitCode, Signal: res.Signal, site: reportedSite(out), cpu: max(res.CPUTime-setup, 0)}
	_, crashes := ParseLibFuzzer(out)
	switch {
	case len(crashes) > 0:
		c.Outcome = crashes[0].outcome()
		c.State = crashes[0].state(c.Outcome, goIn)
		c.Stderr, _ = sandbox.Text(headTail(dropHarnessFrames(crashes[0].Report)), 2048)
	case res.TimedOut:
		c.Outcome, c.State = TimedOut, HangState(goIn)
	case res.ExitCode == 0:
		c.Outcome = Compiled
	default:
		// Died without libFuzzer's report: classify the run itself.
		c.Outcome = Classify(&sandbox.ExecResult{ExitCode: res.ExitCode, Signal: res.Signal, CPULimited: res.CPULimited, Stderr: out})
		if Finding(c.Outcome) {
			st := ParseCrash(dropHarnessFrames(out))
			if st.IsZero() {
				st = FallbackState(res.Signal, res.ExitCode)
			}
			c.State = st.String()
		}
		c.Stderr, _ = sandbox.Text(headTail(out), 2048)
	}
	return c, nil
}

// setupCPULine is what the harness prints, with FLEETD_SETUP_CPU set, of
// the CPU its setup (the fuzz target's body up to f.Fuzz) used.
var setupCPULine = regexp.MustCompile(`(?m)^fleetd-setup-cpu: (\d+)\n`)

// setupCPU reads the setup's CPU time from a replay's output and returns
// the output without that line.
func setupCPU(out []byte) (time.Duration, []byte) {
	m := setupCPULine.FindSubmatchIndex(out)
	if m == nil {
		return 0, out
	}
	ns, _ := strconv.ParseInt(string(out[m[2]:m[3]]), 10, 64)
	return time.Duration(ns), append(out[:m[0]:m[0]], out[m[1]:]...)
}

// confirmRaw replays one raw input under limit, a timeout confirmed by
// CPU time (confirmHang: a starved replay is run again with more wall
// time).
func (lt *LibFuzzerTarget) confirmRaw(ctx context.Context, b *lfBuild, raw []byte, limit time.Duration) (Crasher, error) {
	return confirmHang(ctx, limit, func(scale int) (Crasher, error) {
		return lt.replayRaw(ctx, b, raw, time.Duration(scale)*limit)
	})
}

// ReplayLibFuzzer runs the target's libFuzzer binary (built, or from the
// cache) on one input: a `go test fuzz v1` file, as a libfuzzer or go
// crasher's Input is, converted through the fuzz function's argument
// types. It describes the outcome: Compiled when the target passes,
// Crashed, TimedOut (confirmed by CPU time: confirmHang; the Note says how
// when the first replay was starved) or Resource with the crash state.
// Errors: the input is malformed or does not match the arguments, the
// target does not build.
func ReplayLibFuzzer(ctx context.Context, lt LibFuzzerTarget, input []byte, timeout time.Duration) (Crasher, error) {
	if _, err := ParseGoCorpus(input); err != nil {
		return Crasher{}, err
	}
	b, err := lt.build(ctx)
	if err != nil {
		return Crasher{}, err
	}
	raw, err := RawInput(input, b.types)
	if err != nil {
		return Crasher{}, fmt.Errorf("libfuzzer replay: %w", err)
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	c, err := lt.confirmRaw(ctx, b, raw, max(timeout, time.Second))
	if err != nil {
		return Crasher{}, err
	}
	c.Input = input
	return c, nil
}

// keepCorpus adds the session's corpus to kept, skipping inputs over
// maxKeptInput and stopping at maxKeptInputs; between prunes only what the
// session found (names not in staged). When the merge at the start
// completed (prune), the session's corpus held every input of kept that
// adds coverage, so kept then holds exactly the session's corpus (less
// the names notMerged says were fed in after the merge and are not
// kept's): the merge is the pruning.
func keepCorpus(corpus, kept string, prune bool, staged, notMerged map[string]bool) error {
	if err := os.MkdirAll(kept, 0o700); err != nil {
		return fmt.Errorf("libfuzzer corpus: %w", err)
	}
	want := map[string]bool{}
	entries, _ := os.ReadDir(corpus)
	for _, e := range entries {
		if len(want) >= maxKeptInputs {
			break
		}
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || !prune && staged[e.Name()] || prune && notMerged[e.Name()] {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() == 0 || info.Size() > maxKeptInput {
			continue
		}
		want[e.Name()] = true
		dst := filepath.Join(kept, e.Name())
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(corpus, e.Name()))
		if err != nil {
			return fmt.Errorf("libfuzzer corpus: %w", err)
		}
		if err := writeAtomic(dst, b); err != nil {
			return fmt.Errorf("libfuzzer corpus: %w", err)
		}
	}
	if !prune || len(want) == 0 {
		return nil // a partial merge never empties the kept corpus
	}
	old, _ := os.ReadDir(kept)
	for _, e := range old {
		if !want[e.Name()] && e.Type().IsRegular() {
			os.Remove(filepath.Join(kept, e.Name()))
		}
	}
	return nil
}

// stageBytes is about what a session writes to its scratch: the inputs it
// stages (the kept corpus, the shared queue, the caller's) twice, as the
// merge copies them into the corpus, plus room for what the session adds.
func (lt *LibFuzzerTarget) stageBytes(s Session, o LibFuzzerOptions, seeds [][]byte) int64 {
	n := dirBytes(o.Kept)
	if s.Corpus != nil {
		n += dirBytes(filepath.Join(s.Corpus.dir, "queue"))
	}
	for _, b := range slices.Concat(o.Others, o.GoCorpus, s.Seeds, seeds) {
		n += int64(len(b))
	}
	return 2*n + 64<<20
}
