//go:build fuzzeval

package fuzzing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// realModules are released modules that ship native Go fuzz targets
// (FuzzXxx(f *testing.F)), pinned. TestRealTargets builds up to
// FLEETD_REAL_MAX (default 2) of each module's targets, distinct packages
// first, as libFuzzer binaries and fuzzes each for FLEETD_REAL_SECONDS
// (default 10); FLEETD_REAL_LIST (module@version,...) replaces the list,
// and FLEETD_REAL_GOLINE (e.g. 1.12) sets each copy's go directive.
// Run it with the command in BENCHMARKS.md:
//
//	FLEETD_REAL_OUT=/tmp/real.md go test -tags fuzzeval -run TestRealTargets -timeout 3h -v ./fuzzing/
//
// A target counts as fuzzed past its seeds when it built, the engine ran
// at least minMutated inputs beyond the ones it started from (the seeds:
// it got past replaying them and fuzzed), and it reported no false crash
// or hang. A crash counts only when go test -fuzz's replay of the same
// input crashes with the same state, a hang only when go test -fuzz on the
// same target hangs too (then either is a real bug, not the harness's, and
// the target counts as fuzzed: the engine did its job). Whether the
// coverage grew past what the starting inputs covered is shown beside it:
// a target whose seeds already reach all its code (humanize's FuzzComma:
// one int64 through a 20-line function) cannot grow, and says nothing
// about the build.
var realModules = []string{
	"github.com/BurntSushi/toml@v1.6.0",
	"github.com/pelletier/go-toml/v2@v2.4.3",
	"mvdan.cc/sh/v3@v3.14.1",
	"github.com/buger/jsonparser@v1.6.1",
	"github.com/yuin/goldmark@v1.8.7",
	"github.com/gomarkdown/markdown@v0.0.0-20261107153045-a51d70be185e",
	"github.com/goccy/go-json@v0.12.0",
	"github.com/expr-lang/expr@v1.17.8",
	"github.com/hashicorp/hcl/v2@v2.25.0",
	"github.com/dustin/go-humanize@v1.1.0",
	"github.com/Masterminds/semver/v3@v3.5.0",
	"golang.org/x/net@v0.60.0",
	"github.com/klauspost/compress@v1.20.1",
	"github.com/holiman/uint256@v1.3.2",
	"google.golang.org/protobuf@v1.36.12",
	"golang.org/x/mod@v0.41.0",
	"github.com/google/uuid@v1.6.0",
	"github.com/go-json-experiment/json@v0.0.0-20260213210345-44df1a37e875",
	"github.com/ethereum/go-ethereum@v1.17.10",
	"github.com/pion/dtls/v3@v3.1.5",
	"github.com/rogpeppe/go-internal@v1.14.1",
	// Added to check the class, not the instances: parsers and codecs not
	// tried before.
	"github.com/distribution/reference@v0.6.0",
	"github.com/pion/stun/v3@v3.1.7",
	"github.com/go-openapi/jsonpointer@v1.0.0",
	"github.com/tinylib/msgp@v1.6.3",
	"github.com/go-asn1-ber/asn1-ber@v1.5.8-0.20250403174932-29230038a667",
	"github.com/gorilla/securecookie@v1.1.2",
	"github.com/clipperhouse/uax29/v2@v2.7.0",
	"github.com/lib/pq@v1.12.3",
	"github.com/minio/minlz@v1.1.0",
	// Added with the bounded seed pass (issue 31), not tried before: a
	// JSON decoder, a logger's encoder, a seekable zstd reader.
	"sigs.k8s.io/json@v0.0.0-20250730193827-2d320260d730",
	"go.uber.org/zap@v1.27.1",
	"github.com/SaveTheRbtz/zstd-seekable-format-go/pkg@v0.8.0",
}

// minMutated is how many inputs past the starting ones a session must run
// to count as fuzzing past its seeds.
const minMutated = 1000

var fuzzDecl = regexp.MustCompile(`(?m)^func (Fuzz[A-Za-z0-9_]*)\(\w+ \*testing\.F\)`)

type realTarget struct{ pkg, fn string }

// findFuzzTargets lists a module copy's native fuzz targets (not in
// testdata, vendor or a nested module).
func findFuzzTargets(root string) []realTarget {
	var out []realTarget
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || d.Name() == "vendor" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		// A file the build constraints exclude is no target go test runs
		// either (kevinburke/ssh_config's fuzz_test.go says
		// //go:build 1.18, a tag no toolchain sets).
		if ok, err := build.Default.MatchFile(filepath.Dir(p), d.Name()); err != nil || !ok {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		for _, m := range fuzzDecl.FindAllSubmatch(b, -1) {
			out = append(out, realTarget{"./" + filepath.ToSlash(rel), string(m[1])})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].pkg != out[j].pkg {
			return out[i].pkg < out[j].pkg
		}
		return out[i].fn < out[j].fn
	})
	return out
}

