package fuzzing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/qafleet/fleetd/sandbox"
)

// AFL++ run modes, as the run record says them.
const (
	AFLModeBlind      = "non-instrumented"
	AFLModeQEMU       = "qemu"
	AFLModeInstrument = "instrumented"
	AFLModePersistent = "instrumented+persistent"
)

// AFLBuild is a C or C++ repository to build with afl-clang-fast.
type AFLBuild struct {
	Dir       string   // the repository copy (in the jail)
	Build     []string // argv; {out} = the binary, {harness} = Harness's path
	Harness   string   // LLVMFuzzerTestOneInput file relative to Dir; "" = none
	Work      string   // scratch directory for the build copies
	CacheDir  string   // built binaries, one entry per source key
	SourceKey string   // RepoSourceKey of Dir ("": computed)
}

// AFLBinaries is an instrumented build: Bin, with CmpLog's comparison
// logging in it when the AFL_LLVM_CMPLOG=1 build succeeded (afl-fuzz -c 0;
// else Bin has laf-intel's split comparisons and CmpLogNote says why).
type AFLBinaries struct {
	Bin        string
	CmpLog     bool
	CmpLogNote string
	Persistent bool // Bin runs AFL++'s persistent loop (a linked harness)
	// Dict is the build's dictionary, what afl-clang-lto's autodictionary
	// would embed: the string comparisons AFL_LLVM_DICT2FILE saw while
	// compiling, then the literals of the repository's C and C++ sources
	// (CLiterals). RunAFL hands it to afl-fuzz (-x) with the others.
	Dict []string
}

// AFLClangFast returns afl-clang-fast ("" when AFL++'s LLVM mode is not
// installed).
func AFLClangFast() string {
	p, err := exec.LookPath("afl-clang-fast")
	if err != nil {
		return ""
	}
	return p
}

// aflBuildVersion changes when the build recipe does (flags, passes).
const aflBuildVersion = "afl-build-3"

// BuildAFL builds b with afl-clang-fast, from the cache when this source
// was built before: one fuzzing binary with CmpLog's comparison logging in
// it (AFL_LLVM_CMPLOG=1, run with afl-fuzz -c 0), or, when that build
// fails, with laf-intel's split comparisons (AFL_LLVM_LAF_ALL=1, so a
// multi-byte comparison is coverage AFL++ can climb); and the build's
// dictionary (AFLBinaries.Dict). Not a second, CmpLog-only binary for
// -c: with Debian's afl++ 4.04c its input-to-state stage never solved a
// 32-bit comparison that way (0 of 8 sessions), where -c 0 solved it
// within 30 inputs in each; and CmpLog with laf-intel in one binary logs
// only the split one-byte comparisons, which CmpLog skips (BENCHMARKS.md).
// Each build runs in its own copy of the repository, in the jail, with
// CC/CXX set to afl-clang-fast(++). Errors: afl-clang-fast missing, or the
// build failing (its output's tail in the error).
func BuildAFL(ctx context.Context, b AFLBuild) (*AFLBinaries, error) {
	cc := AFLClangFast()
	if cc == "" {
		return nil, errors.New("afl-clang-fast is not installed (AFL++'s LLVM mode)")
	}
	if len(b.Build) == 0 {
		return nil, errors.New("no build command")
	}
	src := b.SourceKey
	if src == "" {
		var err error
		if src, err = RepoSourceKey(ctx, b.Dir); err != nil {
			return nil, err
		}
	}
	sum := sha256.Sum256([]byte(strings.Join(append([]string{aflBuildVersion, src, cc, b.Harness}, b.Build...), "\x00")))
	entry := filepath.Join(b.CacheDir, hex.EncodeToString(sum[:12]))
	if bins, err := loadAFLBuild(entry); err == nil {
		return bins, nil
	}
	tmp, err := os.MkdirTemp(b.Work, "aflbuild-")
	if err != nil {
		return nil, fmt.Errorf("afl build: %w", err)
	}
	d2f := filepath.Join(tmp, "dict2file.txt")
	fuzzer := filepath.Join(tmp, "fuzzer")
	if cerr := aflBuildOnce(ctx, b, cc, fuzzer, "AFL_LLVM_CMPLOG=1", "AFL_LLVM_DICT2FILE="+d2f); cerr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		os.Remove(d2f)
		if err := aflBuildOnce(ctx, b, cc, fuzzer, "AFL_LLVM_LAF_ALL=1", "AFL_LLVM_DICT2FILE="+d2f); err != nil {
			return nil, err
		}
		os.WriteFile(filepath.Join(tmp, "cmplog-note"), []byte("the AFL_LLVM_CMPLOG=1 build failed, laf-intel instead: "+cerr.Error()), 0o600)
	} else if err := os.WriteFile(filepath.Join(tmp, "cmplog"), nil, 0o600); err != nil {
		return nil, fmt.Errorf("afl build: %w", err)
	}
	// The build's dictionary: a file of its own in the cache entry, so a
	// cached build keeps it.
	var toks []string
	if raw, err := os.ReadFile(d2f); err == nil {
		toks, _ = ParseDict(raw) // AFL++ writes valid lines; any other is left out
	}
	os.Remove(d2f)
	if text, _ := FormatDict(append(toks, CLiterals(b.Dir, 0)...)); len(text) > 0 {
		if err := os.WriteFile(filepath.Join(tmp, "dict.txt"), text, 0o600); err != nil {
			return nil, fmt.Errorf("afl build: %w", err)
		}
	}
	// afl-fuzz reads the same signature to choose persistent mode; it is
	// looked for once here, not in the whole binary at every session.
	if exe, err := os.ReadFile(filepath.Join(tmp, "fuzzer")); err == nil && bytes.Contains(exe, []byte(aflPersistentSig)) {
		os.WriteFile(filepath.Join(tmp, "persistent"), nil, 0o600)
	}
	if err := installBuild(b.CacheDir, filepath.Base(entry), tmp); err != nil {
		return nil, fmt.Errorf("afl build: %w", err)
	}
	return loadAFLBuild(entry)
}

