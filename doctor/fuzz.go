package doctor

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
)

// LibFuzzer says whether qa_fuzz can build Go fuzz targets with libFuzzer
// (clang and its libFuzzer runtime); without them it runs go test -fuzz,
// so a miss is a warning.
//
// With target.repo's fuzz target it also says whether that target's last
// libFuzzer build (qa_fuzz's, recorded under fuzzDir) failed: the engine
// is degraded, go test -fuzz runs in its place, and the check names the
// compiler's first error.
func LibFuzzer(ctx context.Context, repo *fleet.Repo, fuzzDir string) Check {
	ok, why := fuzzing.LibFuzzerAvailable(ctx)
	if ok {
		if repo != nil && repo.FuzzTarget != "" {
			key := fuzzing.TargetKey("go", repo.URL, repo.FuzzPackage, repo.FuzzTarget)
			f, err := fuzzing.LastBuildFailure(filepath.Join(fuzzDir, key, "libfuzzer", "bin"))
			switch {
			case err != nil:
				return Check{Name: "libfuzzer", Warn: true, Detail: err.Error()}
			case f != nil:
				return Check{Name: "libfuzzer", Warn: true,
					Detail: fmt.Sprintf("degraded on %s: its libFuzzer build failed (%s): %s; qa_fuzz runs go test -fuzz instead", repo.FuzzTarget, f.At.Local().Format(time.RFC3339), f.Cause),
					Fix:    "fix the error in " + repo.FuzzPackage + " (the next qa_fuzz session rebuilds)"}
			}
		}
		return Check{Name: "libfuzzer", OK: true, Detail: why + ": qa_fuzz runs libFuzzer on Go fuzz targets"}
	}
	return Check{Name: "libfuzzer", Warn: true, Detail: why + "; qa_fuzz falls back to go test -fuzz on Go fuzz targets (no comparison feedback, no dictionary)",
		Fix: "install clang and compiler-rt's libFuzzer runtime (Debian 12: apt-get install clang libclang-rt-14-dev)"}
}

// AFL says which AFL++ modes qa_fuzz has: instrumented builds of C and
// C++ sources (afl-clang-fast, CmpLog) and the blind -n mode for opaque
// binaries. A miss is a warning: the other engines still run.
func AFL(aflFuzz, clangFast string) Check {
	switch {
	case aflFuzz == "":
		return Check{Name: "afl++", Warn: true, Detail: "afl-fuzz is not on PATH: qa_fuzz's aflpp engine is off (the built-in engine and libFuzzer still run)",
			Fix: "apt-get install afl++"}
	case clangFast == "":
		return Check{Name: "afl++", Warn: true, Detail: aflFuzz + " runs opaque binaries blind (-n) only: afl-clang-fast is missing, so C and C++ sources in target.repo are not built instrumented",
			Fix: "install AFL++'s LLVM mode (Debian: apt-get install afl++ clang)"}
	}
	return Check{Name: "afl++", OK: true, Detail: aflFuzz + " with " + clangFast + ": C and C++ sources in target.repo are built instrumented (CmpLog, persistent mode with a harness); opaque binaries run blind (-n)"}
}