// pickTargets takes n targets, one per package first.
func pickTargets(all []realTarget, n int) []realTarget {
	var out []realTarget
	seen := map[string]bool{}
	for _, t := range all {
		if len(out) < n && !seen[t.pkg] {
			seen[t.pkg] = true
			out = append(out, t)
		}
	}
	for _, t := range all {
		if len(out) < n && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

type realRow struct {
	module, pkg, fn         string
	built, grew, falseCrash bool
	realCrash               string
	realHang                string // go test -fuzz agrees the target hangs: where
	cause                   string
	execs, from, cov0, cov  int
	build                   time.Duration
}

// mutated reports whether the session ran minMutated inputs past the ones
// it started from.
func (r realRow) mutated() bool { return r.execs-r.from >= minMutated }

// goHangs runs go test -fuzz on g for d, as a user would (the go
// command in the package directory), and reports whether go's own engine
// hangs too ("fuzzing process hung or terminated unexpectedly"), with the
// input it names (a seed corpus entry) when it names one.
func goHangs(ctx context.Context, g GoTarget, d time.Duration) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, d+3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.Go, "test", "-run=^$", "-fuzz=^"+g.Func+"$", "-fuzztime="+d.String(), "-parallel=1", ".")
	cmd.Dir, cmd.Env = g.pkgDir(), g.Env
	out, _ := cmd.CombinedOutput()
	if !bytes.Contains(out, []byte("hung or terminated unexpectedly")) {
		return false, ""
	}
	if m := regexp.MustCompile(`seed corpus entry: (\S+)`).FindSubmatch(out); m != nil {
		return true, "seed " + string(m[1])
	}
	return true, "an input go does not name"
}