// aflPersistentSig is the signature afl-clang-fast puts in a persistent-mode
// binary (afl-fuzz reads it to choose the mode).
const aflPersistentSig = "##SIG_AFL_PERSISTENT##"

func loadAFLBuild(dir string) (*AFLBinaries, error) {
	bins := &AFLBinaries{Bin: filepath.Join(dir, "fuzzer")}
	if _, err := os.Stat(bins.Bin); err != nil {
		return nil, err
	}
	_, err := os.Stat(filepath.Join(dir, "persistent"))
	bins.Persistent = err == nil
	if text, err := os.ReadFile(filepath.Join(dir, "dict.txt")); err == nil {
		bins.Dict, _ = ParseDict(text)
	}
	if _, err := os.Stat(filepath.Join(dir, "cmplog")); err == nil {
		bins.CmpLog = true
	} else if n, err := os.ReadFile(filepath.Join(dir, "cmplog-note")); err == nil {
		bins.CmpLogNote = string(n)
	}
	return bins, nil
}

// aflBuildOnce runs the build command in a fresh copy of the repository
// with afl-clang-fast and more AFL++ variables, writing out.
func aflBuildOnce(ctx context.Context, b AFLBuild, cc, out string, extra ...string) error {
	return buildOnce(ctx, b, toolchain{cc: cc, cxx: cc + "++", engine: "-fsanitize=fuzzer"}, out, extra...)
}

// toolchain is what a build command gets as $CC, $CXX and, with a
// harness, $LIB_FUZZING_ENGINE.
type toolchain struct{ cc, cxx, engine string }