func TestRealTargets(t *testing.T) {
	clang := MustLibFuzzer(t)
	secs := envInt("FLEETD_REAL_SECONDS", 10)
	per := envInt("FLEETD_REAL_MAX", 2)
	goCmd, err := GoCommand()
	if err != nil {
		t.Fatal(err)
	}
	goenv := func(k string) string {
		out, err := exec.Command(goCmd, "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	gocache, modcache := goenv("GOCACHE"), goenv("GOMODCACHE")
	cache := filepath.Join(os.TempDir(), "fleetd-realtargets-bin")
	var rows []realRow
	only := os.Getenv("FLEETD_REAL_MODULES")
	list := realModules
	if l := os.Getenv("FLEETD_REAL_LIST"); l != "" {
		list = strings.Split(l, ",") // other modules (module@version), e.g. those at an old go line
	}
	for _, mod := range list {
		if only != "" && !slices.Contains(strings.Split(only, ","), strings.Split(mod, "@")[0]) {
			continue
		}
		out, err := exec.Command(goCmd, "mod", "download", "-json", mod).Output()
		var info struct{ Dir, Error string }
		if err != nil || json.Unmarshal(out, &info) != nil || info.Dir == "" {
			t.Errorf("%s: go mod download: %v %s", mod, err, info.Error)
			continue
		}
		work := t.TempDir()
		src := filepath.Join(work, "repo")
		if err := CheckoutRepo(context.Background(), info.Dir, src); err != nil {
			t.Fatal(err)
		}
		if v := os.Getenv("FLEETD_REAL_GOLINE"); v != "" {
			// The module as it would be at an older go line (1.12: the
			// line older libraries keep), to measure the build there.
			gm := filepath.Join(src, "go.mod")
			b, err := os.ReadFile(gm)
			if err != nil {
				t.Fatal(err)
			}
			b = regexp.MustCompile(`(?m)^go \S+\s*$`).ReplaceAll(b, []byte("go "+v))
			if err := os.WriteFile(gm, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		env := GoEnv(goCmd, work, filepath.Join(work, "go"), 1<<30)
		for i, kv := range env {
			switch {
			case strings.HasPrefix(kv, "GOCACHE="):
				env[i] = "GOCACHE=" + gocache
			case strings.HasPrefix(kv, "GOMODCACHE="):
				env[i] = "GOMODCACHE=" + modcache
			}
		}
		for _, tg := range pickTargets(findFuzzTargets(src), per) {
			row := realRow{module: mod, pkg: tg.pkg, fn: tg.fn}
			g := GoTarget{Dir: src, Package: tg.pkg, Func: tg.fn, Go: goCmd, Env: env, BuildTime: 15 * time.Minute}
			lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: cache, Work: filepath.Join(work, "lf-"+tg.fn)}
			os.MkdirAll(lt.Work, 0o700)
			start := time.Now()
			_, err := lt.build(context.Background())
			row.build = time.Since(start)
			if err != nil {
				row.cause = FirstBuildError(err)
				if row.cause == "" {
					row.cause = firstLine(err.Error())
				}
				rows = append(rows, row)
				t.Logf("%s %s %s: not built in %s: %v", mod, tg.pkg, tg.fn, row.build.Round(time.Second), err)
				continue
			}
			row.built = true
			rep, err := RunLibFuzzer(context.Background(), lt, Session{Duration: time.Duration(secs) * time.Second, StopAtFirst: true}, LibFuzzerOptions{Minimize: -1})
			if err != nil {
				row.cause = "session: " + firstLine(err.Error())
				rows = append(rows, row)
				t.Logf("%s %s %s: session: %v", mod, tg.pkg, tg.fn, err)
				continue
			}
			row.execs, row.from, row.cov0, row.cov = rep.Execs, rep.StartedFrom, rep.InitialCoverage, rep.Coverage
			row.grew = rep.Coverage > rep.InitialCoverage
			if len(rep.Crashers) > 0 && rep.Crashers[0].Outcome == TimedOut {
				// A hang: an input ran past the per-input limit (10 s, go
				// test -fuzz's too). A real one when go's own engine hangs
				// on the same target; else it is libFuzzer's alone.
				if ok, where := goHangs(context.Background(), g, time.Duration(max(secs, 30))*time.Second); ok {
					row.realHang = where
				} else {
					row.cause = "an input ran past the 10 s limit and go test -fuzz does not hang: " + rep.Crashers[0].State
				}
			} else if len(rep.Crashers) > 0 {
				c := rep.Crashers[0]
				gr, err := ReplayGo(context.Background(), g, c.Input, 2*time.Minute)
				if err == nil && gr.Outcome == c.Outcome && gr.State == c.State {
					row.realCrash = c.State
				} else {
					row.falseCrash = true
					row.cause = fmt.Sprintf("crash %q that go test's replay does not give", c.State)
				}
			}
			rows = append(rows, row)
			t.Logf("%s %s %s: built in %s, %d execs, coverage %d -> %d, crash %q%s (note: %s)", mod, tg.pkg, tg.fn, row.build.Round(time.Second), row.execs, row.cov0, row.cov, row.realCrash, map[bool]string{true: " FALSE CRASH", false: ""}[row.falseCrash], rep.Note)
		}
	}
	var b strings.Builder
	built, fuzzed, grew, mods := 0, 0, 0, map[string]bool{}
	fmt.Fprintf(&b, "| module | package | target | built | build s | execs (started from) | coverage seeds -> end | result |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		mods[r.module] = true
		ok := r.built && !r.falseCrash && r.cause == "" && (r.mutated() || r.realCrash != "" || r.realHang != "")
		res := "fuzzed past the seeds"
		switch {
		case !r.built:
			res = "not built: " + r.cause
		case r.falseCrash:
			res = "false crash: " + r.cause
		case r.cause != "":
			res = "hang, libFuzzer's alone: " + r.cause
		case r.realCrash != "":
			res = "real crash (go test agrees): " + r.realCrash
		case r.realHang != "":
			res = "real hang (go test -fuzz hangs too, on " + r.realHang + ")"
		case !r.mutated():
			res = fmt.Sprintf("fewer than %d inputs past the seeds", minMutated)
		case !r.grew:
			res = "fuzzed past the seeds; no new coverage (the seeds reach it all)"
		}
		if r.built {
			built++
		}
		if ok {
			fuzzed++
		}
		if r.grew {
			grew++
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %v | %.0f | %d (%d) | %d -> %d | %s |\n", r.module, r.pkg, r.fn, r.built, r.build.Seconds(), r.execs, r.from, r.cov0, r.cov, strings.ReplaceAll(res, "|", "\\|"))
	}
	fmt.Fprintf(&b, "\n%d targets in %d modules: %d built (%.0f %%), %d fuzzed past their seeds (%d+ inputs past the starting ones, or a real bug go test agrees with) with no false crash or hang (%.0f %%); %d of them grew coverage past the seeds (%.0f %%); %d s per session.\n",
		len(rows), len(mods), built, pct(built, len(rows)), fuzzed, minMutated, pct(fuzzed, len(rows)), grew, pct(grew, len(rows)), secs)
	t.Log("\n" + b.String())
	if out := os.Getenv("FLEETD_REAL_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