// buildOnce runs the build command in a fresh copy of the repository with
// tc and the variables in extra (extra[0] names the build in errors),
// writing out.
func buildOnce(ctx context.Context, b AFLBuild, tc toolchain, out string, extra ...string) error {
	dir, err := os.MkdirTemp(b.Work, "src-")
	if err != nil {
		return fmt.Errorf("afl build: %w", err)
	}
	defer os.RemoveAll(dir)
	dir = filepath.Join(dir, "repo")
	if err := copyTree(b.Dir, dir); err != nil {
		return fmt.Errorf("afl build: %w", err)
	}
	harness, engine := "", ""
	if b.Harness != "" {
		harness, engine = filepath.Join(dir, b.Harness), tc.engine
		if _, err := os.Stat(harness); err != nil {
			return fmt.Errorf("harness %s: %w", b.Harness, err)
		}
	}
	argv := make([]string, len(b.Build))
	for i, a := range b.Build {
		argv[i] = strings.NewReplacer("{out}", out, "{harness}", harness).Replace(a)
	}
	if !strings.ContainsRune(argv[0], '/') {
		if p, err := exec.LookPath(argv[0]); err == nil {
			argv[0] = p
		}
	}
	env := []string{"PATH=" + filepath.Dir(tc.cc) + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8",
		"CC=" + tc.cc, "CXX=" + tc.cxx, "CFLAGS=-g -O1", "CXXFLAGS=-g -O1", "LIB_FUZZING_ENGINE=" + engine,
		"OUT=" + filepath.Dir(out), "FUZZ_HARNESS=" + harness, "AFL_QUIET=1"}
	env = append(env, extra...)
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: argv, Dir: dir, Env: env, Timeout: 10 * time.Minute,
		CPUSeconds: 1200, OutputCap: 64 << 10, MemoryBytes: 8 << 30})
	if err != nil {
		return fmt.Errorf("build %s: %w", strings.Join(b.Build, " "), err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		tail, _ := sandbox.Text(append(res.Stdout, res.Stderr...), 600)
		return fmt.Errorf("build %s (%s) exited %d: %s", strings.Join(b.Build, " "), extra[0], res.ExitCode, strings.TrimSpace(stripANSI(tail)))
	}
	if _, err := os.Stat(out); err != nil {
		return fmt.Errorf("build %s (%s) wrote no {out} binary", strings.Join(b.Build, " "), extra[0])
	}
	return nil
}

// plainDriver is the main a harness gets in a build without AFL++: it runs
// LLVMFuzzerTestOneInput once on the file named by its argument (stdin
// without one), as libFuzzer's and AFL++'s drivers do given a file.
const plainDriver = `/* fleetd: runs LLVMFuzzerTestOneInput once on a file. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __cplusplus
extern "C"
#endif
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int main(int argc, char **argv) {
	FILE *f = argc > 1 ? fopen(argv[1], "rb") : stdin;
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	size_t cap = 1 << 16, n = 0, r;
	uint8_t *buf = (uint8_t *)malloc(cap);
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			cap *= 2;
			buf = (uint8_t *)realloc(buf, cap);
		}
	}
	if (!buf) {
		return 2;
	}
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}
`

// BuildPlain builds b's harness with the system's C compiler (clang, else
// cc) and a main that runs it once on a file (plainDriver, given as
// $LIB_FUZZING_ENGINE) into work/plain: the opaque binary AFL++'s
// non-instrumented mode (-n) runs when the afl-clang-fast build fails or
// afl-clang-fast is missing. Not cached (a plain build is a fallback).
// Errors: no harness, no C compiler, or the build failing.
func BuildPlain(ctx context.Context, b AFLBuild) (string, error) {
	if b.Harness == "" || len(b.Build) == 0 {
		return "", errors.New("a plain build needs a harness and a build command")
	}
	tc := toolchain{}
	for _, pair := range [][2]string{{"clang", "clang++"}, {"cc", "c++"}} {
		cc, err1 := exec.LookPath(pair[0])
		cxx, err2 := exec.LookPath(pair[1])
		if err1 == nil && err2 == nil {
			tc.cc, tc.cxx = cc, cxx
			break
		}
	}
	if tc.cc == "" {
		return "", errors.New("no C compiler (clang or cc) for a plain build")
	}
	tmp, err := os.MkdirTemp(b.Work, "plainbuild-")
	if err != nil {
		return "", fmt.Errorf("plain build: %w", err)
	}
	tc.engine = filepath.Join(tmp, "fleetd_driver.c")
	if err := os.WriteFile(tc.engine, []byte(plainDriver), 0o600); err != nil {
		return "", fmt.Errorf("plain build: %w", err)
	}
	out := filepath.Join(tmp, "plain")
	if err := buildOnce(ctx, b, tc, out, "plain "+filepath.Base(tc.cc)); err != nil {
		return "", err
	}
	return out, nil
}
